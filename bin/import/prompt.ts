/**
 * Asking the person at the terminal for a value (a VS Code `${input:id}`):
 * the question on stderr, the answer read from the terminal, not echoed
 * when it is a password. Only used when stdin is a terminal.
 */

/** Reads one line from the terminal; `hidden`: nothing is echoed. Ctrl-C or Ctrl-D rejects. */
export function ask(question: string, hidden: boolean): Promise<string> {
  const stdin = process.stdin;
  return new Promise((resolve, reject) => {
    let buf = '';
    const wasRaw = stdin.isRaw;
    // Raw (no echo) before the question shows: an answer typed or pasted the moment it appears is never echoed.
    stdin.setRawMode(true);
    stdin.setEncoding('utf8');
    process.stderr.write(question);
    const done = (err: Error | null): void => {
      stdin.off('data', onData);
      stdin.setRawMode(wasRaw);
      stdin.pause();
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(buf);
    };
    const onData = (chunk: string): void => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return done(null);
        if (ch === '\u0003' || ch === '\u0004') return done(new Error('cancelled'));
        if (ch === '\u007f' || ch === '\b') {
          if (buf.length) {
            buf = buf.slice(0, -1);
            if (!hidden) process.stderr.write('\b \b');
          }
          continue;
        }
        buf += ch;
        if (!hidden) process.stderr.write(ch);
      }
    };
    stdin.on('data', onData);
    stdin.resume();
  });
}
