/**
 * `albedo daemon`'s life: check the home is the user's own, take it
 * (lock.ts: one daemon per $ALBEDO_HOME), start the kernel and the host's
 * services (`createAlbedo({ home })`, `albedo.sessions.start()`), serve the HTTP API
 * and the web pane (ui/) on 127.0.0.1, publish `daemon.json` (info.ts), print a
 * one-time link to the pane (only to a terminal), and on SIGTERM or SIGINT
 * stop: daemon.json removed first (no client is sent to a port about to be
 * free), no new connections, every session and server closed
 * (`albedo.close()` reaps every server), the lock removed.
 *
 * A daemon killed with SIGKILL leaves its servers to their launchers, which
 * reap them when its lifeline closes, and leaves daemon.json and the lock
 * behind; the next daemon sees the lock's process is gone and takes over.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import path from 'node:path';
import { getRequestListener } from '@hono/node-server';
import { createAlbedo, type Albedo, type SessionInputHandler } from '../api/albedo.ts';
import { AlbedoError } from '../protocol/errors.ts';
import { openPrivateDir, type PrivateDir } from '../protocol/private-dir.ts';
import { createApp, MAX_BODY_BYTES } from './app.ts';
import { ApiError } from './errors.ts';
import { isUiRequest, refusal, requestPath, type GuardOptions } from './guard.ts';
import { mcpTarget } from './mcp-mount.ts';
import { createRestBridge } from './rest-bridge.ts';
import { newToken, readInfo, removeInfo, writeInfo, INFO_FILE } from './info.ts';
import { acquireHomeLock } from './lock.ts';
import { Logins, SIGN_IN_TTL_MS } from './logins.ts';
import { settingsView, type Reader } from './servers.ts';
import { SettingsWrites } from './writes.ts';
import { SessionRegistry } from './session-registry.ts';
import { LEASE_FILE } from './session-lease.ts';
import { Gateways } from './gateway/gateways.ts';
import { gatewayListener, gatewayUpgrade, refuseUpgrade, sessionListener } from './gateway-mount.ts';
import { AcpSessions } from './acp/sessions.ts';
import { leaseTimes } from './acp/attachments.ts';
import { uiFiles } from './ui-static.ts';
import { UiAuth, uiLinkTtl } from './ui-auth.ts';
import { GatewayTokens, pruneTokens } from './gateway-tokens.ts';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

export interface DaemonOptions {
  home: string;
  /** 0: a free port. */
  port: number;
  /** One line of news for the operator (default: stderr). */
  log?: (line: string) => void;
}

/** The owner of the daemon's session records (AlbedoOptions.owner): the same for every daemon of a home. */
export const DAEMON_OWNER = 'daemon';

/**
 * How long a pending sign-in lasts: ten minutes, or `ALBEDO_SIGN_IN_TTL_MS`
 * (1 s to 10 min; anything else is ignored) — a knob for tests and for
 * users who want less.
 */
export function signInTtl(env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env.ALBEDO_SIGN_IN_TTL_MS);
  return Number.isInteger(v) && v >= 1_000 && v <= SIGN_IN_TTL_MS ? v : SIGN_IN_TTL_MS;
}

/** The daemon shows no browser: every sign-in it runs brings its own authorize step (logins.ts); this one only refuses. */
function noBrowser(): never {
  throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', 'the daemon opens no browser; sign in through PUT /v1/auth/logins/mcp:{name}', {
    outcome: 'not_run',
  });
}

/** An upgrade anywhere but a gateway's stdio path. */
const NOT_UPGRADABLE = new ApiError(
  404,
  'ALBEDO_NOT_FOUND',
  'only /mcp/gateways/{name}/stdio, /mcp/servers/{name}/stdio and /mcp/sessions/{id}/stdio upgrade',
);

/** Exit statuses of `albedo daemon`. */
export const EXIT = { ok: 0, failed: 1, usage: 2, running: 3 } as const;

/** A declared body over the limit, refused before it is read (one without a length meets the app's bodyLimit). */
function tooLarge(req: http.IncomingMessage): ApiError | null {
  const n = Number(req.headers['content-length'] ?? 0);
  return n > MAX_BODY_BYTES ? new ApiError(413, 'ALBEDO_TOO_LARGE', `the body is over ${MAX_BODY_BYTES} bytes`, { path: ['body'] }) : null;
}

/**
 * Answers a refused request once its body (if any) has arrived, discarded,
 * so the client is not cut off mid-send and reads the answer; a body past
 * four times the limit is not waited for.
 */
function sendRefusal(req: http.IncomingMessage, res: http.ServerResponse, e: ApiError): void {
  const headers: Record<string, string> = { 'content-type': 'application/json', connection: 'close' };
  if (e.status === 401) headers['www-authenticate'] = 'Bearer realm="albedo"';
  let seen = 0;
  const answer = (): void => {
    if (res.headersSent) return;
    res.writeHead(e.status, headers);
    res.end(JSON.stringify(e.body()));
  };
  req.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > 4 * MAX_BODY_BYTES) {
      answer();
      req.destroy();
    }
  });
  req.once('end', answer);
  req.once('error', () => res.destroy());
}

function listen(server: http.Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Runs the daemon until SIGTERM or SIGINT; resolves with the exit status. */
export async function runDaemon(o: DaemonOptions): Promise<number> {
  const log = o.log ?? ((line: string) => process.stderr.write(`albedo daemon: ${line}\n`));
  const home = path.resolve(o.home);
  // $ALBEDO_HOME must be this user's alone, and so must the way to it (protocol/private-dir.ts): whoever can write it, or
  // swap it, chooses the commands the daemon runs (extensions.json). Made if missing (a directory at a time, 0700),
  // checked from the root down before anything in it is read, and held: its files are opened through the directory
  // that was checked (`at`), not through a path someone could swap meanwhile.
  let held: PrivateDir;
  try {
    held = openPrivateDir(home, { create: true });
  } catch (err) {
    log(`cannot start: ${(err as Error).message}`);
    return EXIT.failed;
  }
  const at = held.at;
  const lock = await acquireHomeLock(at);
  if (!lock.held) {
    const info = readInfo(at);
    const where = info && info.pid === lock.holder.pid ? `listening on http://127.0.0.1:${info.port}` : 'starting';
    log(`a daemon already runs for ${home} (pid ${lock.holder.pid}, ${where}); see ${path.join(home, INFO_FILE)}`);
    held.close();
    return EXIT.running;
  }

  let signalled: (sig: NodeJS.Signals) => void = () => {};
  const stopRequested = new Promise<NodeJS.Signals>((resolve) => {
    signalled = resolve;
  });
  const onSignal = (sig: NodeJS.Signals): void => signalled(sig);
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  let albedo: Albedo | undefined;
  let logins: Logins | undefined;
  let gateways: Gateways | undefined;
  let server: http.Server | undefined;
  let port = 0;
  const startedAt = Date.now();
  // Every upgraded socket (a stdio connection, or one being answered): out of the HTTP server's reach, ended here at a stop.
  const upgraded = new Set<Duplex>();
  const stop = async (): Promise<void> => {
    // daemon.json goes before the port is given up, so it never names a port another process may take meanwhile.
    removeInfo(at);
    // Stop accepting; requests in flight finish or fail as the services close under them.
    const closed = server ? new Promise<void>((r) => server!.close(() => r())) : Promise.resolve();
    server?.closeIdleConnections();
    logins?.close();
    await gateways?.close();
    for (const s of upgraded) s.destroy();
    await albedo?.close();
    server?.closeAllConnections();
    await closed;
    await lock.release();
    held.close();
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  };

  try {
    // The daemon's owner is stable: a daemon started after one that was killed restores the sessions it left.
    // What a gateway session's servers ask of the client goes to the gateway's host (the gateways exist just below).
    const sessionInput: SessionInputHandler = (r) =>
      gateways ? gateways.input(r) : Promise.reject(new AlbedoError('ALBEDO_INPUT_REQUIRED', 'no gateway', { outcome: 'not_run' }));
    albedo = await createAlbedo({ home, homeAt: at, owner: DAEMON_OWNER, authorize: noBrowser, sessionInput });
    const a = albedo;
    albedo.sessions.start();
    // Serve only once the settings service answers: a daemon that cannot read its home says so now.
    await settingsView(albedo.kernel);
    // Sessions opened over HTTP are leased (session-lease.ts): a client that dies without DELETE does not leave them open.
    const registry = new SessionRegistry(albedo.sessions, { leaseFile: path.join(at, LEASE_FILE), log });
    const restored = await registry.restore();
    if (restored) log(`restored ${restored} session${restored === 1 ? '' : 's'} a previous daemon left open`);
    // ACP sessions a previous daemon left come back detached, their editor's servers lost until an adapter attaches.
    const acp = new AcpSessions({ registry, at, home, port: () => port, lease: leaseTimes(), log });
    const acpRestored = acp.restore();
    if (acpRestored) log(`${acpRestored} of them ACP session${acpRestored === 1 ? '' : 's'}, detached`);
    const token = newToken();
    gateways = new Gateways({ kernel: a.kernel, registry, version: pkg.version, log, acp });
    const gatewayHttp = gatewayListener(gateways);
    const sessionHttp = sessionListener(gateways);
    const reader: Reader = { kernel: a.kernel, authStatuses: () => a.authStatuses() };
    logins = new Logins({
      kernel: a.kernel,
      ttlMs: signInTtl(),
      log,
      signIn: (s, o) => a.signInResolved(s, o),
    });
    const writes = new SettingsWrites(reader, { eraCachePath: path.join(home, 'store'), logins });
    // The web pane's one-time links and cookie sessions: in memory, shared by the guard, the /v1/ui routes and the login.
    const ui = new UiAuth({ port: () => port, linkTtlMs: uiLinkTtl() });
    // The gateways' own tokens (gateway-tokens.json): a malformed file stops the start here, said in the log.
    const gatewayTokens = new GatewayTokens(at);
    gatewayTokens.onRevoked = (name) => void gateways?.disconnect(name);
    // A gateway removed by hand (or while the daemon was down) takes its tokens with it; a broken file, none (pruneTokens).
    // On every change: a file fixed after a broken start may define no gateway, and its event then names none.
    const prune = async (): Promise<void> => void pruneTokens(gatewayTokens, await settingsView(a.kernel));
    await prune();
    a.kernel.on('settings', 'settings/changed', () => void prune().catch(() => {}));
    const guard: GuardOptions = {
      port: () => port,
      token,
      ui,
      gatewayToken: (n, t) => gatewayTokens.verify(n, t),
      sessionToken: (id, t) => acp.attachments.gatewayMatches(id, t),
    };
    const app = createApp({
      reader,
      writes,
      registry,
      logins,
      ui,
      gatewayTokens,
      gatewayClients: (name) => gateways?.clients(name) ?? [],
      acp,
      version: pkg.version,
      status: { home, port: () => port, startedAt, token },
      log,
    });
    const pane = uiFiles({ ui, log });
    // `/mcp`: the REST bridge, an MCP server whose one tool calls this API with the caller's own token.
    const bridgeListener = getRequestListener(createRestBridge({ port: () => port, version: pkg.version }));
    const listener = getRequestListener(app.fetch, {
      // A request @hono/node-server cannot turn into a Request (a malformed URL): the API's error body, never a stack.
      errorHandler: () => Response.json(new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', 'the request cannot be read').body(), { status: 400 }),
    });
    // Host is the guard's to check (a missing one gets the API's 421, not Node's bare 400).
    server = http.createServer({ requireHostHeader: false }, (req, res) => {
      const mcp = mcpTarget(requestPath(req));
      // A gateway bounds its own bodies (a tool call's arguments may be larger than any API body).
      const no = refusal(req, guard) ?? (mcp?.kind === 'gateway' || mcp?.kind === 'session' ? null : tooLarge(req));
      if (no) return sendRefusal(req, res, no);
      if (mcp?.kind === 'bridge') return void bridgeListener(req, res);
      if (mcp?.kind === 'gateway') return gatewayHttp(req, res, mcp.name);
      if (mcp?.kind === 'session') return sessionHttp(req, res, mcp.id);
      // The pane's files and login never reach the API's router (which would normalise `/ui/../v1/…` into a route).
      if (isUiRequest(req)) return pane(req, res);
      void listener(req, res);
    });
    // `albedo gateway NAME` (and `--server NAME`): one upgraded request per stdio connection, guarded as any request.
    server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      upgraded.add(socket);
      socket.once('close', () => upgraded.delete(socket));
      const mcp = mcpTarget(requestPath(req));
      const kind = mcp?.kind;
      const no = refusal(req, guard) ?? (kind === 'stdio' || kind === 'server-stdio' || kind === 'session-stdio' ? null : NOT_UPGRADABLE);
      if (no) return refuseUpgrade(socket, no);
      const target =
        mcp!.kind === 'stdio'
          ? { gateway: mcp!.name }
          : mcp!.kind === 'session-stdio'
            ? { session: mcp!.id }
            : { server: (mcp as { server: string }).server };
      void gatewayUpgrade(gateways!, req, socket, head, target);
    });
    port = await listen(server, o.port);
    // The gateways' sessions open in the background: a first client is then answered at once.
    void gateways.warm().catch(() => {});
    writeInfo(at, { port, token, pid: process.pid, version: pkg.version });
    log(`listening on http://127.0.0.1:${port} (pid ${process.pid}, home ${home})`);
    // A fresh one-time link to the web pane, for the person who started the daemon (`albedo open` makes more): only on
    // a terminal. A stderr that is a file or a pipe (a service manager's journal, `> log 2>&1`, the CLI's auto-start)
    // or a custom log gets how to get one instead — a login code does not go to a log. ALBEDO_NO_PANE_LINK: not even on a terminal.
    if (process.stderr.isTTY && !o.log && !process.env.ALBEDO_NO_PANE_LINK)
      process.stderr.write(`albedo: web pane: ${ui.mintLink().url}\n`);
    else if (o.log) o.log('web pane: run `albedo open` for a login link');
    else process.stderr.write('albedo: web pane: run `albedo open` for a login link\n');
  } catch (err) {
    const why = AlbedoError.is(err)
      ? `${err.code}: ${err.message}`
      : (err as NodeJS.ErrnoException).code === 'EADDRINUSE'
        ? `port ${o.port} is in use`
        : (err as Error).message;
    log(`cannot start: ${why.replace(/\s*\n\s*/g, ' | ')}`);
    await stop();
    return EXIT.failed;
  }

  const sig = await stopRequested;
  log(`stopping (${sig})`);
  await stop();
  log('stopped');
  return EXIT.ok;
}
