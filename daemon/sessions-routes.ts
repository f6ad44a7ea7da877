/**
 * The sessions routes (`/v1/sessions`), over `albedo.sessions` through the
 * daemon's registry: open, list, show, close; the tools of the current
 * generation; the context text kept since the last compaction, and the
 * compaction that takes the current one; calls (a tool's `isError` is a
 * result; an error says its `outcome`); activity; reload; a change of the
 * session's own choice of extensions (PATCH); and the events as Server-Sent
 * Events with `Last-Event-ID` replay.
 *
 * A session opened here is leased (session-lease.ts): every request naming it
 * holds it while it runs, an event stream for as long as it stays open, and
 * `POST /v1/sessions/{id}/lease` renews it (or changes its ttl) doing nothing
 * else; no request for the ttl closes it.
 */
import { createRoute, type OpenAPIHono, type RouteConfig } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { AlbedoSession, ExtensionsChange } from '../api/sessions.ts';
import { AlbedoError, type AlbedoErrorCode } from '../protocol/errors.ts';
import { ApiError, toApiError, type FieldPath } from './errors.ts';
import { errorSchema } from './schemas.ts';
import {
  activityBodySchema,
  callBodySchema,
  callErrorSchema,
  callResultSchema,
  compactedBodySchema,
  contextSchema,
  generationSchema,
  idParamSchema,
  leaseBodySchema,
  leaseSchema,
  openBodySchema,
  patchBodySchema,
  searchBodySchema,
  resultPageSchema,
  resultParamSchema,
  resultQuerySchema,
  searchResultSchema,
  sessionListSchema,
  sessionSchema,
  toolsQuerySchema,
  toolsSchema,
} from './session-schemas.ts';
import type { SessionRegistry } from './session-registry.ts';

const json = <S>(schema: S, description: string) => ({ description, content: { 'application/json': { schema } } });
const err = (description: string) => json(errorSchema, description);

const COMMON = {
  401: err("no bearer token, or not this daemon's (ALBEDO_UNAUTHORIZED)"),
  403: err("an Origin other than the daemon's own (ALBEDO_BAD_ORIGIN)"),
  404: err('no open session has this id, or (calls) no advertised tool has this name (ALBEDO_NOT_FOUND)'),
  421: err("a Host that is not a loopback name with the daemon's port (ALBEDO_BAD_HOST)"),
  500: err('a defect in the daemon (ALBEDO_INTERNAL)'),
  503: err('the composer was lost meanwhile (ALBEDO_SERVICE_LOST, outcome unknown: not retried), or the daemon is closing'),
} as const;
const BAD = { 400: err('invalid input: `path` names the field (ALBEDO_INVALID_ARGUMENT, ALBEDO_INVALID_CONFIG)') } as const;
const id = { params: idParamSchema };
const body = <S>(schema: S) => ({ required: true, content: { 'application/json': { schema } } });

const openRoute = createRoute({
  method: 'post',
  path: '/v1/sessions',
  tags: ['sessions'],
  summary: 'Open a session over the configured servers',
  request: { body: body(openBodySchema) },
  responses: {
    201: json(sessionSchema, 'open: servers with a saved catalogue are advertised at once, the others were dialled'),
    ...BAD,
    409: err("a server's catalogue is over the bounds (ALBEDO_CATALOGUE_TOO_LARGE)"),
    ...COMMON,
  },
});
const listRoute = createRoute({
  method: 'get',
  path: '/v1/sessions',
  tags: ['sessions'],
  summary: 'The open sessions',
  responses: { 200: json(sessionListSchema, 'the sessions, oldest first'), ...COMMON },
});
const getRoute = createRoute({
  method: 'get',
  path: '/v1/sessions/{id}',
  tags: ['sessions'],
  summary: 'A session: its servers and their states, warnings, generation',
  request: id,
  responses: { 200: json(sessionSchema, 'the session'), ...COMMON },
});
const patchRoute = createRoute({
  method: 'patch',
  path: '/v1/sessions/{id}',
  tags: ['sessions'],
  summary: "Change the session's own choice of extensions (mcp, editor-mcp): recorded, applied by a reload",
  request: { ...id, body: body(patchBodySchema) },
  responses: {
    200: json(sessionSchema, 'swapped in: the session as GET answers it, its extensions changed'),
    400: err(
      'invalid input, `path` naming the field (ALBEDO_INVALID_ARGUMENT); or the reload failed on the settings (ALBEDO_INVALID_CONFIG): ' +
        'the previous choice and composition stay',
    ),
    409: err("a server's catalogue is over the bounds (ALBEDO_CATALOGUE_TOO_LARGE): the previous choice and composition stay"),
    ...COMMON,
  },
});
const leaseRoute = createRoute({
  method: 'post',
  path: '/v1/sessions/{id}/lease',
  tags: ['sessions'],
  summary: "Renew the session's lease (any request naming the session does too), with a new ttl if given",
  request: { ...id, body: { required: false, content: { 'application/json': { schema: leaseBodySchema } } } },
  responses: {
    200: json(leaseSchema, 'renewed: it runs again from the end of this request'),
    400: err("invalid input (ALBEDO_INVALID_ARGUMENT): a ttlMs out of bounds, or a session that carries no lease (a gateway's, ACP)"),
    ...COMMON,
  },
});
const deleteRoute = createRoute({
  method: 'delete',
  path: '/v1/sessions/{id}',
  tags: ['sessions'],
  summary: 'Close a session (every server of it reaped)',
  request: id,
  responses: { 204: { description: 'closed' }, ...COMMON },
});
const toolsRoute = createRoute({
  method: 'get',
  path: '/v1/sessions/{id}/tools',
  tags: ['sessions'],
  summary: 'The model-facing tools of the current generation',
  request: { ...id, query: toolsQuerySchema },
  responses: { 200: json(toolsSchema, 'the tools'), ...BAD, ...COMMON },
});
const searchRoute = createRoute({
  method: 'post',
  path: '/v1/sessions/{id}/search',
  tags: ['sessions'],
  summary: "Search the session's definitions (what mcp_search_tools does); in a deferred session the matches are loaded",
  request: { ...id, body: body(searchBodySchema) },
  responses: { 200: json(searchResultSchema, 'the best matches, best first, with their definitions'), ...BAD, ...COMMON },
});
const resultRoute = createRoute({
  method: 'get',
  path: '/v1/sessions/{id}/results/{result}',
  tags: ['sessions'],
  summary: 'A page of a result part that was cut to its budget (what mcp_read_result reads)',
  request: { params: resultParamSchema, query: resultQuerySchema },
  responses: { 200: json(resultPageSchema, 'the page'), ...BAD, ...COMMON },
});
const contextRoute = createRoute({
  method: 'get',
  path: '/v1/sessions/{id}/context',
  tags: ['sessions'],
  summary: 'The MCP context text for the system prompt, as of the last compaction',
  request: id,
  responses: { 200: json(contextSchema, 'the kept context ("" when there is nothing to say)'), ...COMMON },
});
const compactedRoute = createRoute({
  method: 'post',
  path: '/v1/sessions/{id}/compacted',
  tags: ['sessions'],
  summary: "The conversation was compacted: the context text becomes the current generation's (recorded with the session)",
  request: { ...id, body: { required: false, content: { 'application/json': { schema: compactedBodySchema } } } },
  responses: { 200: json(contextSchema, 'the text now kept (`contextGeneration` is `generation`)'), ...BAD, ...COMMON },
});
const callRoute = createRoute({
  method: 'post',
  path: '/v1/sessions/{id}/calls',
  tags: ['sessions'],
  summary: 'Call a tool (or read_resource, get_prompt) of the session',
  request: { ...id, body: body(callBodySchema) },
  responses: {
    200: json(callResultSchema, "the result (a tool's isError is a result)"),
    400: json(
      callErrorSchema,
      "invalid input (ALBEDO_INVALID_ARGUMENT, not run): arguments that do not match the tool's input schema are " +
        'refused before the call is sent, `path` and `data` naming the argument',
    ),
    409: err(
      'the server needs the user to sign in (ALBEDO_NEEDS_SIGN_IN, not run); an ACP session whose editor servers are not ' +
        'in force (ALBEDO_OVERLAY_RELOAD_PENDING, ALBEDO_OVERLAY_REATTACH_REQUIRED, not run)',
    ),
    502: err('the server failed the request or cannot be reached: the code says how, `outcome` whether it may have run'),
    504: err('the request timed out (ALBEDO_TIMEOUT: not_run while waiting for the server to start, unknown at the server)'),
    ...COMMON,
    404: json(
      callErrorSchema,
      'no open session has this id, or no single definition has this name (ALBEDO_NOT_FOUND, not run): ' +
        '`data.suggestions` has the nearest names, `data.candidates` those an ambiguous name fits',
    ),
  },
});
const activityRoute = createRoute({
  method: 'post',
  path: '/v1/sessions/{id}/activity',
  tags: ['sessions'],
  summary: 'submit or turn_end: due come-back probes run; turn_end first applies what waited for the end of the turn',
  request: { ...id, body: body(activityBodySchema) },
  responses: { 200: json(generationSchema, 'the generation after it'), ...BAD, ...COMMON },
});
const reloadRoute = createRoute({
  method: 'post',
  path: '/v1/sessions/{id}/reload',
  tags: ['sessions'],
  summary: 'Prepare a new composition from the settings now and swap it in',
  request: id,
  responses: { 200: json(generationSchema, 'swapped in'), ...BAD, ...COMMON },
});
const eventsRoute = createRoute({
  method: 'get',
  path: '/v1/sessions/{id}/events',
  tags: ['sessions'],
  summary:
    "The session's events (Server-Sent Events): server_state, warning, capabilities_changed, catalogue_refreshed, " +
    'server_probed, session_closed',
  request: id,
  responses: {
    200: {
      description: 'an event stream; each event has an id, and a reconnect with Last-Event-ID replays the kept ones after it',
      content: { 'text/event-stream': { schema: { type: 'string' as const } } },
    },
    ...COMMON,
  },
});

/** What a session looks like in the API. */
function dto(s: AlbedoSession) {
  const mode = s.toolsMode;
  return {
    id: s.id,
    profile: s.profile,
    generation: s.generation,
    tools: s.tools().length,
    servers: s.status(),
    warnings: s.warnings(),
    toolsOption: mode.option,
    deferred: mode.deferred,
    ...(s.label === undefined ? {} : { label: s.label }),
    ...(s.cwd === undefined ? {} : { cwd: s.cwd }),
    extensions: s.extensions,
  };
}

/** The context text a session keeps, with the generations. */
const contextOf = (s: AlbedoSession) => ({ generation: s.generation, context: s.context(), contextGeneration: s.contextGeneration });

/** An API error with `data`: a call's name that resolved to nothing, or arguments that do not match the schema. */
class CallApiError extends ApiError {
  readonly data: Record<string, unknown>;

  constructor(status: number, e: AlbedoError, data: Record<string, unknown>, path?: FieldPath) {
    super(status, e.code, e.message, { outcome: e.outcome, ...(path ? { path } : {}) });
    this.data = data;
  }

  override body() {
    const b = super.body();
    return { error: { ...b.error, data: this.data } };
  }
}

/** What of an error's `data` an answer may carry (names and positions only: never a server's text). */
const DATA_FIELDS: Partial<Record<AlbedoErrorCode, readonly string[]>> = {
  ALBEDO_NOT_FOUND: ['name', 'server', 'tool', 'state', 'suggestions', 'ambiguous', 'candidates'],
  ALBEDO_INVALID_ARGUMENT: ['name', 'server', 'tool', 'argument', 'path', 'pointer', 'keyword', 'problems'],
};

/** What of an export's failure an answer carries. */
const EXPORT_FIELDS = ['export', 'argument', 'file', 'errno', 'read', 'leftover'] as const;

/** A call's failure: the server's trouble is a 502; the caller's, the session's and the daemon's keep their own statuses. */
function callError(e: unknown): ApiError {
  const api = toApiError(e);
  if (!AlbedoError.is(e)) return api;
  const own: Partial<Record<AlbedoErrorCode, number>> = {
    ALBEDO_INVALID_ARGUMENT: 400,
    ALBEDO_NOT_FOUND: 404,
    ALBEDO_NEEDS_SIGN_IN: 409,
    ALBEDO_OVERLAY_RELOAD_PENDING: 409,
    ALBEDO_OVERLAY_REATTACH_REQUIRED: 409,
    ALBEDO_TIMEOUT: 504,
    ALBEDO_DEADLINE: 504,
    ALBEDO_SERVICE_LOST: 503,
    ALBEDO_SERVICE_FAILED: 503,
    ALBEDO_CLOSED: 503,
    ALBEDO_INTERNAL: 500,
    ALBEDO_EXPORT_FAILED: 500,
  };
  const status = own[e.code] ?? 502;
  const d = e.data !== null && typeof e.data === 'object' ? (e.data as Record<string, unknown>) : undefined;
  // A read_resource's export (api/resource-export.ts): why, and the file (the caller's own working directory).
  if (d && typeof d.export === 'string') {
    const data: Record<string, unknown> = {};
    for (const k of EXPORT_FIELDS) if (d[k] !== undefined) data[k] = d[k];
    const path = e.code === 'ALBEDO_INVALID_ARGUMENT' && typeof d.argument === 'string' ? ['body', 'arguments', d.argument] : undefined;
    return new CallApiError(status, e, data, path);
  }
  const fields = DATA_FIELDS[e.code];
  // Only the resolution's and the argument check's data (they name `name`); a server's error data stays out.
  if (fields && d && typeof d.name === 'string' && (e.code !== 'ALBEDO_INVALID_ARGUMENT' || Array.isArray(d.problems))) {
    const data: Record<string, unknown> = {};
    for (const k of fields) if (d[k] !== undefined) data[k] = d[k];
    const path =
      e.code === 'ALBEDO_INVALID_ARGUMENT' && Array.isArray(d.path) ? ['body', 'arguments', ...(d.path as FieldPath)] : undefined;
    return new CallApiError(status, e, data, path);
  }
  return new ApiError(status, e.code, e.message, { outcome: e.outcome });
}

/**
 * `gate`: run before a session's call (an ACP session's: refused while its overlay is not in force, as through its
 * gateway; every other session passes).
 */
export function sessionsRoutes(app: OpenAPIHono, registry: SessionRegistry, gate?: (id: string) => void): void {
  const route = <R extends RouteConfig>(r: R, handler: (c: Context) => Promise<Response> | Response): void => {
    app.openapi(r, handler as never);
  };
  const param = (c: Context): string => c.req.param('id') ?? '';
  const show = (s: AlbedoSession) => ({ ...dto(s), lease: registry.lease(s.id) });

  // Every request naming a session holds its lease while it runs (before the route: a refused one counts too), and
  // renews it when it ends. Unknown ids and unleased sessions are not held.
  app.use('/v1/sessions/:id/*', async (c, next) => {
    const release = registry.hold(param(c));
    try {
      await next();
    } finally {
      release();
    }
  });

  route(openRoute, async (c) => {
    const { lease, ...options } = (await c.req.json()) as { lease?: { ttlMs?: number } } & Record<string, unknown>;
    const entry = await registry.openLeased(options, lease?.ttlMs);
    return c.json(show(entry.session), 201);
  });
  route(listRoute, (c) => c.json({ sessions: registry.list().map((e) => show(e.session)) }, 200));
  route(getRoute, (c) => c.json(show(registry.get(param(c)).session), 200));
  route(patchRoute, async (c) => {
    const s = registry.get(param(c)).session;
    await s.setExtensions(((await c.req.json()) as { extensions: ExtensionsChange }).extensions);
    return c.json(show(s), 200);
  });
  route(leaseRoute, async (c) => {
    // The body is optional: without a JSON one, the lease is renewed as it is.
    const isJson = /^application\/json\b/i.test(c.req.header('content-type') ?? '');
    const b = (isJson ? await c.req.json() : {}) as { ttlMs?: number };
    return c.json(registry.renew(param(c), b.ttlMs), 200);
  });
  route(deleteRoute, async (c) => {
    await registry.get(param(c)).session.close();
    return c.body(null, 204);
  });
  route(toolsRoute, (c) => {
    const s = registry.get(param(c)).session;
    const profile = c.req.query('profile');
    if (profile !== undefined && profile !== s.profile) {
      const message =
        `the session's schemas are normalised for ${JSON.stringify(s.profile)}; ` +
        `open a session with profile ${JSON.stringify(profile)} for those`;
      throw new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', message, { path: ['query', 'profile'] });
    }
    const all = c.req.query('all') === 'true';
    // Where each comes from, so no client parses descriptions.
    const tools = (all ? s.allTools() : s.tools()).map((t) => ({
      ...t,
      ...(s.origin(t.name) ?? { server: null, tool: t.name, kind: 'albedo' as const }),
    }));
    const cost = { ...s.cost(), ...(all ? { advertised: s.cost().definitions } : {}) };
    return c.json(
      { generation: s.generation, profile: s.profile, deferred: s.toolsMode.deferred && !all, tools, loaded: s.loaded(), cost },
      200,
    );
  });
  route(resultRoute, (c) => {
    const s = registry.get(param(c)).session;
    const num = (k: string): number | undefined => (c.req.query(k) === undefined ? undefined : Number(c.req.query(k)));
    try {
      return c.json(s.readResult(c.req.param('result') ?? '', num('offset') ?? 0, num('limit')), 200);
    } catch (e) {
      const api = callError(e);
      throw api.code === 'ALBEDO_INVALID_ARGUMENT' ? new ApiError(400, api.code, api.message, { path: ['query', 'offset'] }) : api;
    }
  });
  route(searchRoute, async (c) => {
    const s = registry.get(param(c)).session;
    const b = (await c.req.json()) as { query: string; limit?: number };
    try {
      return c.json({ tools: s.search(b.query, b.limit), loaded: s.loaded() }, 200);
    } catch (e) {
      throw callError(e);
    }
  });
  route(contextRoute, (c) => {
    const s = registry.get(param(c)).session;
    return c.json(contextOf(s), 200);
  });
  route(compactedRoute, async (c) => {
    const s = registry.get(param(c)).session;
    await s.compacted();
    return c.json(contextOf(s), 200);
  });
  route(callRoute, async (c) => {
    const s = registry.get(param(c)).session;
    const b = (await c.req.json()) as { name: string; arguments?: Record<string, unknown>; timeoutMs?: number };
    // A client that goes away cancels the call (its outcome is then unknown to nobody).
    const opts = b.timeoutMs === undefined ? { signal: c.req.raw.signal } : { timeoutMs: b.timeoutMs, signal: c.req.raw.signal };
    try {
      gate?.(s.id);
      return c.json({ result: await s.call(b.name, b.arguments, opts) }, 200);
    } catch (e) {
      throw callError(e);
    }
  });
  route(activityRoute, async (c) => {
    const s = registry.get(param(c)).session;
    await s.activity(((await c.req.json()) as { kind: 'submit' | 'turn_end' }).kind);
    return c.json({ generation: s.generation }, 200);
  });
  route(reloadRoute, async (c) => {
    const s = registry.get(param(c)).session;
    await s.reload();
    return c.json({ generation: s.generation }, 200);
  });
  route(eventsRoute, (c) => {
    const id = param(c);
    const { log } = registry.get(id);
    const last = c.req.header('last-event-id');
    return streamSSE(c, async (stream) => {
      const queue = [...log.since(last)];
      let wake: (() => void) | undefined;
      // A reader too slow for the session (its queue past what the log keeps): its stream ends, dropping what it holds, rather than the
      // daemon buffering for it without bound; the client resumes with Last-Event-ID. abort() also ends a write blocked on it.
      const off = log.subscribe((e) => {
        if (stream.aborted) return;
        queue.push(e);
        if (queue.length > log.replayMax) {
          queue.length = 0;
          stream.abort();
        }
        wake?.();
      });
      stream.onAbort(() => wake?.());
      // The stream holds the session's lease for as long as it stays open: a client that follows it keeps it.
      const release = registry.hold(id, 'streams');
      try {
        while (!stream.aborted) {
          while (queue.length && !stream.aborted) {
            const e = queue.shift()!;
            await stream.writeSSE({ id: e.id, event: e.event, data: JSON.stringify(e.data) });
            if (e.event === 'session_closed') return;
          }
          if (log.closed) return;
          // Wakes for the next event, or every 15 s for a comment that keeps idle proxies and clients from timing out.
          await new Promise<void>((r) => {
            wake = r;
            setTimeout(r, 15_000).unref();
          });
          wake = undefined;
          if (!queue.length && !stream.aborted) await stream.write(': keep-alive\n\n');
        }
      } finally {
        off();
        release();
      }
    });
  });
}
