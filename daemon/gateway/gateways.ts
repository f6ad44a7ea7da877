/**
 * The daemon's gateways: each defined in extensions.json (`gateways`, read
 * through the settings service) or named on a command line (`albedo gateway
 * --server NAME`: a pass-through of that server), served by one backend over
 * one ordinary session of the daemon, opened at the first client and kept
 * while the daemon runs, so the next client (a host restarting its command)
 * is answered from it at once. The session carries a label
 * (`gateway:NAME#DIGEST` or `server:NAME`): a restarted daemon restores it
 * with the others and finds it here by that label; a definition that changed
 * meanwhile has another digest, so its old session is closed and a new one
 * opened. A settings change that alters or removes a gateway closes its
 * session and every client's connection (they reconnect to the new one).
 */
import { createHash } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { Kernel } from '../../kernel/kernel.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import { gatewayLabel, gatewaySchema, type Gateway } from '../../protocol/gateway.ts';
import type { SessionOptions } from '../../protocol/composer.ts';
import type { AlbedoSession } from '../../api/sessions.ts';
import type { GatewayBackend, OpContext } from './backend.ts';
import { ClientTable, type GatewayClient } from './clients.ts';
import { ComposedBackend } from './composed.ts';
import { GatewayHttp } from './http.ts';
import { PassThroughBackend } from './pass-through.ts';
import { Subscribers } from './mcp-server.ts';

const SETTINGS_TIMEOUT_MS = 30_000;
/** A pass-through result is the server's own: the session's cut applies only past this (the largest budget a session takes). */
const PASS_THROUGH_BUDGET = 1_000_000;

/**
 * What a gateway's servers are told the client can do: everything a host may answer. Each request is handed to the
 * host whose call it belongs to (input()); one whose host did not declare the capability is refused then.
 */
const ASK_HOST = { elicitation: {}, sampling: {}, roots: {} };

/** `session`: an ACP session's gateway, served over that (existing) session rather than one opened here. */
export type GatewayTarget = { gateway: string } | { server: string } | { session: string };

const keyOf = (t: GatewayTarget): string =>
  'gateway' in t ? `gateway:${t.gateway}` : 'server' in t ? `server:${t.server}` : `session:${t.session}`;

/** The ACP sessions (daemon/acp/sessions.ts), as their gateways use them. */
export interface SessionGateways {
  /** ACP session `id`'s session, if there is one. */
  find(id: string): { session: AlbedoSession } | undefined;
  /** Throws (not run) while the session's overlay is not in force. */
  gate(id: string): void;
}

interface Live {
  key: string;
  label: string;
  backend: GatewayBackend;
  clients: ClientTable;
  http: GatewayHttp | undefined;
  /** The stdio connections it serves (ended with it). */
  sockets: Set<Duplex>;
  /** Its hosts' resource subscriptions. */
  subscribers: Subscribers;
}

/** The daemon's sessions (daemon/session-registry.ts), as a gateway uses them. */
export interface SessionHost {
  list(): Array<{ session: AlbedoSession }>;
  open(options: SessionOptions): Promise<{ session: AlbedoSession }>;
}

export interface GatewaysInit {
  kernel: Kernel;
  registry: SessionHost;
  version: string;
  log(line: string): void;
  /** ACP sessions, served at `/mcp/sessions/{id}`. */
  acp?: SessionGateways;
}

const stable = (v: unknown): string =>
  JSON.stringify(v, (_k, x) =>
    x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x,
  );

const digestOf = (g: Gateway): string => createHash('sha256').update(stable(g)).digest('hex').slice(0, 12);

export class Gateways {
  #init: GatewaysInit;
  #live = new Map<string, Live>();
  #opening = new Map<string, Promise<Live>>();
  #off: () => void;
  #closed = false;

  constructor(init: GatewaysInit) {
    this.#init = init;
    const offs = [
      init.kernel.on('settings', 'settings/changed', () => void this.refresh().catch(() => {})),
      init.kernel.on('transport', 'connection/log', (e) => this.log(e)),
      init.kernel.on('transport', 'connection/resource-updated', (e) => this.#updated(e)),
    ];
    this.#off = () => offs.forEach((off) => off());
  }

  /** The gateways defined now (a switched-off one included), by name. */
  async definitions(): Promise<Record<string, Gateway>> {
    const view = await this.#init.kernel.call('settings', 'settings/get', {}, { timeoutMs: SETTINGS_TIMEOUT_MS });
    const raw = (view as { gateways?: Record<string, unknown> }).gateways ?? {};
    const out: Record<string, Gateway> = Object.create(null);
    for (const [name, g] of Object.entries(raw)) {
      const r = gatewaySchema.safeParse(g);
      if (r.success) out[name] = r.data;
    }
    return out;
  }

  /** Closes the gateways whose definition changed or went (their clients reconnect to what is defined now). */
  async refresh(): Promise<void> {
    const defs = await this.definitions();
    for (const live of [...this.#live.values()]) {
      if (!live.key.startsWith('gateway:')) continue;
      const name = live.key.slice('gateway:'.length);
      const g = defs[name];
      if (g && g.enabled && this.#labelOf(name, g) === live.label) continue;
      this.#init.log(`gateway ${name}: ${g ? 'its definition changed' : 'removed'}; its clients reconnect`);
      await this.#drop(live);
    }
  }

  #labelOf(name: string, g: Gateway): string {
    return `${gatewayLabel(name)}#${digestOf(g)}`;
  }

  /**
   * Opens every enabled gateway's session now, in the background (the daemon's start): a gateway is a long-lived
   * composition, so its first client is answered from a session already open — its saved catalogues at once — instead
   * of waiting for it to open. One that cannot open is said in the log and tried again by its first client.
   */
  async warm(): Promise<void> {
    const defs = await this.definitions();
    await Promise.all(
      Object.entries(defs)
        .filter(([, g]) => g.enabled)
        .map(([name]) =>
          this.backend({ gateway: name }).catch((err: unknown) => {
            const code = AlbedoError.is(err) ? err.code : 'ALBEDO_INTERNAL';
            this.#init.log(`gateway ${name}: its session could not be opened at start (${code}); its first client tries again`);
          }),
        ),
    );
  }

  /** The backend of `target`, its session opened (or found) first; null: no such gateway (or it is switched off). */
  async backend(target: GatewayTarget): Promise<Live | null> {
    if (this.#closed) throw new AlbedoError('ALBEDO_CLOSED', 'the daemon is stopping', { outcome: 'not_run' });
    const key = keyOf(target);
    const live = this.#live.get(key);
    if (live && !live.backend.closed) return live;
    let opening = this.#opening.get(key);
    if (!opening) {
      opening = this.#open(key, target).finally(() => this.#opening.delete(key));
      this.#opening.set(key, opening);
    }
    return opening.then(
      (l) => l,
      (err) => {
        if (AlbedoError.is(err) && err.code === 'ALBEDO_NOT_FOUND') return null;
        throw err;
      },
    );
  }

  /** The HTTP face of a defined gateway; null: no such gateway. */
  async http(name: string): Promise<GatewayHttp | null> {
    const live = await this.backend({ gateway: name });
    if (!live) return null;
    live.http ??= new GatewayHttp(live.backend, live.clients, live.subscribers);
    return live.http;
  }

  /** The HTTP face of ACP session `id`'s gateway; null: no such ACP session. */
  async sessionHttp(id: string): Promise<GatewayHttp | null> {
    const live = await this.backend({ session: id });
    if (!live) return null;
    live.http ??= new GatewayHttp(live.backend, live.clients, live.subscribers);
    return live.http;
  }

  /** An ACP session's gateway: a backend over its session, which stays the ACP side's (never closed from here). */
  #openSession(key: string, id: string): Live {
    const acp = this.#init.acp;
    const found = acp?.find(id);
    if (!acp || !found) throw new AlbedoError('ALBEDO_NOT_FOUND', 'no such ACP session', { outcome: 'not_run' });
    const session = found.session;
    const backend = new ComposedBackend(session, {
      name: 'session',
      version: this.#init.version,
      activity: false,
      gate: () => acp.gate(id),
    });
    const live: Live = {
      key,
      label: key,
      backend,
      clients: new ClientTable(),
      http: undefined,
      sockets: new Set(),
      subscribers: new Subscribers(),
    };
    void backend.setLogLevel('info').catch(() => {});
    this.#live.set(key, live);
    session.on((e) => {
      if (e.type !== 'closed' || this.#live.get(key) !== live) return;
      void this.#drop(live).catch(() => {});
    });
    return live;
  }

  async #open(key: string, target: GatewayTarget): Promise<Live> {
    if ('session' in target) return this.#openSession(key, target.session);
    let label: string;
    let options: SessionOptions;
    let server: string | undefined;
    if ('gateway' in target) {
      const g = (await this.definitions())[target.gateway];
      if (!g || !g.enabled) throw new AlbedoError('ALBEDO_NOT_FOUND', 'no such gateway', { outcome: 'not_run' });
      label = this.#labelOf(target.gateway, g);
      server = g.server;
      options =
        g.server !== undefined
          ? {
              servers: { include: [g.server] },
              resultBudget: g.resultBudget ?? PASS_THROUGH_BUDGET,
              label,
              capabilities: ASK_HOST,
              turns: false,
            }
          : {
              servers: g.servers,
              profile: g.profile,
              tools: g.tools,
              contextBudget: g.contextBudget,
              resultBudget: g.resultBudget,
              label,
              capabilities: ASK_HOST,
              turns: false,
            };
    } else {
      server = target.server;
      label = `server:${target.server}`;
      options = { servers: { include: [target.server] }, resultBudget: PASS_THROUGH_BUDGET, label, capabilities: ASK_HOST, turns: false };
    }
    // A session a previous daemon left under this label is taken over; one left under an older definition is closed.
    const prefix = key.startsWith('gateway:') ? `${gatewayLabel(key.slice(8))}#` : label;
    let session;
    for (const e of this.#init.registry.list()) {
      const l = e.session.label;
      if (l === undefined || (l !== label && !l.startsWith(prefix))) continue;
      if (l === label && !session) session = e.session;
      else await e.session.close().catch(() => {});
    }
    session ??= (await this.#init.registry.open(options)).session;
    const backend =
      server !== undefined
        ? new PassThroughBackend(session, { kernel: this.#init.kernel, server })
        : new ComposedBackend(session, { name: key.slice(key.indexOf(':') + 1), version: this.#init.version });
    const live: Live = {
      key,
      label,
      backend,
      clients: new ClientTable(),
      http: undefined,
      sockets: new Set(),
      subscribers: new Subscribers(),
    };
    // Upstream log messages at info and above reach the hosts whose calls are in flight (each host filters by its own level).
    void backend.setLogLevel('info').catch(() => {});
    if (this.#closed) {
      await session.close().catch(() => {});
      throw new AlbedoError('ALBEDO_CLOSED', 'the daemon is stopping', { outcome: 'not_run' });
    }
    this.#live.set(key, live);
    // Its session closed by someone else (DELETE /v1/sessions/{id}, the composer lost): its clients are ended too, as for
    // a changed definition, rather than served by a backend that only fails; the next client opens a new session.
    session.on((e) => {
      if (e.type !== 'closed' || this.#closed || this.#live.get(key) !== live) return;
      this.#init.log(`${key}: its session was closed; its clients reconnect`);
      void this.#drop(live).catch(() => {});
    });
    return live;
  }

  /** A stdio connection of `target`'s gateway: ended when the gateway is dropped or the daemon stops. */
  track(target: GatewayTarget, socket: Duplex): void {
    const live = this.#live.get(keyOf(target));
    if (!live) return void socket.destroy();
    live.sockets.add(socket);
    socket.once('close', () => live.sockets.delete(socket));
  }

  async #drop(live: Live): Promise<void> {
    if (this.#live.get(live.key) === live) this.#live.delete(live.key);
    for (const s of live.sockets) s.destroy();
    await live.http?.close().catch(() => {});
    if (live.key.startsWith('session:')) return;
    const s = (live.backend as ComposedBackend | PassThroughBackend).session;
    await s.close().catch(() => {});
  }

  /**
   * A request an upstream server made of the client (AlbedoOptions.sessionInput): handed to the host whose call to
   * that server is in flight on a gateway; none (a daemon session's server, or no call in flight) is refused, and the
   * server hears Method not found.
   */
  async input(r: {
    connection: string;
    key?: string;
    context?: unknown;
    method: string;
    params: Record<string, unknown>;
    signal: AbortSignal;
  }) {
    // The question names the call it belongs to (its progress token, through the API): that call's host is asked.
    const own = r.context as OpContext | undefined;
    if (own && typeof own.input === 'function') return own.input(r.method, r.params, r.signal, r.key);
    // Not known by its call: the one gateway session holding the connection is asked. A connection shared by
    // several sessions (services/composer/shared-port.ts) is refused rather than asked of the wrong client.
    const holders = new Set<unknown>();
    let asked: OpContext['input'] | undefined;
    for (const live of this.#live.values()) {
      const session = (live.backend as ComposedBackend | PassThroughBackend).session;
      for (const server of live.backend.servers()) {
        if (session.connectionOf(server) !== r.connection) continue;
        holders.add(session);
        asked ??= live.backend.inputFor(server);
      }
    }
    if (asked && holders.size === 1) return asked(r.method, r.params, r.signal, r.key);
    const why = holders.size > 1 ? 'the connection is shared and the request names no call' : 'no gateway client to ask';
    throw new AlbedoError('ALBEDO_INPUT_REQUIRED', why, { outcome: 'not_run' });
  }

  /** An upstream log message of connection `id`: to the hosts whose calls to that server are in flight. */
  log(e: { id: string; level: string; logger?: string; data: unknown }): void {
    const to: Array<() => void> = [];
    const holders = new Set<unknown>();
    for (const live of this.#live.values()) {
      const session = (live.backend as ComposedBackend | PassThroughBackend).session;
      for (const server of live.backend.servers()) {
        if (session.connectionOf(server) !== e.id) continue;
        holders.add(session);
        for (const c of live.backend.callsOn(server)) to.push(() => c.log?.(e));
      }
    }
    // A connection several sessions share (services/composer/shared-port.ts): a message names no call, so it could
    // be another session's; it is dropped rather than shown to the wrong client.
    if (holders.size > 1) return;
    for (const send of to) send();
  }

  #updated(e: { id: string; uri: string }): void {
    for (const live of this.#live.values()) {
      const session = (live.backend as ComposedBackend | PassThroughBackend).session;
      if (live.backend.servers().some((s) => session.connectionOf(s) === e.id)) live.subscribers.notify(e.uri);
    }
  }

  /**
   * Ends every open connection of gateway `name` (a token of it was revoked): its stdio sockets, its 2025 sessions and
   * 2026-07-28 listen streams. Its session stays; a client whose token still holds connects again.
   */
  async disconnect(name: string): Promise<void> {
    const live = this.#live.get(`gateway:${name}`);
    if (!live) return;
    for (const s of live.sockets) s.destroy();
    const http = live.http;
    live.http = undefined;
    await http?.close().catch(() => {});
  }

  /** Who uses gateway `name` now (none when it was never opened). */
  clients(name: string): GatewayClient[] {
    return this.#live.get(`gateway:${name}`)?.clients.list() ?? [];
  }

  /** Every live gateway and its clients (`server:NAME` for a command line's pass-through). */
  all(): Array<{ key: string; clients: GatewayClient[] }> {
    return [...this.#live.values()].map((l) => ({ key: l.key, clients: l.clients.list() }));
  }

  /** Ends every client's connection; the sessions are the daemon's and close with it. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#off();
    for (const l of this.#live.values()) for (const s of l.sockets) s.destroy();
    await Promise.all([...this.#live.values()].map((l) => l.http?.close().catch(() => {})));
  }
}
