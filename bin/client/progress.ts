/**
 * A line of progress while a command waits (a strict save tries a server):
 * `⠹ trying docs… 4 s` on stderr, redrawn in place and cleared when done.
 * Only on a terminal: when stderr is a pipe or a file (a script, CI), or
 * the terminal is `dumb`, nothing at all is written — the result is all
 * they get. The line shows after a short delay (a quick save shows
 * nothing); other output written meanwhile (the notice of a daemon being
 * started) clears it first. Its timers never keep the process alive, and it
 * never hides the cursor, so Ctrl-C (which clears the line, then ends the
 * command as before) leaves the terminal as it was.
 */

import { safe } from './output.ts';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const TICK_MS = 120;
/** A save quicker than this shows no progress at all. */
const DELAY_MS = 300;
const CLEAR = '\r\x1b[2K';

export interface Progress {
  /** Says what is happening now. */
  update(text: string): void;
  /** Clears the line; nothing more is drawn. */
  stop(): void;
}

const NONE: Progress = { update() {}, stop() {} };

type Stream = NodeJS.WriteStream;
type Write = Stream['write'];

/** Whether progress is drawn on `stream`: a terminal that understands moving to the start of a line. */
export function drawsOn(stream: Stream): boolean {
  return !!stream.isTTY && process.env.TERM !== 'dumb';
}

/** Starts a progress line saying `text` (with `…` and the elapsed seconds); the no-op when `stream` is not a terminal. */
export function startProgress(text: string, o: { stream?: Stream; delayMs?: number } = {}): Progress {
  const stream = o.stream ?? process.stderr;
  if (!drawsOn(stream)) return NONE;
  const started = Date.now();
  let frame = 0;
  let drawn = false;
  let stopped = false;
  let ticker: NodeJS.Timeout | undefined;

  const clear = (): void => {
    if (!drawn) return;
    drawn = false;
    original.get(stream)!.call(stream, CLEAR);
  };
  const draw = (): void => {
    const secs = Math.floor((Date.now() - started) / 1_000);
    // The text may name a server as typed or as a file had it: shown, never obeyed (a line break neither: it could not be cleared).
    const line = `${FRAMES[frame++ % FRAMES.length]} ${safe(text).replace(/\s+/g, ' ')}…${secs ? ` ${secs} s` : ''}`;
    // Never wider than the terminal: a wrapped line could not be cleared by going back to its start.
    const width = Math.max(10, (stream.columns || 80) - 1);
    const chars = [...line];
    original.get(stream)!.call(stream, CLEAR + (chars.length > width ? `${chars.slice(0, width - 1).join('')}…` : line));
    drawn = true;
  };
  // Another write to the terminal (stderr, or stdout on the same screen) clears the line first; the next tick redraws it.
  const streams = [stream, ...(process.stdout !== stream && process.stdout.isTTY ? [process.stdout] : [])];
  for (const s of streams) intercept(s, clear);
  // Ctrl-C (or a kill) clears the line, then the signal is sent again with this listener gone: the command ends by it, as
  // it did before (a listener that defers to others, as signal-exit's does, then takes it as unhandled). Not for a command
  // with Ctrl-C handling of its own (it would see the signal twice): those do not show progress.
  const onSignal = (sig: NodeJS.Signals): void => {
    stop();
    process.kill(process.pid, sig);
  };
  const signals = ['SIGINT', 'SIGTERM'] as const;
  for (const s of signals) process.once(s, onSignal);
  const first = setTimeout(() => {
    draw();
    ticker = setInterval(draw, TICK_MS);
    ticker.unref();
  }, o.delayMs ?? DELAY_MS);
  first.unref();

  function stop(): void {
    if (stopped) return;
    stopped = true;
    clearTimeout(first);
    clearInterval(ticker);
    clear();
    for (const s of streams) release(s, clear);
    for (const s of signals) process.off(s, onSignal);
  }
  return {
    update(next: string) {
      text = next;
      if (drawn) draw();
    },
    stop,
  };
}

/** Runs `work` with a progress line saying `text`, cleared when it settles (either way). */
export async function withProgress<T>(
  text: string,
  work: (p: Progress) => Promise<T>,
  o: { stream?: Stream; delayMs?: number } = {},
): Promise<T> {
  const p = startProgress(text, o);
  try {
    return await work(p);
  } finally {
    p.stop();
  }
}

// The streams' own write, and the lines drawn on each that another write must clear first (two progress lines may overlap).
const original = new Map<Stream, Write>();
const clearers = new Map<Stream, Set<() => void>>();

function intercept(s: Stream, clear: () => void): void {
  let set = clearers.get(s);
  if (!set) {
    const write = s.write;
    original.set(s, write);
    clearers.set(s, (set = new Set()));
    const all = set;
    s.write = function (this: Stream, ...args: Parameters<Write>) {
      for (const c of all) c();
      return write.apply(this, args as never);
    } as Write;
  }
  set.add(clear);
}

function release(s: Stream, clear: () => void): void {
  const set = clearers.get(s);
  if (!set) return;
  set.delete(clear);
  if (set.size) return;
  s.write = original.get(s)!;
  original.delete(s);
  clearers.delete(s);
}
