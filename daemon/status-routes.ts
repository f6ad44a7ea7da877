/**
 * `GET /v1/health` — the one route without a token (guard.ts lets exactly
 * this path through, Host and Origin still checked): it says the daemon is
 * up and its version, nothing else, so anything that can reach the port
 * learns nothing it could not learn from the port answering. With
 * `?nonce=N` it also answers `proof`, an HMAC of N under the token: a client
 * (the CLI) checks it before it sends the token, so a process that took the
 * port a stopped daemon left (daemon.json still naming it) gets no token.
 *
 * `GET /v1/status` — with the token: the process (pid, uptime, home, port),
 * how many sessions are open, servers configured and sign-ins pending, and
 * each service's worker slots as the kernel supervises them.
 */
import { createHmac } from 'node:crypto';
import { createRoute, type OpenAPIHono, type RouteConfig } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { Kernel } from '../kernel/kernel.ts';
import { HEALTH_PATH } from './guard.ts';
import { errorSchema, healthQuerySchema, healthSchema, statusSchema } from './schemas.ts';
import { settingsView } from './servers.ts';

const json = <S>(schema: S, description: string) => ({ description, content: { 'application/json': { schema } } });
const err = (description: string) => json(errorSchema, description);

/** The services the daemon runs (oauth from the first sign-in on). */
export const SERVICES = ['transport', 'settings', 'catalogue', 'composer', 'oauth'] as const;

const health = createRoute({
  method: 'get',
  path: HEALTH_PATH,
  tags: ['daemon'],
  summary: 'Whether the daemon is up (no token needed; says nothing private)',
  security: [],
  request: { query: healthQuerySchema },
  responses: {
    200: json(healthSchema, 'up'),
    400: err('a nonce that is not 16 to 128 hex characters (ALBEDO_INVALID_ARGUMENT, path ["query", "nonce"])'),
    403: err("an Origin other than the daemon's own (ALBEDO_BAD_ORIGIN)"),
    421: err("a Host that is not a loopback name with the daemon's port (ALBEDO_BAD_HOST)"),
  },
});
const status = createRoute({
  method: 'get',
  path: '/v1/status',
  tags: ['daemon'],
  summary: "The daemon's process, counts and service workers",
  responses: {
    200: json(statusSchema, 'the status'),
    401: err("no bearer token, or not this daemon's (ALBEDO_UNAUTHORIZED)"),
    403: err("an Origin other than the daemon's own (ALBEDO_BAD_ORIGIN)"),
    421: err("a Host that is not a loopback name with the daemon's port (ALBEDO_BAD_HOST)"),
    500: err('a defect in the daemon (ALBEDO_INTERNAL)'),
    503: err('the settings service is not available (ALBEDO_SERVICE_LOST, ALBEDO_CLOSED)'),
  },
});

/** The health proof: base64url(HMAC-SHA256(key = the token's UTF-8 bytes, message = the nonce as sent)). */
export function healthProof(token: string, nonce: string): string {
  return createHmac('sha256', Buffer.from(token, 'utf8')).update(nonce, 'utf8').digest('base64url');
}

export interface StatusOptions {
  kernel: Kernel;
  /** The bearer token, the key of the health proof. */
  token: string;
  version: string;
  home: string;
  port(): number;
  startedAt: number;
  sessions(): number;
  signIns(): number;
}

/** Adds /v1/health and /v1/status to `app`. */
export function statusRoutes(app: OpenAPIHono, o: StatusOptions): void {
  const route = <R extends RouteConfig>(r: R, handler: (c: Context) => Promise<Response> | Response): void => {
    app.openapi(r, handler as never);
  };
  route(health, (c) => {
    const { nonce } = c.req.valid('query' as never) as { nonce?: string };
    const body = { ok: true as const, version: o.version };
    return c.json(nonce === undefined ? body : { ...body, proof: healthProof(o.token, nonce) }, 200);
  });
  route(status, async (c) => {
    const view = await settingsView(o.kernel);
    const servers = Object.values(view.servers);
    const services: Record<string, unknown[]> = {};
    for (const name of SERVICES) {
      services[name] = o.kernel.slots(name).map((s) => ({
        instance: s.instance,
        state: s.state,
        healthy: s.healthy,
        incarnation: s.incarnation,
        inflight: s.inflight,
        keys: s.keys.length,
      }));
    }
    return c.json(
      {
        pid: process.pid,
        version: o.version,
        port: o.port(),
        home: o.home,
        startedAt: new Date(o.startedAt).toISOString(),
        uptimeMs: Math.max(0, Math.round(Date.now() - o.startedAt)),
        sessions: o.sessions(),
        servers: { total: servers.length, enabled: servers.filter((s) => s.enabled).length },
        signIns: o.signIns(),
        services,
      },
      200,
    );
  });
}
