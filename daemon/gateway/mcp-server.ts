/**
 * A gateway backend as the official SDK's low-level `Server`
 * (@modelcontextprotocol/server v2), which speaks both eras: the `initialize`
 * handshake (2024-11-05 … 2025-11-25) and the stateless 2026-07-28
 * revision. The SDK owns the wire (handshake, `server/discover`, `_meta`,
 * headers, `subscriptions/listen`, cancellation of a request's signal);
 * this file only answers the methods from the backend and maps Albedo's
 * errors onto MCP's:
 *
 * - a name or arguments refused before anything was sent (`ALBEDO_NOT_FOUND`,
 *   `ALBEDO_INVALID_ARGUMENT`, not run) → JSON-RPC -32602 (Invalid Params);
 * - the server's own JSON-RPC error → the same code and message;
 * - anything else on a tools/call (the server unreachable, a timeout, a
 *   transport lost mid-call) → a tool error (`isError`) with Albedo's code and
 *   outcome in `_meta`, so a model sees it: an `unknown` outcome says the call
 *   may have run, and it is never sent again;
 * - the same on a read or a prompt → JSON-RPC -32603 with `{ code, outcome }`.
 */
import {
  inputRequired,
  McpServer,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  type Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { AlbedoError } from '../../protocol/errors.ts';
import { wireCodeOf } from '../../protocol/requester.ts';
import type { GatewayBackend, Json, ListKind, OpContext } from './backend.ts';
import type { Relays } from './relay.ts';

const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;

/** What the server reports of each request it serves (the gateway's client table counts calls). */
export interface ServeHooks {
  /** A tools/call, resources/read or prompts/get was answered. */
  called?(): void;
  /** Where a 2026-07-28 host's requests wait for its answers between rounds (relay.ts); without it, input is refused. */
  relays?: Relays;
  /** Who subscribed to which resource (2025-era hosts), to be told of its updates. */
  subscribers?: Subscribers;
}

/** The hosts subscribed to each resource URI of a gateway. */
export class Subscribers {
  #by = new Map<string, Set<Server>>();
  set(uri: string, server: Server, on: boolean): void {
    const set = this.#by.get(uri) ?? new Set<Server>();
    if (on) set.add(server);
    else set.delete(server);
    if (set.size) this.#by.set(uri, set);
    else this.#by.delete(uri);
  }
  /** Whether anyone still wants `uri`'s updates. */
  wanted(uri: string): boolean {
    return this.#by.has(uri);
  }
  /** A host gone: its subscriptions with it. */
  drop(server: Server): void {
    for (const uri of [...this.#by.keys()]) this.set(uri, server, false);
  }
  notify(uri: string): void {
    for (const s of this.#by.get(uri) ?? []) s.sendResourceUpdated({ uri }).catch(() => {});
  }
}

/** The levels of logging/setLevel, least severe first. */
const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];
/** What a host that set no level is sent. */
const DEFAULT_LEVEL = 'info';
const atLeast = (level: string, min: string): boolean => LEVELS.indexOf(level) >= LEVELS.indexOf(min);
const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel';

function refused(err: unknown): boolean {
  return AlbedoError.is(err) && err.outcome === 'not_run' && (err.code === 'ALBEDO_INVALID_ARGUMENT' || err.code === 'ALBEDO_NOT_FOUND');
}

/** A failure as a JSON-RPC error (reads, prompts, and what a call's client got wrong). */
function protocolError(err: unknown): ProtocolError {
  if (err instanceof ProtocolError) return err;
  // The upstream needs client capabilities this host did not declare (its -32021): said to the host as the same.
  const required =
    AlbedoError.is(err) && err.code === 'ALBEDO_INPUT_REQUIRED' ? (err.data as Json | undefined)?.requiredCapabilities : undefined;
  if (required && typeof required === 'object')
    return new MissingRequiredClientCapabilityError({ requiredCapabilities: required } as never);
  const wire = wireCodeOf(err);
  if (wire !== undefined) {
    const d = (err as AlbedoError).data as { message?: string; data?: unknown };
    return new ProtocolError(wire, d.message ?? 'the server refused the request', d.data);
  }
  if (AlbedoError.is(err)) {
    const data = { code: err.code, outcome: err.outcome };
    return new ProtocolError(refused(err) ? INVALID_PARAMS : INTERNAL_ERROR, err.message, data);
  }
  return new ProtocolError(INTERNAL_ERROR, 'the gateway failed to answer', { code: 'ALBEDO_INTERNAL' });
}

/** A tools/call that failed after it was accepted: a tool error the model can read. */
function toolError(err: AlbedoError): Json {
  const unknown = err.outcome === 'unknown';
  const text = unknown
    ? `${err.code}: ${err.message} (the call may or may not have run on the server; it was not sent again)`
    : `${err.code}: ${err.message}`;
  return { isError: true, content: [{ type: 'text', text }], _meta: { 'albedo/error': { code: err.code, outcome: err.outcome } } };
}

/** The capability a host must have declared for each request an upstream server may make of it. */
const INPUT_CAPABILITY: Record<string, string> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};
/** An answer from a person (elicitation) or a model (sampling) may take this long; the upstream's own deadline and cancel bound it. */
const INPUT_TIMEOUT_MS = 30 * 60_000;

const modernHost = (server: Server): boolean => (server.getNegotiatedProtocolVersion() ?? '') >= '2026-07-28';

/** Whether the host declared what `method` needs (on 2026-07-28, in this request's envelope). */
function declares(caps: Json, method: string): boolean {
  const cap = Object.hasOwn(INPUT_CAPABILITY, method) ? INPUT_CAPABILITY[method] : undefined;
  return cap !== undefined && Object.hasOwn(caps, cap);
}

const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';

/**
 * What the host can be asked for (elicitation, sampling, roots): on 2026-07-28 this request's envelope says it (the
 * stdio entry does not fill `getClientCapabilities()` from it), on 2025 the `initialize` did.
 */
function hostCapabilities(server: Server, ctx: ServerContext): Json {
  const envelope = (ctx.mcpReq.envelope as Json | undefined)?.[META_CLIENT_CAPABILITIES];
  const all = (envelope && typeof envelope === 'object' ? envelope : (server.getClientCapabilities() ?? {})) as Json;
  const out: Json = {};
  for (const cap of Object.values(INPUT_CAPABILITY)) if (Object.hasOwn(all, cap)) out[cap] = all[cap];
  return out;
}

/** What one host request is told while the upstream works: its progress (when it gave a token) and log messages. */
function relayOut(ctx: ServerContext, level: () => string | undefined): Pick<OpContext, 'progress' | 'log'> {
  const token = ctx.mcpReq._meta?.progressToken;
  const notify = (method: string, params: Json): void => void ctx.mcpReq.notify({ method, params } as never).catch(() => {});
  return {
    progress: token === undefined ? undefined : (p) => notify('notifications/progress', { progressToken: token, ...p }),
    log: (m) => {
      // 2026-07-28: only a request that asked (its envelope's level); 2025: the host's logging/setLevel, else info.
      const envelope = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[META_LOG_LEVEL];
      const min = typeof envelope === 'string' ? envelope : envelope === undefined && ctx.mcpReq.envelope ? undefined : level();
      if (min === undefined || !atLeast(m.level, min)) return;
      notify('notifications/message', { level: m.level, ...(m.logger === undefined ? {} : { logger: m.logger }), data: m.data });
    },
  };
}

/** A 2025-era request's context for the backend: its signal, and the host to ask for input on the request's own stream. */
function opContext(server: Server, ctx: ServerContext, level: () => string | undefined): OpContext {
  const capabilities = hostCapabilities(server, ctx);
  return {
    ...relayOut(ctx, level),
    signal: ctx.mcpReq.signal,
    capabilities,
    async input(method, params, signal) {
      const cap = Object.hasOwn(INPUT_CAPABILITY, method) ? INPUT_CAPABILITY[method] : undefined;
      if (!cap || modernHost(server) || !declares(capabilities, method)) {
        throw new AlbedoError('ALBEDO_INPUT_REQUIRED', `the host did not declare ${cap ?? method}`, { outcome: 'not_run' });
      }
      const send = ctx.mcpReq.send as (r: { method: string; params: Json }, o: object) => Promise<unknown>;
      return (await send({ method, params }, { signal, timeout: INPUT_TIMEOUT_MS })) as Json;
    },
  };
}

/**
 * Runs one operation for the host: directly on a 2025-era request (input goes to the host as its own requests), as a
 * relay on a 2026-07-28 one (relay.ts: input goes back as `input_required`, the call waiting for the next round).
 */
async function serve(
  server: Server,
  ctx: ServerContext,
  hooks: ServeHooks & { level(): string | undefined },
  run: (c: OpContext) => Promise<Json>,
): Promise<Json> {
  const relays = hooks.relays;
  if (!relays || !modernHost(server)) return run(opContext(server, ctx, hooks.level));
  const state = ctx.mcpReq.requestState();
  let relay;
  if (state !== undefined) {
    relay = relays.take(state);
    if (!relay) throw new ProtocolError(INVALID_PARAMS, 'the requestState names no request this gateway is waiting on');
    relay.answer((ctx.mcpReq.inputResponses ?? {}) as Record<string, unknown>);
  } else {
    const preset = (ctx.mcpReq.inputResponses ?? {}) as Record<string, unknown>;
    const caps = hostCapabilities(server, ctx);
    relay = relays.start(run, caps, (method) => declares(caps, method), preset);
  }
  const step = await relay.next(ctx.mcpReq.signal, relayOut(ctx, hooks.level));
  if (step.done) return step.result;
  if (step.missing) {
    const requiredCapabilities = Object.fromEntries(step.missing.map((m) => [INPUT_CAPABILITY[m] ?? m, {}]));
    throw new MissingRequiredClientCapabilityError({ requiredCapabilities } as never);
  }
  return inputRequired({ inputRequests: step.inputRequests as never, requestState: relay.state }) as unknown as Json;
}

const strings = (v: unknown): Record<string, string> => {
  const out: Record<string, string> = {};
  if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x;
  return out;
};

/**
 * A fresh server over `backend` (one per HTTP request of the modern era, per
 * 2025-era session, per stdio connection). It is an `McpServer` whose
 * low-level `Server` carries this file's handlers (none of McpServer's own
 * registries), so that the SDK's HTTP entry validates a 2026-07-28 call's
 * `Mcp-Param-*` headers against the tool's input schema (`schemas`: the
 * backend's tools, by name), as it does for the tools an McpServer registers.
 */
export function gatewayServer(backend: GatewayBackend, hooks: ServeHooks = {}, schemas?: ReadonlyMap<string, Json>): McpServer {
  const lists = (['tools', 'resources', 'prompts'] as const).filter((k) => backend.has(k));
  const capabilities: Record<string, unknown> = { logging: {} };
  for (const k of lists) capabilities[k] = { listChanged: true };
  const mcp = new McpServer(backend.info(), { capabilities: { logging: {} }, instructions: backend.instructions() });
  const server = mcp.server;
  if (backend.offers('completions')) capabilities.completions = {};
  if (backend.offers('subscribe')) capabilities.resources = { listChanged: true, subscribe: true };
  server.registerCapabilities(capabilities);
  // The host's own logging level (2025: logging/setLevel); the upstream servers are asked for it too.
  let level: string | undefined;
  const h = { ...hooks, level: () => level ?? DEFAULT_LEVEL };
  server.setRequestHandler('logging/setLevel', async (req) => {
    level = req.params.level;
    await backend.setLogLevel(req.params.level).catch(() => {});
    return {};
  });
  if (backend.offers('completions')) {
    server.setRequestHandler('completion/complete', async (req, ctx) => {
      try {
        return (await backend.complete(req.params as unknown as Json, { signal: ctx.mcpReq.signal })) as never;
      } catch (err) {
        throw protocolError(err);
      }
    });
  }
  if (backend.offers('subscribe') && hooks.subscribers) {
    const subs = hooks.subscribers;
    const subscribe = async (uri: string, on: boolean): Promise<Record<string, never>> => {
      subs.set(uri, server, on);
      // The upstream is asked once per URI: while any host wants it, and no longer once none does.
      if (on || !subs.wanted(uri)) await backend.subscribe(uri, on).catch((err) => Promise.reject(protocolError(err)));
      return {};
    };
    server.setRequestHandler('resources/subscribe', (req) => subscribe(req.params.uri, true));
    server.setRequestHandler('resources/unsubscribe', (req) => subscribe(req.params.uri, false));
  }
  if (schemas) Object.assign(mcp, { toolInputSchemaJson: (name: string) => schemas.get(name) });

  server.setRequestHandler('tools/list', async () => ({ tools: (await backend.listTools()) as never }));
  server.setRequestHandler('tools/call', async (req, ctx) => {
    const p = req.params;
    try {
      const args = (p.arguments ?? {}) as Json;
      return (await serve(server, ctx, h, (c) => backend.callTool(p.name, args, c))) as never;
    } catch (err) {
      const missing = AlbedoError.is(err) && err.code === 'ALBEDO_INPUT_REQUIRED' && (err.data as Json | undefined)?.requiredCapabilities;
      if (err instanceof ProtocolError || missing || refused(err) || wireCodeOf(err) !== undefined || !AlbedoError.is(err)) {
        throw protocolError(err);
      }
      return toolError(err) as never;
    } finally {
      hooks.called?.();
    }
  });
  if (lists.includes('resources')) {
    server.setRequestHandler('resources/list', async () => ({ resources: (await backend.listResources()) as never }));
    server.setRequestHandler('resources/templates/list', async () => ({
      resourceTemplates: (await backend.listResourceTemplates()) as never,
    }));
    server.setRequestHandler('resources/read', async (req, ctx) => {
      try {
        return (await serve(server, ctx, h, (c) => backend.readResource(req.params.uri, c))) as never;
      } catch (err) {
        throw protocolError(err);
      } finally {
        hooks.called?.();
      }
    });
  }
  if (lists.includes('prompts')) {
    server.setRequestHandler('prompts/list', async () => ({ prompts: (await backend.listPrompts()) as never }));
    server.setRequestHandler('prompts/get', async (req, ctx) => {
      try {
        const args = strings(req.params.arguments);
        return (await serve(server, ctx, h, (c) => backend.getPrompt(req.params.name, args, c))) as never;
      } catch (err) {
        throw protocolError(err);
      } finally {
        hooks.called?.();
      }
    });
  }
  return mcp;
}

/** Sends `kind`'s list_changed on a connected 2025-era or stdio server; a closed one is skipped. */
export function notifyListChanged(server: Server, kind: ListKind): void {
  const send =
    kind === 'tools'
      ? server.sendToolListChanged()
      : kind === 'resources'
        ? server.sendResourceListChanged()
        : server.sendPromptListChanged();
  send.catch(() => {});
}
