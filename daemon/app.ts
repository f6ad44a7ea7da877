/**
 * The daemon's HTTP application: Hono with @hono/zod-openapi, chosen
 * because one set of zod schemas both validates each request and generates
 * the OpenAPI 3.1 document (`GET /openapi.json`), and because Hono runs on
 * Node's own http server (@hono/node-server) with no framework process
 * model of its own. The guard (guard.ts) has already admitted the request;
 * here every failure becomes the API's error body (errors.ts). A JSON body
 * nested deeper than MAX_DEPTH is refused before any route sees it (the
 * merge patch and the thread hops recurse), and a defect — anything thrown
 * that is not an API error — is logged, by name and stack frames only.
 */
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { depthOf, MAX_DEPTH } from '../protocol/bounds.ts';
import { AlbedoError } from '../protocol/errors.ts';
import { acpRoutes } from './acp-routes.ts';
import type { AcpSessions } from './acp/sessions.ts';
import { authRoutes } from './auth-routes.ts';
import { catalogueRoutes } from './catalogue-routes.ts';
import { ApiError, toApiError, validationError, type Location } from './errors.ts';
import { gatewayRoutes, type GatewayClient } from './gateway-routes.ts';
import type { GatewayTokens } from './gateway-tokens.ts';
import type { Logins } from './logins.ts';
import type { Reader } from './servers.ts';
import { settingsRoutes } from './settings-routes.ts';
import { statusRoutes, type StatusOptions } from './status-routes.ts';
import { sessionsRoutes } from './sessions-routes.ts';
import type { SessionRegistry } from './session-registry.ts';
import { parseBody } from './validate.ts';
import { uiRoutes } from './ui-routes.ts';
import { UiAuth } from './ui-auth.ts';
import type { SettingsWrites } from './writes.ts';

/** A settings body is a few KiB; this bounds what a client can make the daemon buffer. */
export const MAX_BODY_BYTES = 1024 * 1024;

const LOCATIONS: Record<string, Location> = { json: 'body', param: 'params', query: 'query', header: 'headers' };

/** The media types Hono's validator reads as JSON (application/json, application/merge-patch+json, …). */
const JSON_TYPE = /^application\/([\w.-]+\+)?json$/i;

/** How deep a request body may nest: the bound on catalogues, so a tool's arguments have the room its schema can describe. */
export const MAX_BODY_DEPTH = MAX_DEPTH;

/**
 * A defect as one log line: the error's name (and code) and its stack
 * frames, never its message (it may quote a request or a secret), nor a
 * line of the stack that is not a frame.
 */
export function describeDefect(err: unknown): string {
  if (!(err instanceof Error)) return `a thrown ${err === null ? 'null' : typeof err}`;
  const name = AlbedoError.is(err) ? `${err.name} ${err.code}` : err.name;
  const stack = err.stack ?? '';
  // V8 starts the stack with "Name: message"; what follows the message is the frames. A message changed since cannot be
  // told from frames, so then none are given.
  const at = err.message ? stack.indexOf(err.message) : stack.indexOf('\n');
  const rest = at < 0 ? '' : stack.slice(at + err.message.length);
  const frames = rest
    .split('\n')
    .filter((l) => /^\s+at /.test(l))
    .map((l) => l.trim())
    .slice(0, 12);
  return frames.length ? `${name} ${frames.join(' < ')}` : `${name} (no stack)`;
}

function send(c: Context, e: ApiError): Response {
  return c.json(e.body(), e.status as 400);
}

export interface AppOptions {
  reader: Reader;
  writes: SettingsWrites;
  registry: SessionRegistry;
  logins: Logins;
  version: string;
  /** For GET /v1/status, and the token for GET /v1/health's proof. */
  status: Pick<StatusOptions, 'home' | 'port' | 'startedAt' | 'token'>;
  /** The daemon's log: one line per defect (a 500 is never silent). */
  log?: (line: string) => void;
  /** The web pane's links and cookie sessions, shared with the guard (default: a set of its own, for an app built in a test). */
  ui?: UiAuth;
  /** The gateways' tokens (gateway-tokens.ts): without them, no /v1/gateways routes. */
  gatewayTokens?: GatewayTokens;
  /** Who is connected to gateway `name` now (GET /v1/gateways); none when absent. */
  gatewayClients?: (name: string) => GatewayClient[];
  /** The ACP sessions (acp/sessions.ts): without them, no /v1/acp routes. */
  acp?: AcpSessions;
}

export function createApp(o: AppOptions): OpenAPIHono {
  const app = new OpenAPIHono({
    defaultHook: async (result, c) => {
      if (result.success) return;
      const where = LOCATIONS[result.target] ?? 'body';
      // A PUT body is one of two variants: name the field of the variant it means (type, else url → http), not the union's first.
      if (where === 'body' && c.req.method === 'PUT' && !c.req.path.startsWith('/v1/acp/')) {
        try {
          parseBody(await c.req.json());
        } catch (err) {
          if (err instanceof ApiError) return send(c, err);
        }
      }
      return send(c, validationError(where, result.error));
    },
  });

  app.use(
    '*',
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: (c) => send(c, new ApiError(413, 'ALBEDO_TOO_LARGE', `the body is over ${MAX_BODY_BYTES} bytes`, { path: ['body'] })),
    }),
  );
  // Every JSON body, whatever the route: parsed once here (Hono keeps the parse for the route) and measured without recursion.
  app.use('*', async (c, next) => {
    const type = (c.req.header('content-type') ?? '').split(';')[0]!.trim();
    if (!c.req.raw.body || !JSON_TYPE.test(type)) return next();
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      // Not JSON: the route's validator answers that (400 at ["body"]).
      return next();
    }
    if (depthOf(body, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
      return send(
        c,
        new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', `the body nests deeper than ${MAX_BODY_DEPTH} levels`, { path: ['body'] }),
      );
    }
    return next();
  });

  settingsRoutes(app, { reader: o.reader, writes: o.writes });
  catalogueRoutes(app, o.reader.kernel);
  const acp = o.acp;
  sessionsRoutes(app, o.registry, acp ? (id) => acp.gate(id) : undefined);
  authRoutes(app, o.logins);
  if (o.acp) acpRoutes(app, o.acp, o.status.home);
  if (o.gatewayTokens) gatewayRoutes(app, { kernel: o.reader.kernel, tokens: o.gatewayTokens, clients: o.gatewayClients });
  uiRoutes(app, o.ui ?? new UiAuth({ port: o.status.port }));
  statusRoutes(app, {
    ...o.status,
    kernel: o.reader.kernel,
    version: o.version,
    sessions: () => o.registry.list().length,
    signIns: () => o.logins.pending,
  });

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'the token of $ALBEDO_HOME/daemon.json',
  });
  app.doc31('/openapi.json', {
    openapi: '3.1.0',
    info: {
      title: 'Albedo daemon',
      version: o.version,
      description:
        "The local HTTP API of `albedo daemon`: loopback only, a bearer token (GET /v1/health aside) or the web pane's cookie, " +
        'a loopback Host, no foreign Origin.',
    },
    servers: [{ url: 'http://127.0.0.1:{port}', variables: { port: { default: '0', description: 'the port in daemon.json' } } }],
    security: [{ bearer: [] }, { cookie: [] }],
  });

  app.notFound((c) => send(c, new ApiError(404, 'ALBEDO_NOT_FOUND', `no route ${c.req.method} ${new URL(c.req.url).pathname}`)));
  app.onError((err, c) => {
    if (err instanceof HTTPException) {
      if (err.status === 415)
        return send(c, new ApiError(415, 'ALBEDO_INVALID_ARGUMENT', 'the body must be JSON', { path: ['headers', 'content-type'] }));
      if (err.status === 400)
        return send(c, new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', 'the body is not valid JSON', { path: ['body'] }));
      return send(c, new ApiError(err.status, 'ALBEDO_INVALID_ARGUMENT', 'the request cannot be read'));
    }
    const e = toApiError(err);
    if (!(err instanceof ApiError) && e.status === 500)
      o.log?.(`internal error on ${c.req.method} ${c.req.routePath}: ${describeDefect(err)}`);
    return send(c, e);
  });
  return app;
}
