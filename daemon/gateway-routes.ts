/**
 * The gateways routes (`/v1/gateways`): the `gateways` section of the
 * settings (protocol/gateway.ts) and each gateway's own tokens
 * (gateway-tokens.ts). Reads come from `settings/get`; a write is one
 * `settings/apply` of a `sections` plan (the settings service's transaction:
 * the file re-read, the gateway replaced or removed, the rest of the file
 * kept), and, with If-Match or If-None-Match, the definition the
 * precondition was checked against goes with the plan (`expect`), so a
 * change landing between the check and the write refuses it (412).
 *
 * A gateway naming a server that is not configured is valid (the server may
 * come later): its `problems` say so. A token appears once, in the answer to
 * `POST …/tokens`; every other answer shows its id and when it was made.
 */
import { createRoute, z, type OpenAPIHono, type RouteConfig } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { Kernel } from '../kernel/kernel.ts';
import { AlbedoError } from '../protocol/errors.ts';
import { gatewayNameProblem, gatewaySchema, type Gateway } from '../protocol/gateway.ts';
import type { SettingsIssue } from '../protocol/settings.ts';
import type { ApplyParams, ApplyResult, SettingsView } from '../protocol/services/settings.ts';
import { ApiError, toApiError, validationError } from './errors.ts';
import { checkPreconditions, etagOf, type Preconditions } from './etag.ts';
import type { GatewayTokens } from './gateway-tokens.ts';
import { errorSchema, preconditionHeadersSchema } from './schemas.ts';
import { SETTINGS_TIMEOUT_MS, settingsView } from './servers.ts';

import type { GatewayClient } from './gateway/clients.ts';
export type { GatewayClient } from './gateway/clients.ts';

export interface GatewayRoutesOptions {
  kernel: Kernel;
  tokens: Pick<GatewayTokens, 'mint' | 'revoke' | 'list' | 'usable'>;
  /** Who is connected to gateway `name` now; none when absent. */
  clients?: (name: string) => GatewayClient[];
}

const json = <S>(schema: S, description: string) => ({ description, content: { 'application/json': { schema } } });
const err = (description: string) => json(errorSchema, description);
const COMMON = {
  401: err("no bearer token, or not this daemon's (ALBEDO_UNAUTHORIZED); a gateway's own token opens no route here"),
  403: err("an Origin other than the daemon's own (ALBEDO_BAD_ORIGIN)"),
  421: err("a Host that is not a loopback name with the daemon's port (ALBEDO_BAD_HOST)"),
  500: err('a defect in the daemon (ALBEDO_INTERNAL)'),
  503: err('the settings service is not available (ALBEDO_SERVICE_LOST, ALBEDO_CLOSED)'),
} as const;
const etagHeader = {
  ETag: { description: 'the version of the definition; send it back as If-Match', schema: { type: 'string' as const } },
};

const problemSchema = z.object({
  code: z.enum(['server_not_configured', 'server_disabled']),
  path: z.array(z.union([z.string(), z.number()])).openapi({ description: 'the field of the definition', example: ['server'] }),
  message: z.string(),
});
const gatewayDtoSchema = z
  .object({
    name: z.string(),
    definition: gatewaySchema.openapi({ description: 'as in force, defaults filled in' }),
    kind: z.enum(['pass-through', 'composed']).openapi({ description: 'pass-through: `server`; composed: a session over `servers`' }),
    problems: z.array(problemSchema).openapi({ description: 'what keeps it from serving as defined now; never a file error' }),
    tokens: z.array(z.object({ id: z.string(), created: z.number() })).openapi({ description: 'its tokens: ids, never the token' }),
    clients: z.array(
      z.object({
        id: z.string(),
        name: z.string().nullable().openapi({ description: "the client's own name and version, as it declared them" }),
        era: z.string().openapi({ description: 'the protocol revision it speaks (legacy: before its initialize said)' }),
        transport: z.enum(['http', 'stdio']),
        since: z.number().openapi({ description: 'when it connected (ms since the epoch)' }),
        lastSeen: z.number().openapi({ description: 'its last request (ms since the epoch)' }),
        calls: z.number().int().openapi({ description: 'tools/call, resources/read and prompts/get it made' }),
      }),
    ),
  })
  .openapi('Gateway');
const listSchema = z
  .object({
    gateways: z.array(gatewayDtoSchema),
    invalid: z
      .array(z.any())
      .nullable()
      .openapi({ description: 'extensions.json is broken: its issues (the gateways are the last valid)' }),
  })
  .openapi('GatewayList');
const mintedSchema = z
  .object({
    id: z.string(),
    token: z.string().openapi({ description: 'shown this once: send it as Authorization: Bearer to /mcp/gateways/{name}' }),
    created: z.number(),
  })
  .openapi('GatewayToken');
const nameParam = z.object({
  name: z.string().openapi({ param: { name: 'name', in: 'path' }, description: "the gateway's name", example: 'claude' }),
});
const tokenParams = nameParam.extend({
  id: z.string().openapi({ param: { name: 'id', in: 'path' }, description: "the token's id", example: '3f9a0c12' }),
});
const notFound = err('no such gateway, or token (ALBEDO_NOT_FOUND)');
const badName = err('not a gateway name (ALBEDO_INVALID_ARGUMENT at ["params", "name"])');
const tokensBroken = err('gateway-tokens.json on disk is broken (ALBEDO_INVALID_CONFIG): no token made or revoked');

const routes = {
  list: createRoute({
    method: 'get',
    path: '/v1/gateways',
    tags: ['gateways'],
    summary: 'Every gateway, in file order, with its problems, tokens and clients',
    responses: { 200: json(listSchema, 'the gateways'), ...COMMON },
  }),
  get: createRoute({
    method: 'get',
    path: '/v1/gateways/{name}',
    tags: ['gateways'],
    summary: 'One gateway',
    request: { params: nameParam },
    responses: { 200: { ...json(gatewayDtoSchema, 'the gateway'), headers: etagHeader }, 400: badName, 404: notFound, ...COMMON },
  }),
  put: createRoute({
    method: 'put',
    path: '/v1/gateways/{name}',
    tags: ['gateways'],
    summary: 'Create or replace a gateway (written as given; the rest of extensions.json kept)',
    request: {
      params: nameParam,
      headers: preconditionHeadersSchema,
      body: { required: true, content: { 'application/json': { schema: gatewaySchema } } },
    },
    responses: {
      200: { ...json(gatewayDtoSchema, 'replaced'), headers: etagHeader },
      201: { ...json(gatewayDtoSchema, 'created'), headers: etagHeader },
      400: err('a bad name or body: `path` names the field (ALBEDO_INVALID_ARGUMENT)'),
      409: err(
        'extensions.json on disk is broken, or the gateway changed while it was saved (ALBEDO_INVALID_CONFIG, ALBEDO_EDIT_CONFLICT)',
      ),
      412: err('If-Match is not the current ETag, or If-None-Match: * and it exists (ALBEDO_PRECONDITION_FAILED); nothing written'),
      ...COMMON,
    },
  }),
  remove: createRoute({
    method: 'delete',
    path: '/v1/gateways/{name}',
    tags: ['gateways'],
    summary: 'Remove a gateway and revoke its tokens',
    request: { params: nameParam, headers: preconditionHeadersSchema.pick({ 'if-match': true }) },
    responses: {
      204: { description: 'removed' },
      400: badName,
      404: notFound,
      409: err('extensions.json or gateway-tokens.json on disk is broken (ALBEDO_INVALID_CONFIG); nothing changed'),
      ...COMMON,
    },
  }),
  mint: createRoute({
    method: 'post',
    path: '/v1/gateways/{name}/tokens',
    tags: ['gateways'],
    summary: 'A new token for the gateway: shown in this answer only',
    request: { params: nameParam },
    responses: { 201: json(mintedSchema, 'the token, shown once'), 400: badName, 404: notFound, 409: tokensBroken, ...COMMON },
  }),
  revokeOne: createRoute({
    method: 'delete',
    path: '/v1/gateways/{name}/tokens/{id}',
    tags: ['gateways'],
    summary: 'Revoke one token',
    request: { params: tokenParams },
    responses: { 204: { description: 'revoked' }, 400: badName, 404: notFound, 409: tokensBroken, ...COMMON },
  }),
  revokeAll: createRoute({
    method: 'delete',
    path: '/v1/gateways/{name}/tokens',
    tags: ['gateways'],
    summary: 'Revoke every token of the gateway (also of one no longer in the settings)',
    request: { params: nameParam },
    responses: {
      200: json(z.object({ revoked: z.number() }), 'how many were revoked'),
      400: badName,
      404: notFound,
      409: tokensBroken,
      ...COMMON,
    },
  }),
};

/** Why the gateway cannot serve as defined now: the servers it names that are not configured, or switched off. */
export function problemsOf(g: Gateway, servers: SettingsView['servers']): Array<z.infer<typeof problemSchema>> {
  const out: Array<z.infer<typeof problemSchema>> = [];
  const check = (name: string, path: Array<string | number>, needed: boolean): void => {
    if (!Object.hasOwn(servers, name)) {
      out.push({ code: 'server_not_configured', path, message: `no server ${JSON.stringify(name)} is configured (albedo mcp add)` });
    } else if (needed && servers[name]!.enabled === false) {
      out.push({ code: 'server_disabled', path, message: `the server ${JSON.stringify(name)} is switched off (albedo mcp enable)` });
    }
  };
  if (g.server !== undefined) check(g.server, ['server'], true);
  g.servers?.include?.forEach((n, i) => check(n, ['servers', 'include', i], true));
  g.servers?.exclude?.forEach((n, i) => check(n, ['servers', 'exclude', i], false));
  return out;
}

function checkName(name: string): void {
  const why = gatewayNameProblem(name);
  if (why) throw new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', why, { path: ['params', 'name'] });
}

function noGateway(name: string): ApiError {
  return new ApiError(404, 'ALBEDO_NOT_FOUND', `no gateway ${JSON.stringify(name)} in the settings`, { path: ['params', 'name'] });
}

/** A change of the tokens, with gateway-tokens.json broken by hand refused as extensions.json's is: 409, nothing changed. */
function tokensChange<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (AlbedoError.is(e) && e.code === 'ALBEDO_INVALID_CONFIG') throw new ApiError(409, e.code, e.message, { outcome: 'not_run' });
    throw e;
  }
}

/** A failed `settings/apply` as the API answers it. */
function applyError(e: unknown, name: string, pre: Preconditions): unknown {
  if (!AlbedoError.is(e)) return e;
  const d = (e.data ?? {}) as { broken?: boolean; issues?: SettingsIssue[] };
  if (e.code === 'ALBEDO_INVALID_CONFIG' && d.broken) return new ApiError(409, e.code, e.message, { outcome: 'not_run' });
  if (e.code === 'ALBEDO_INVALID_CONFIG' && d.issues?.[0]) {
    // Its path is from the top of the file (`gateways`, NAME, …): the body's field.
    const p = d.issues[0].path;
    const path = p[0] === 'gateways' && p[1] === name ? ['body', ...p.slice(2)] : ['body'];
    return new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', `${path.slice(1).join('.') || 'body'}: ${d.issues[0].message}`, { path });
  }
  if (e.code === 'ALBEDO_EDIT_CONFLICT') {
    const header = pre.ifMatch !== undefined ? 'if-match' : 'if-none-match';
    return new ApiError(412, 'ALBEDO_PRECONDITION_FAILED', 'the gateway changed since it was read; read it again', {
      path: ['headers', header],
      outcome: 'not_run',
    });
  }
  return toApiError(e);
}

/** Adds the gateways routes to `app`. */
export function gatewayRoutes(app: OpenAPIHono, o: GatewayRoutesOptions): void {
  const { kernel, tokens } = o;
  const route = <R extends RouteConfig>(r: R, handler: (c: Context) => Promise<Response>): void => {
    // A request that fails its schema: 400 at the field (app.ts's default hook reads a PUT body as a server's).
    app.openapi(
      r,
      handler as never,
      ((result: { success: boolean; target: string; error: z.ZodError }, c: Context) => {
        if (result.success) return;
        const where = result.target === 'json' ? 'body' : result.target === 'param' ? 'params' : 'headers';
        if (where === 'params') checkName(c.req.param('name') ?? '');
        const e = validationError(where, result.error);
        return c.json(e.body(), 400);
      }) as never,
    );
  };

  const dto = (name: string, def: Gateway, view: SettingsView) => ({
    name,
    definition: def,
    kind: def.server !== undefined ? ('pass-through' as const) : ('composed' as const),
    problems: problemsOf(def, view.servers),
    tokens: tokens.list(name).map((x) => ({ id: x.id, created: x.created })),
    clients: o.clients?.(name) ?? [],
  });
  const apply = async (name: string, def: unknown, pre: Preconditions, current: Gateway | null): Promise<ApplyResult> => {
    const expect = pre.ifMatch !== undefined || pre.ifNoneMatch !== undefined ? { gateway: name, definition: current } : undefined;
    const params: ApplyParams = { plan: { op: 'sections', patch: { gateways: { [name]: def as Gateway | null } }, expect } };
    try {
      return await kernel.call('settings', 'settings/apply', params, { timeoutMs: SETTINGS_TIMEOUT_MS });
    } catch (e) {
      throw applyError(e, name, pre);
    }
  };
  const preOf = (c: Context): Preconditions => ({ ifMatch: c.req.header('if-match'), ifNoneMatch: c.req.header('if-none-match') });
  const inForce = (view: SettingsView, name: string): Gateway | null => (Object.hasOwn(view.gateways, name) ? view.gateways[name]! : null);

  route(routes.list, async (c) => {
    const view = await settingsView(kernel);
    const gateways = Object.entries(view.gateways).map(([n, g]) => dto(n, g, view));
    return c.json({ gateways, invalid: view.invalid }, 200);
  });

  route(routes.get, async (c) => {
    const name = c.req.param('name')!;
    checkName(name);
    const view = await settingsView(kernel);
    const g = inForce(view, name);
    if (!g) throw noGateway(name);
    c.header('ETag', etagOf(g));
    return c.json(dto(name, g, view), 200);
  });

  route(routes.put, async (c) => {
    const name = c.req.param('name')!;
    checkName(name);
    // The body as sent: the file keeps what the user wrote (the validated copy has the defaults filled in).
    const body: unknown = await c.req.json();
    const pre = preOf(c);
    const cur = inForce(await settingsView(kernel), name);
    checkPreconditions(pre, cur && etagOf(cur));
    const r = await apply(name, body, pre, cur);
    const g = r.gateways?.[name];
    if (!g) throw new ApiError(500, 'ALBEDO_INTERNAL', `the gateway ${name} was saved but is not in the settings in force`);
    c.header('ETag', etagOf(g));
    return c.json(dto(name, g, await settingsView(kernel)), cur ? 200 : 201);
  });

  route(routes.remove, async (c) => {
    const name = c.req.param('name')!;
    checkName(name);
    const pre = preOf(c);
    const cur = inForce(await settingsView(kernel), name);
    if (!cur) throw noGateway(name);
    checkPreconditions(pre, etagOf(cur));
    // Its tokens go with it: not removed while they cannot be revoked.
    tokensChange(() => tokens.usable());
    await apply(name, null, pre, cur);
    tokensChange(() => tokens.revoke(name));
    return c.body(null, 204);
  });

  route(routes.mint, async (c) => {
    const name = c.req.param('name')!;
    checkName(name);
    if (!inForce(await settingsView(kernel), name)) throw noGateway(name);
    // The one answer that holds a token: not to be kept by anything in between.
    c.header('Cache-Control', 'no-store');
    return c.json(
      tokensChange(() => tokens.mint(name)),
      201,
    );
  });

  route(routes.revokeOne, async (c) => {
    const name = c.req.param('name')!;
    const id = c.req.param('id')!;
    checkName(name);
    if (tokensChange(() => tokens.revoke(name, id)) === 0) {
      throw new ApiError(404, 'ALBEDO_NOT_FOUND', `the gateway ${JSON.stringify(name)} has no token ${JSON.stringify(id)}`, {
        path: ['params', 'id'],
      });
    }
    return c.body(null, 204);
  });

  route(routes.revokeAll, async (c) => {
    const name = c.req.param('name')!;
    checkName(name);
    const revoked = tokensChange(() => tokens.revoke(name));
    // A gateway removed by hand may have left tokens: they can be revoked. Neither a gateway nor a token: 404.
    if (revoked === 0 && !inForce(await settingsView(kernel), name)) throw noGateway(name);
    return c.json({ revoked }, 200);
  });
}
