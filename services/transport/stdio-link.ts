/**
 * A stdio link: one MCP server process behind Albedo's launcher
 * (launcher.c, built at install, or launcher.py), speaking newline-delimited JSON. The link knows bytes and
 * frames, nothing of JSON-RPC: `send`, `onMessage`, `close`, `closed`.
 *
 * The child environment is exactly what the resolved config says (HOME, PATH,
 * TMPDIR and the named values); no shell runs. The server's stderr is not
 * shown, but its last 4 KiB are kept and quoted when it fails.
 *
 * Writes respect the pipe's backpressure: frames wait in the link's outbox
 * while the server is not reading (bounded by MAX_OUTBOX_BYTES and
 * MAX_OUTBOX_FRAMES; past them `send` throws ALBEDO_OVERLOADED), and a
 * request still in the outbox can be withdrawn, unsent.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { LineDecoder, encodeMessage, FrameTooLargeError, MAX_MESSAGE_BYTES } from '../../protocol/framing.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import type { ResolvedStdioServer } from '../../protocol/config.ts';
import type { RequestId } from '../../protocol/jsonrpc.ts';
import { redactThenCut, secretValues } from '../../protocol/redact.ts';

const LAUNCHER_PY = fileURLToPath(new URL('./launcher.py', import.meta.url));
/** The C launcher built at install (`npm run prepare`): same contract, ~0.3 MB instead of Python's ~4.5 MB per connection. */
const LAUNCHER_BIN = fileURLToPath(new URL('../../build/albedo-launcher', import.meta.url));
/** $ALBEDO_LAUNCHER=python forces the Python launcher; otherwise the C one when it was built. */
const USE_C_LAUNCHER = process.env.ALBEDO_LAUNCHER !== 'python' && existsSync(LAUNCHER_BIN);
const STDERR_TAIL = 4096;
/** The launcher's interpreter: $ALBEDO_PYTHON, else Debian's python3 (no version-manager shim in the way), else python3 on PATH. */
const PYTHON = process.env.ALBEDO_PYTHON || (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');
/** After the server exits, how long to wait for its last stdout/stderr bytes. */
const DRAIN_MS = 250;
/** The most bytes of frames the outbox holds for a server that is not reading (two maximum-size messages). */
export const MAX_OUTBOX_BYTES = 32 * 1024 * 1024;
/** The most frames the outbox holds, whatever their size. */
export const MAX_OUTBOX_FRAMES = 10_000;
/**
 * One write takes queued frames up to this many bytes (always at least one frame): a pipe that stops
 * accepting holds at most one such batch beyond its high-water mark, outside the outbox's count.
 */
const MAX_BATCH_BYTES = 1024 * 1024;

/**
 * A frame not yet handed to the pipe: a message's JSON text, kept without its newline (added as it is
 * written), and its size in bytes with the newline; `request` is the id of a request (never of a response we send).
 */
interface Queued {
  text: string;
  bytes: number;
  request: RequestId | undefined;
}

export interface LinkEvents {
  onMessage(line: string): void;
  /** Once, when the link is down for good; `error` is null after a requested close. */
  onClose(error: AlbedoError | null): void;
}

type LauncherEvent =
  | { spawned: number }
  | { spawnError: number | string; message: string; where: string }
  | { exit: number | null; signal: string | null }
  | { reaped: true };

export class StdioLink {
  readonly server: ResolvedStdioServer;
  #events: LinkEvents;
  #child: ChildProcess | undefined;
  #stdin: Writable | undefined;
  #lifeline: Socket | undefined;
  #decoder: LineDecoder;
  #tail = Buffer.alloc(0);
  /** The tail lost bytes at its start (so a broken first character is a cut, not the server's fault). */
  #tailCut = false;
  /** Frames not yet handed to the pipe, in order (keyed by a sequence number, so a withdrawn one leaves no hole). */
  #outbox = new Map<number, Queued>();
  #outboxBytes = 0;
  #nextSeq = 0;
  /** The queued requests by id, for `withdraw`. */
  #queuedRequests = new Map<RequestId, number>();
  #flushScheduled = false;
  /** The last write returned false: nothing more goes to the pipe until 'drain'. */
  #blocked = false;
  #state: 'new' | 'starting' | 'open' | 'closing' | 'closed' = 'new';
  #exit: { exit: number | null; signal: string | null } | undefined;
  #stdoutEnded = false;
  #stderrEnded = false;
  #reaped: Promise<void>;
  #markReaped!: () => void;
  #closeError: AlbedoError | null = null;
  #closeReported = false;
  pid: number | undefined;

  /** The values the server was given that may be secrets: cut out of its stderr tail wherever it is quoted. */
  #secrets: string[];

  constructor(server: ResolvedStdioServer, events: LinkEvents, maxMessageBytes = MAX_MESSAGE_BYTES) {
    this.server = server;
    this.#secrets = secretValues(server);
    this.#events = events;
    this.#decoder = new LineDecoder(maxMessageBytes);
    this.#reaped = new Promise((r) => (this.#markReaped = r));
  }

  get closed(): boolean {
    return this.#state === 'closing' || this.#state === 'closed';
  }

  /**
   * The last 4 KiB the server wrote to stderr, as text: a character the cut
   * broke at the start is dropped, invalid bytes anywhere else become U+FFFD,
   * and every value the server was given that may be a secret (its
   * environment: protocol/redact.ts) is cut out — a server that prints its
   * key on the way out must not put it in an error, an event or a response.
   * A secret the window's start broke leaves nothing: its end is dropped.
   */
  get stderrTail(): string {
    let start = 0;
    // At most three continuation bytes (10xxxxxx) can belong to a character that began before the cut.
    if (this.#tailCut) while (start < 3 && start < this.#tail.length && (this.#tail[start]! & 0xc0) === 0x80) start++;
    return redactThenCut(this.#tail.toString('utf8', start), this.#secrets, { keep: 'tail', max: Infinity, cut: this.#tailCut });
  }

  #onStderr(chunk: Buffer): void {
    if (this.#tail.length + chunk.length <= STDERR_TAIL) {
      this.#tail = Buffer.concat([this.#tail, chunk]);
      return;
    }
    // A fresh 4 KiB buffer: a view into the chunk would keep all of it alive.
    const next = Buffer.allocUnsafe(STDERR_TAIL);
    const fromChunk = Math.min(chunk.length, STDERR_TAIL);
    const fromTail = STDERR_TAIL - fromChunk;
    this.#tail.copy(next, 0, this.#tail.length - fromTail);
    chunk.copy(next, fromTail, chunk.length - fromChunk);
    this.#tail = next;
    this.#tailCut = true;
  }

  /** Spawns the server. Resolves once it runs; rejects with ALBEDO_SPAWN_FAILED when it cannot start. */
  start(): Promise<void> {
    if (this.#state !== 'new') throw new AlbedoError('ALBEDO_INTERNAL', 'a link starts once');
    this.#state = 'starting';
    const { command, args, cwd, env } = this.server;
    const [exe, argv0] = USE_C_LAUNCHER ? [LAUNCHER_BIN, []] : [PYTHON, [LAUNCHER_PY]];
    const child = spawn(exe, [...argv0, cwd, '--', command, ...args], {
      // The launcher's own environment stays minimal; the server's travels on the lifeline.
      env: { PATH: env.PATH ?? '', PYTHONDONTWRITEBYTECODE: '1' },
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      // A session of its own (setsid): signals for the daemon's group or from its terminal (SIGHUP, SIGINT,
      // SIGQUIT, kill -9 -PGID) cannot end the launcher before it has cleaned up; it ends by the lifeline.
      // The child stays referenced (no unref), as before: the link closes it, and the daemon's death closes the lifeline.
      detached: true,
      windowsHide: true,
    });
    this.#child = child;
    this.#stdin = child.stdin!;
    this.#stdin.on('error', () => {
      /* EPIPE after the server died: reported through exit */
    });
    const lifeline = child.stdio[3] as Socket;
    this.#lifeline = lifeline;
    lifeline.write(JSON.stringify({ env }) + '\n');
    const stdout = child.stdout as Readable;
    const stderr = child.stderr as Readable;

    stdout.on('data', (chunk: Buffer) => this.#onStdout(chunk));
    stdout.on('end', () => {
      this.#stdoutEnded = true;
      this.#maybeClosed();
    });
    stdout.on('error', () => {
      this.#stdoutEnded = true;
    });
    stderr.on('data', (chunk: Buffer) => this.#onStderr(chunk));
    stderr.on('end', () => {
      this.#stderrEnded = true;
      this.#maybeClosed();
    });
    stderr.on('error', () => {
      this.#stderrEnded = true;
    });

    return new Promise((resolve, reject) => {
      let buffered = '';
      lifeline.setEncoding('utf8');
      lifeline.on('data', (text: string) => {
        buffered += text;
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          let ev: LauncherEvent;
          try {
            ev = JSON.parse(line) as LauncherEvent;
          } catch {
            continue;
          }
          if ('spawned' in ev) {
            this.pid = ev.spawned;
            if (this.#state === 'starting') this.#state = 'open';
            resolve();
          } else if ('spawnError' in ev) {
            const what =
              ev.where === 'chdir' ? `cannot enter working directory ${JSON.stringify(cwd)}` : `cannot start ${JSON.stringify(command)}`;
            const detail = typeof ev.spawnError === 'number' ? '' : ` (${ev.spawnError})`;
            const err = new AlbedoError('ALBEDO_SPAWN_FAILED', `${what}: ${ev.message}${detail}`, {
              outcome: 'not_run',
              data: { errno: ev.spawnError, where: ev.where },
            });
            this.#closeError = err;
            reject(err);
          } else if ('exit' in ev) {
            this.#exit = ev;
            setTimeout(() => {
              this.#stdoutEnded = true;
              this.#stderrEnded = true;
              this.#maybeClosed();
            }, DRAIN_MS).unref();
            this.#maybeClosed();
          } else if ('reaped' in ev) {
            this.#markReaped();
          }
        }
      });
      lifeline.on('error', () => {
        /* the launcher is gone; 'exit' below settles everything */
      });
      child.on('error', (err) => {
        const e = new AlbedoError('ALBEDO_SPAWN_FAILED', `cannot run the stdio launcher (${exe}): ${err.message}`, { outcome: 'not_run' });
        this.#closeError ??= e;
        reject(e);
        this.#markReaped();
        this.#finish();
      });
      child.on('exit', (code, signal) => {
        this.#markReaped();
        if (this.#state === 'starting') {
          const e =
            this.#closeError ??
            new AlbedoError(
              'ALBEDO_SPAWN_FAILED',
              `the stdio launcher exited (${signal ?? code}) before starting ${JSON.stringify(command)}`,
              { outcome: 'not_run' },
            );
          reject(e);
        }
        this.#exit ??= { exit: null, signal: 'launcher-exited' };
        this.#stdoutEnded = true;
        this.#stderrEnded = true;
        this.#maybeClosed();
      });
    });
  }

  #onStdout(chunk: Buffer): void {
    if (this.#state === 'closed') return;
    let lines: string[];
    try {
      lines = this.#decoder.push(chunk);
    } catch (err) {
      if (err instanceof FrameTooLargeError) {
        const text = `the server sent a message over the ${err.limit / 1024 / 1024} MiB limit; the connection was closed`;
        this.#fail(new AlbedoError('ALBEDO_FRAME_TOO_LARGE', text, { outcome: 'unknown', data: { limit: err.limit } }));
        return;
      }
      throw err;
    }
    for (const line of lines) {
      if ((this.#state as string) === 'closed') return; // a handler may have closed it
      this.#events.onMessage(line);
    }
  }

  /**
   * Queues one message for the server's stdin. Throws ALBEDO_CONNECTION_CLOSED
   * when the link is down, and ALBEDO_OVERLOADED (`not_run`) when the outbox
   * is full because the server stopped reading.
   */
  send(message: unknown): void {
    if (this.#state !== 'open')
      throw new AlbedoError('ALBEDO_CONNECTION_CLOSED', 'the server connection is closed', { outcome: 'not_run' });
    const text = encodeMessage(message, this.#decoder.limit);
    const bytes = Buffer.byteLength(text) + 1;
    if (this.#outbox.size >= MAX_OUTBOX_FRAMES || this.#outboxBytes + bytes > MAX_OUTBOX_BYTES) {
      const waiting = `${this.#outbox.size} messages (${this.#outboxBytes} bytes)`;
      throw new AlbedoError('ALBEDO_OVERLOADED', `the server is not reading its input: ${waiting} wait for it already`, {
        outcome: 'not_run',
        data: { limitBytes: MAX_OUTBOX_BYTES, limitFrames: MAX_OUTBOX_FRAMES },
      });
    }
    const m = message as { id?: unknown; method?: unknown };
    const request = typeof m.method === 'string' && (typeof m.id === 'number' || typeof m.id === 'string') ? m.id : undefined;
    const seq = this.#nextSeq++;
    this.#outbox.set(seq, { text, bytes, request });
    this.#outboxBytes += bytes;
    if (request !== undefined) this.#queuedRequests.set(request, seq);
    this.#schedule();
  }

  /**
   * Takes back a request that is still in the outbox: true when it was never
   * handed to the pipe (and now never will be), false when it was, or is unknown.
   */
  withdraw(id: RequestId): boolean {
    const seq = this.#queuedRequests.get(id);
    if (seq === undefined) return false;
    this.#queuedRequests.delete(id);
    const q = this.#outbox.get(seq)!;
    this.#outbox.delete(seq);
    this.#outboxBytes -= q.bytes;
    return true;
  }

  #schedule(): void {
    if (this.#flushScheduled || this.#blocked) return;
    this.#flushScheduled = true;
    setImmediate(this.#flush);
  }

  // Frames queued in one turn of the event loop go out in one write (one syscall instead of one each):
  // under load the worker spent a sixth of its time in per-frame pipe writes.
  #flush = (): void => {
    this.#flushScheduled = false;
    if (this.#state !== 'open' || this.#blocked || !this.#outbox.size) return;
    let bytes = 0;
    for (const q of this.#outbox.values()) {
      if (bytes && bytes + q.bytes > MAX_BATCH_BYTES) break;
      bytes += q.bytes;
    }
    // The batch is encoded once, straight into one buffer of its exact size: no joined or newline-ended
    // copy of each text first, and the pipe is handed bytes, not a string to convert.
    const batch = Buffer.allocUnsafe(bytes);
    let at = 0;
    for (const [seq, q] of this.#outbox) {
      if (at === bytes) break;
      at += batch.write(q.text, at);
      batch[at++] = 0x0a;
      this.#outbox.delete(seq);
      if (q.request !== undefined) this.#queuedRequests.delete(q.request);
    }
    this.#outboxBytes -= bytes;
    const accepted = this.#stdin!.write(batch);
    if (!accepted) {
      // The pipe is full (the server is slow or stopped reading): the rest waits in the outbox, bounded.
      this.#blocked = true;
      this.#stdin!.once('drain', this.#onDrain);
    } else if (this.#outbox.size) this.#schedule();
  };

  #onDrain = (): void => {
    this.#blocked = false;
    this.#flush();
  };

  /** Frames that will never be written are let go at once. */
  #dropOutbox(): void {
    this.#outbox.clear();
    this.#queuedRequests.clear();
    this.#outboxBytes = 0;
  }

  #exitText(): string {
    const e = this.#exit;
    if (!e) return 'the server closed its output';
    if (e.signal === 'launcher-exited') return 'the stdio launcher died';
    return e.signal ? `the server was killed by ${e.signal}` : `the server exited with code ${e.exit}`;
  }

  #maybeClosed(): void {
    if (this.#state === 'closed' || !this.#exit || !this.#stdoutEnded || !this.#stderrEnded) return;
    if (this.#state !== 'closing' && !this.#closeError) {
      const tail = this.stderrTail.trim();
      const text = `${this.#exitText()}${tail ? `; its stderr ends:\n${tail}` : ' (nothing on stderr)'}`;
      this.#closeError = new AlbedoError('ALBEDO_SERVER_EXITED', text, {
        outcome: 'unknown',
        data: { exit: this.#exit.exit, signal: this.#exit.signal, stderrTail: this.stderrTail },
      });
    }
    this.#finish();
  }

  /** Ends the link because of a fault: reported once, then the server is shut down. */
  #fail(err: AlbedoError): void {
    if (this.#state === 'closed') return;
    this.#closeError ??= err;
    this.#finish();
    void this.close();
  }

  #finish(): void {
    if (this.#state !== 'closing') this.#state = 'closed';
    this.#dropOutbox();
    if (this.#closeReported) return;
    this.#closeReported = true;
    this.#events.onClose(this.#closeError);
  }

  /**
   * Closes the server's stdin and the lifeline, so the launcher runs the
   * shutdown sequence (wait, SIGTERM the group, wait, SIGKILL). Resolves once
   * the launcher has reaped everything. Idempotent.
   */
  async close(): Promise<void> {
    if (!this.#child) return;
    if (this.#state !== 'closed') this.#state = 'closing';
    this.#dropOutbox();
    // A server that stopped reading would never let buffered bytes through, and end() would wait for them:
    // give them up, so it sees EOF after what the pipe already holds.
    try {
      if (this.#blocked) this.#stdin?.destroy();
      else this.#stdin?.end();
    } catch {
      /* already gone */
    }
    try {
      this.#lifeline?.end();
    } catch {
      /* already gone */
    }
    await this.#reaped;
    this.#state = 'closed';
    if (!this.#closeReported) {
      this.#closeReported = true;
      this.#events.onClose(this.#closeError);
    }
    this.#child.stdout?.destroy();
    this.#child.stderr?.destroy();
    this.#lifeline?.destroy();
  }
}
