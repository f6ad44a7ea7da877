/**
 * A stdio link: one MCP server process behind Albedo's launcher
 * (launcher.c, built at install, or launcher.py), speaking newline-delimited JSON. The link knows bytes and
 * frames, nothing of JSON-RPC: `send`, `onMessage`, `close`, `closed`.
 *
 * The child environment is exactly what the resolved config says (HOME, PATH,
 * TMPDIR and the named values); no shell runs. The server's stderr is not
 * shown, but its last 4 KiB are kept and quoted when it fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { LineDecoder, encodeFrame, FrameTooLargeError, MAX_MESSAGE_BYTES } from '../../protocol/framing.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import type { ResolvedStdioServer } from '../../protocol/config.ts';

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
  #state: 'new' | 'starting' | 'open' | 'closing' | 'closed' = 'new';
  #exit: { exit: number | null; signal: string | null } | undefined;
  #stdoutEnded = false;
  #stderrEnded = false;
  #reaped: Promise<void>;
  #markReaped!: () => void;
  #closeError: AlbedoError | null = null;
  #closeReported = false;
  pid: number | undefined;

  constructor(server: ResolvedStdioServer, events: LinkEvents, maxMessageBytes = MAX_MESSAGE_BYTES) {
    this.server = server;
    this.#events = events;
    this.#decoder = new LineDecoder(maxMessageBytes);
    this.#reaped = new Promise((r) => (this.#markReaped = r));
  }

  get closed(): boolean {
    return this.#state === 'closing' || this.#state === 'closed';
  }

  /** The last 4 KiB the server wrote to stderr, as text. */
  get stderrTail(): string {
    return this.#tail.toString('utf8').replace(/^[\s\S]*?\uFFFD/, '');
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
      // The launcher must not be in the server's group, and must not get the terminal's SIGINT before we decide.
      detached: false,
      windowsHide: true,
    });
    this.#child = child;
    this.#stdin = child.stdin!;
    this.#stdin.on('error', () => { /* EPIPE after the server died: reported through exit */ });
    const lifeline = child.stdio[3] as Socket;
    this.#lifeline = lifeline;
    lifeline.write(JSON.stringify({ env }) + '\n');
    const stdout = child.stdout as Readable;
    const stderr = child.stderr as Readable;

    stdout.on('data', (chunk: Buffer) => this.#onStdout(chunk));
    stdout.on('end', () => { this.#stdoutEnded = true; this.#maybeClosed(); });
    stdout.on('error', () => { this.#stdoutEnded = true; });
    stderr.on('data', (chunk: Buffer) => {
      this.#tail = this.#tail.length + chunk.length <= STDERR_TAIL
        ? Buffer.concat([this.#tail, chunk])
        : Buffer.concat([this.#tail, chunk]).subarray(-STDERR_TAIL);
    });
    stderr.on('end', () => { this.#stderrEnded = true; this.#maybeClosed(); });
    stderr.on('error', () => { this.#stderrEnded = true; });

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
          try { ev = JSON.parse(line) as LauncherEvent; } catch { continue; }
          if ('spawned' in ev) {
            this.pid = ev.spawned;
            if (this.#state === 'starting') this.#state = 'open';
            resolve();
          } else if ('spawnError' in ev) {
            const what = ev.where === 'chdir' ? `cannot enter working directory ${JSON.stringify(cwd)}` : `cannot start ${JSON.stringify(command)}`;
            const err = new AlbedoError('ALBEDO_SPAWN_FAILED', `${what}: ${ev.message}${typeof ev.spawnError === 'number' ? '' : ` (${ev.spawnError})`}`, { outcome: 'not_run', data: { errno: ev.spawnError, where: ev.where } });
            this.#closeError = err;
            reject(err);
          } else if ('exit' in ev) {
            this.#exit = ev;
            setTimeout(() => { this.#stdoutEnded = true; this.#stderrEnded = true; this.#maybeClosed(); }, DRAIN_MS).unref();
            this.#maybeClosed();
          } else if ('reaped' in ev) {
            this.#markReaped();
          }
        }
      });
      lifeline.on('error', () => { /* the launcher is gone; 'exit' below settles everything */ });
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
          const e = this.#closeError ?? new AlbedoError('ALBEDO_SPAWN_FAILED', `the stdio launcher exited (${signal ?? code}) before starting ${JSON.stringify(command)}`, { outcome: 'not_run' });
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
        this.#fail(new AlbedoError('ALBEDO_FRAME_TOO_LARGE', `the server sent a message over the ${err.limit / 1024 / 1024} MiB limit; the connection was closed`, { outcome: 'unknown', data: { limit: err.limit } }));
        return;
      }
      throw err;
    }
    for (const line of lines) {
      if ((this.#state as string) === 'closed') return; // a handler may have closed it
      this.#events.onMessage(line);
    }
  }

  /** Writes one message. Throws ALBEDO_CONNECTION_CLOSED when the link is down. */
  send(message: unknown): void {
    if (this.#state !== 'open') throw new AlbedoError('ALBEDO_CONNECTION_CLOSED', 'the server connection is closed', { outcome: 'not_run' });
    // Frames queued in one turn of the event loop go out in one write (one syscall instead of one each):
    // under load the worker spent a sixth of its time in per-frame pipe writes.
    this.#outbox.push(encodeFrame(message, this.#decoder.limit));
    if (this.#outbox.length === 1) setImmediate(this.#flush);
  }

  #outbox: string[] = [];
  #flush = (): void => {
    const frames = this.#outbox;
    this.#outbox = [];
    if (this.#state !== 'open' || !frames.length) return;
    this.#stdin!.write(frames.length === 1 ? frames[0]! : frames.join(''));
  };

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
      this.#closeError = new AlbedoError('ALBEDO_SERVER_EXITED', `${this.#exitText()}${tail ? `; its stderr ends:\n${tail}` : ' (nothing on stderr)'}`, { outcome: 'unknown', data: { exit: this.#exit.exit, signal: this.#exit.signal, stderrTail: this.stderrTail } });
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
    try { this.#stdin?.end(); } catch { /* already gone */ }
    try { this.#lifeline?.end(); } catch { /* already gone */ }
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
