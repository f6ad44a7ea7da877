/**
 * `albedo gateway NAME`, `--server NAME` and `--session ID`: a stdio MCP
 * server for hosts that spawn a command (Claude Desktop, Claude Code,
 * Cursor…). It finds or starts the daemon as every command does, upgrades
 * one request to `/mcp/gateways/NAME/stdio` (or `/mcp/servers/NAME/stdio`,
 * `/mcp/sessions/ID/stdio`)
 * and then copies whole lines: stdin to the daemon, the daemon to stdout. It
 * never loads the kernel and reads no more of MCP than ids (gateway-relay.ts),
 * so a host that restarts it pays a process start and one loopback
 * connection; the session behind the gateway, its servers and their saved
 * catalogue stay in the daemon.
 *
 * A daemon that goes away does not end it: the host's requests in flight
 * are answered with an error (`ALBEDO_DAEMON_UNREACHABLE`, outcome unknown);
 * a killed daemon (its daemon.json left behind) is waited for 5 s
 * (`ALBEDO_GATEWAY_WAIT_MS`), then started again as every command would (an
 * ACP session's gateway starts none: its adapter does, and it is waited for
 * a minute); a stopped one (daemon.json removed) is waited for as long and
 * not started. The new daemon
 * is told the host's opening again, and the host goes on. The
 * same daemon ending the connection (a revoked token, a changed gateway, a
 * closed session) ends the command.
 *
 * Nothing but MCP goes to stdout (a host reads it as the protocol); news and
 * errors go to stderr. stdin's end is passed on (the daemon ends the
 * connection); the daemon's end ends the command (status 0), and a
 * connection lost any other way is status 3.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '../client/client.ts';
import { daemonAlive, prove, readInfo, runningDaemon, type DaemonInfo } from '../client/daemon.ts';
import { CliError, EXIT, exitFor, errorLine } from '../client/errors.ts';
import { HostRequests, LineSplitter, lostAnswer, responseId } from './gateway-relay.ts';

const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

export interface GatewayStdioOptions {
  /** A gateway defined in extensions.json. */
  name?: string;
  /** Or one configured server passed through under its own names. */
  server?: string;
  /** Or an ACP session's gateway (what `albedo acp` gives its agent). */
  session?: string;
}

const UPGRADE = 'albedo-mcp-stdio';
/**
 * After a stop (daemon.json removed), how long a restart is waited for; after a kill, how long another command (an
 * `albedo acp` renewing its lease) is given to start the next daemon before this one does. `ALBEDO_GATEWAY_WAIT_MS`.
 */
export function waitMs(env: NodeJS.ProcessEnv = process.env): number {
  const v = env.ALBEDO_GATEWAY_WAIT_MS;
  return v !== undefined && /^\d{1,7}$/.test(v) && Number(v) <= 600_000 ? Number(v) : 5_000;
}
/** An ACP session's gateway starts no daemon: its adapter does, and this is how long it is waited for. */
const KILLED_WAIT_MAX_MS = 60_000;
const POLL_MS = 250;
/** A host line longer than this is refused (the daemon takes 16 MiB). */
const MAX_LINE = 32 * 1024 * 1024;
const NL = Buffer.from('\n');

function pathOf(o: GatewayStdioOptions): string {
  if (o.server !== undefined) return `/mcp/servers/${encodeURIComponent(o.server)}/stdio`;
  if (o.session !== undefined) return `/mcp/sessions/${encodeURIComponent(o.session)}/stdio`;
  return `/mcp/gateways/${encodeURIComponent(o.name ?? '')}/stdio`;
}

/** The upgraded socket, or the daemon's refusal as a CliError. */
function upgrade(port: number, token: string, path: string): Promise<{ socket: Socket; head: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      path,
      method: 'GET',
      // Its own connection: never the global agent, which NODE_USE_ENV_PROXY points at HTTP_PROXY (the token is in it).
      agent: false,
      headers: { connection: 'Upgrade', upgrade: UPGRADE, authorization: `Bearer ${token}`, host: `127.0.0.1:${port}` },
    });
    req.once('upgrade', (_res, socket, head) => resolve({ socket: socket as Socket, head }));
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.length < 64 && chunks.push(c));
      res.once('end', () => {
        let code = 'ALBEDO_INTERNAL';
        let message = `the daemon refused the gateway (HTTP ${res.statusCode})`;
        try {
          const e = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error?: { code?: string; message?: string } }).error;
          if (e?.code) code = e.code;
          if (e?.message) message = e.message;
        } catch {
          /* not the API's body: the status says it */
        }
        reject(new CliError(code, message, exitFor(res.statusCode ?? 500, code)));
      });
    });
    req.once('error', (err: NodeJS.ErrnoException) =>
      reject(new CliError('ALBEDO_DAEMON_UNREACHABLE', `cannot reach the daemon (${err.code ?? 'no answer'})`, EXIT.unreachable)),
    );
    req.end();
  });
}

/** A new daemon of `home` (not the one whose token is `old`), proved, or null. */
async function newDaemon(home: string, old: string): Promise<DaemonInfo | null> {
  const info = runningDaemon(home);
  return info && info.token !== old && (await prove(info)) === 'ours' ? info : null;
}

/**
 * The daemon to go on with after a connection ended: the same one (it ended the connection), another one, or none.
 * A stopped daemon (daemon.json removed first) is waited for a few seconds, and none is started: the user stopped it.
 * A killed one (daemon.json left) is waited for, then, when `mayStart`, started as every command would.
 */
async function nextDaemon(home: string, was: DaemonInfo, mayStart: boolean): Promise<DaemonInfo | 'same' | null> {
  const now = readInfo(home);
  // Alive and answering: it ended the connection itself. (A killed daemon closes its sockets a moment before /proc
  // shows it dead: its answer, not its pid, says whether it is there.)
  if (now && now.token === was.token && daemonAlive(home, now.pid) && (await prove(now)) === 'ours') return 'same';
  const stopped = !now;
  const until = Date.now() + (stopped || mayStart ? waitMs() : Math.max(waitMs(), KILLED_WAIT_MAX_MS));
  while (Date.now() < until) {
    const info = await newDaemon(home, was.token);
    if (info) return info;
    if (!fs.existsSync(home)) return null;
    await sleep(POLL_MS);
  }
  if (stopped || !mayStart) return null;
  return new Client({ home }).daemon();
}

/** Relays stdin/stdout to the daemon's gateway until either side ends; resolves with the exit status. */
export async function runGatewayStdio(o: GatewayStdioOptions): Promise<number> {
  const client = new Client();
  let info: DaemonInfo;
  let link: { socket: Socket; head: Buffer };
  try {
    info = await client.daemon();
    link = await upgrade(info.port, info.token, pathOf(o));
  } catch (err) {
    const e = err instanceof CliError ? err : new CliError('ALBEDO_INTERNAL', (err as Error).message, EXIT.failed);
    process.stderr.write(errorLine(e) + '\n');
    return e.exit;
  }
  return new Relay(client.home, pathOf(o), info, link, o.session === undefined).done;
}

/**
 * The copying: stdin's whole lines to the daemon, the daemon's to stdout, each
 * side paused while the other is full. When the daemon goes (not the host),
 * the host's requests in flight are answered with an error; a daemon that
 * comes back (a killed one started again, or a restart) is connected to and
 * told the host's opening again, and what the host sent meanwhile follows.
 */
class Relay {
  readonly done: Promise<number>;
  #resolve!: (status: number) => void;
  #home: string;
  #path: string;
  #info: DaemonInfo;
  #socket: Socket | null = null;
  #host = new LineSplitter();
  #track = new HostRequests();
  /** What the host sent while no daemon could take it. */
  #queue: Buffer[] = [];
  #stdinEnded = false;
  #replays = 0;
  #mayStart: boolean;

  constructor(home: string, path: string, info: DaemonInfo, link: { socket: Socket; head: Buffer }, mayStart: boolean) {
    this.#mayStart = mayStart;
    this.#home = home;
    this.#path = path;
    this.#info = info;
    this.done = new Promise((r) => (this.#resolve = r));
    process.stdin.on('data', (chunk: Buffer) => this.#fromHost(chunk));
    process.stdin.once('end', () => this.#hostEnded());
    this.#attach(link, null);
  }

  #fromHost(chunk: Buffer): void {
    const r = this.#host.push(chunk);
    if (this.#host.heldBytes > MAX_LINE) return this.#finish(this.#fail('ALBEDO_INVALID_ARGUMENT', 'a message over 32 MiB'));
    if (!r) return;
    for (const line of r.lines) this.#track.host(line);
    if (!this.#socket || this.#queue.length) this.#queue.push(r.block);
    else if (!this.#socket.write(r.block)) this.#pauseUntilDrained(process.stdin, this.#socket);
  }

  #hostEnded(): void {
    this.#stdinEnded = true;
    const rest = this.#host.take();
    // The host closed our stdin: the daemon is told (half-close) and ends the connection once it answered what it had.
    if (this.#socket && !this.#queue.length) {
      if (rest.length) this.#socket.write(rest);
      this.#socket.end();
    } else if (!this.#socket) this.#finish(EXIT.ok);
  }

  /** Copies from `link`; `opening` is the replayed opening's id, whose answer is the relay's, not the host's. */
  #attach(link: { socket: Socket; head: Buffer }, opening: string | null): void {
    const socket = link.socket;
    const lines = new LineSplitter();
    let waiting = opening;
    socket.setNoDelay(true);
    const fromDaemon = (chunk: Buffer): void => {
      const r = lines.push(chunk);
      if (!r) return;
      for (const line of r.lines) this.#track.daemon(line);
      if (waiting === null) {
        if (!process.stdout.write(r.block)) this.#pauseUntilDrained(socket, process.stdout);
        return;
      }
      for (const line of r.lines) {
        if (waiting !== null && responseId(line) === waiting) {
          waiting = null;
          this.#opened(socket);
        } else process.stdout.write(Buffer.concat([line, NL]));
      }
    };
    socket.on('data', fromDaemon);
    socket.on('error', () => {});
    socket.once('close', () => void this.#closed(socket));
    if (link.head.length) fromDaemon(link.head);
    if (opening === null) this.#socket = socket;
  }

  /** The replayed opening answered: the host's notification, then what waited, then the host's lines as they come. */
  #opened(socket: Socket): void {
    const replay = this.#track.replay('');
    if (replay?.initialized) socket.write(replay.initialized);
    for (const block of this.#queue.splice(0)) socket.write(block);
    this.#socket = socket;
    if (this.#stdinEnded) this.#hostEnded();
  }

  async #closed(socket: Socket): Promise<void> {
    const byDaemon = socket.readableEnded;
    if (this.#socket === socket) this.#socket = null;
    if (this.#stdinEnded && !this.#queue.length) return this.#finish(EXIT.ok);
    for (const id of this.#track.takePending()) process.stdout.write(lostAnswer(id));
    let next: DaemonInfo | 'same' | null;
    try {
      next = await nextDaemon(this.#home, this.#info, this.#mayStart);
    } catch (err) {
      return this.#finish(this.#report(err));
    }
    if (next === 'same' || next === null) return this.#finish(byDaemon ? EXIT.ok : EXIT.unreachable);
    let link: { socket: Socket; head: Buffer };
    try {
      link = await upgrade(next.port, next.token, this.#path);
    } catch (err) {
      return this.#finish(this.#report(err));
    }
    this.#info = next;
    process.stderr.write('albedo: the daemon restarted; the gateway is connected again\n');
    const id = `albedo-reopen-${++this.#replays}`;
    const replay = this.#track.replay(id);
    this.#attach(link, replay ? id : null);
    if (replay) link.socket.write(replay.opening);
    else this.#opened(link.socket);
  }

  #pauseUntilDrained(reader: NodeJS.ReadableStream, writer: NodeJS.WritableStream): void {
    reader.pause();
    writer.once('drain', () => reader.resume());
  }

  #report(err: unknown): number {
    const e = err instanceof CliError ? err : new CliError('ALBEDO_INTERNAL', (err as Error).message, EXIT.failed);
    process.stderr.write(errorLine(e) + '\n');
    return e.exit;
  }

  #fail(code: string, what: string): number {
    return this.#report(new CliError(code, `the host sent ${what}`, EXIT.usage));
  }

  #finish(status: number): void {
    for (const id of this.#track.takePending()) process.stdout.write(lostAnswer(id));
    this.#socket?.destroy();
    process.stdin.pause();
    process.stdin.removeAllListeners('data');
    this.#resolve(status);
  }
}
