// The progress line (bin/client/progress.ts) shows what it is given — a
// server's name as typed, or as another host's file had it — and obeys none
// of it: control characters are spelt out, a line break too (the line could
// not be cleared from its start otherwise). Only the line's own clearing
// sequence reaches the terminal.
import t from 'tap';
import { startProgress } from '../../bin/client/progress.ts';
import { until } from '../helpers.ts';

t.test('a name with terminal escapes and line breaks is shown, not obeyed', async (t) => {
  let written = '';
  const stream = {
    isTTY: true,
    columns: 200,
    write(s: string) {
      written += s;
      return true;
    },
  } as unknown as NodeJS.WriteStream;
  const p = startProgress('trying evil\x1b]0;owned\x07\x1b[2J\nname', { stream, delayMs: 0 });
  await until(() => written.includes('trying'), 10_000, 'the line to be drawn');
  p.stop();
  const withoutClears = written.split('\r\x1b[2K').join('');
  t.notMatch(withoutClears, /[\x00-\x1f\x7f]/, 'no control character but the clearing sequence');
  t.match(withoutClears, /trying evil\\x1b\]0;owned\\x07\\x1b\[2J\\x0aname/, 'each one spelt out');
});
