/**
 * The daemon as tests drive it: the real `albedo daemon` process (spawned
 * as the CLI tests spawn `albedo probe`) over a temp $ALBEDO_HOME, and real
 * HTTP on 127.0.0.1 with undici. Servers the daemon tries carry the test's
 * tag through a named secret (`ALBEDO_TEST_TAG: { env: 'TEST_SERVER_TAG' }`),
 * so the daemon itself is not tagged and the process scan sees only servers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Agent, request } from 'undici';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { NODE, ROOT, fixture, waitNoLeftovers } from '../helpers.ts';
import type { DaemonInfo } from '../../daemon/info.ts';

export const BIN = path.join(ROOT, 'bin', 'albedo.ts');

type Tap = { teardown(fn: () => unknown): void };

const LISTENING = /^albedo daemon: listening on http:\/\/127\.0\.0\.1:(\d+) /;

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  text: string;
}

export interface Daemon {
  home: string;
  info: DaemonInfo;
  child: ChildProcess;
  /** stderr lines so far. */
  lines: string[];
  /** Resolves with the exit status (or the signal's name) once the process has exited. */
  exited: Promise<number | string>;
  /** One request with the daemon's token (unless `token` is given: null sends none). */
  call(method: string, p: string, o?: CallOptions): Promise<Reply>;
  /** Sends `sig` and waits for the exit. */
  stop(sig?: NodeJS.Signals): Promise<number | string>;
}

export interface CallOptions {
  body?: unknown;
  /** Raw body text (instead of `body`). */
  raw?: string;
  headers?: Record<string, string>;
  token?: string | null;
  dispatcher?: Agent;
}

/** A stdio entry for a fixture (or any command), tagged through the daemon's TEST_SERVER_TAG. */
export function entry(command: string, args: string[] = [], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command, args, env: { ALBEDO_TEST_TAG: { env: 'TEST_SERVER_TAG' } }, ...extra };
}

/** The official SDK's stdio server (test/fixtures/sdk-server.ts). */
export const sdkServer = (extra: Record<string, unknown> = {}): Record<string, unknown> => entry(NODE, [fixture('sdk-server.ts')], extra);

export interface SpawnOptions {
  tag: string;
  port?: number;
  env?: Record<string, string>;
}

/** Spawns `albedo daemon` for `home`; resolves once it listens (its stderr says so). */
export async function startDaemon(t: Tap, home: string, o: SpawnOptions): Promise<Daemon> {
  const started = spawnDaemon(home, o);
  const line = await new Promise<string>((resolve, reject) => {
    started.child.once('exit', (code, sig) => reject(new Error(`the daemon exited (${code ?? sig}): ${started.lines.join('\n')}`)));
    started.onLine((l) => {
      if (LISTENING.test(l)) resolve(l);
    });
  });
  const port = Number(LISTENING.exec(line)![1]);
  const info = JSON.parse(readFileSync(path.join(home, 'daemon.json'), 'utf8')) as DaemonInfo;
  if (info.port !== port) throw new Error(`daemon.json says port ${info.port}, the daemon ${port}`);
  const agent = new Agent({ connections: 16 });
  const d: Daemon = {
    home,
    info,
    child: started.child,
    lines: started.lines,
    exited: started.exited,
    call: (method, p, c = {}) => call(info, method, p, { dispatcher: agent, ...c }),
    stop: async (sig = 'SIGTERM') => {
      if (started.child.exitCode === null && started.child.signalCode === null) started.child.kill(sig);
      return started.exited;
    },
  };
  t.teardown(async () => {
    await d.stop();
    await agent.close();
    const left = await waitNoLeftovers(o.tag, 15_000);
    if (left.length) throw new Error(`processes outlived the daemon: ${left.join(', ')}`);
  });
  return d;
}

export interface Spawned {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | string>;
  onLine(fn: (l: string) => void): void;
}

/** Spawns the daemon without waiting: for runs expected to fail or to be killed early. */
export function spawnDaemon(home: string, o: SpawnOptions): Spawned {
  const args = [BIN, 'daemon', ...(o.port !== undefined ? ['--port', String(o.port)] : [])];
  const child = spawn(NODE, args, {
    env: { ...process.env, ALBEDO_HOME: home, TEST_SERVER_TAG: o.tag, ...o.env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const lines: string[] = [];
  const listeners: Array<(l: string) => void> = [];
  createInterface({ input: child.stderr! }).on('line', (l) => {
    lines.push(l);
    for (const fn of listeners) fn(l);
  });
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, sig) => resolve(code ?? sig!)));
  return {
    child,
    lines,
    exited,
    onLine: (fn) => {
      listeners.push(fn);
    },
  };
}

/** One HTTP request to the daemon of `info`. */
export async function call(info: DaemonInfo, method: string, p: string, o: CallOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...o.headers };
  const token = o.token === undefined ? info.token : o.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let body: string | undefined = o.raw;
  if (o.body !== undefined) {
    body = JSON.stringify(o.body);
    headers['content-type'] ??= 'application/json';
  }
  const r = await request(`http://127.0.0.1:${info.port}${p}`, { method: method as 'GET', headers, body, dispatcher: o.dispatcher });
  const text = await r.body.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: r.statusCode, headers: r.headers, body: parsed, text };
}

/** A server path: /v1/mcp/servers/<name, encoded>. */
export const srv = (name: string, suffix = ''): string => `/v1/mcp/servers/${encodeURIComponent(name)}${suffix}`;

/** Follows a session's event stream; `events` fills as they arrive. */
export async function follow(d: Daemon, id: string, lastEventId?: string) {
  const agent = new Agent();
  const headers: Record<string, string> = { authorization: `Bearer ${d.info.token}`, accept: 'text/event-stream' };
  if (lastEventId) headers['last-event-id'] = lastEventId;
  const r = await request(`http://127.0.0.1:${d.info.port}/v1/sessions/${id}/events`, { headers, dispatcher: agent });
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => events.push(e) });
  const done = (async () => {
    try {
      for await (const chunk of r.body) parser.feed(Buffer.from(chunk).toString('utf8'));
    } catch {
      // closed by the test
    }
  })();
  let closed: Promise<void> | undefined;
  return {
    status: r.statusCode,
    contentType: String(r.headers['content-type']),
    events,
    /** Ends the stream; closing twice is nothing. */
    close: (): Promise<void> =>
      (closed ??= (async () => {
        r.body.destroy();
        await done;
        await agent.close();
      })()),
  };
}
