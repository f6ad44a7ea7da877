/**
 * The settings routes (`/v1/mcp`), over the settings service: reads carry
 * an ETag; writes go through SettingsWrites (one at a time, preconditions,
 * strict save). Each route's zod schemas validate the request and are its
 * entry in the OpenAPI document.
 */
import { createRoute, type OpenAPIHono, type RouteConfig } from '@hono/zod-openapi';
import type { Context } from 'hono';
import {
  dryRunQuerySchema,
  errorSchema,
  mcpPatchSchema,
  mcpSectionSchema,
  nameParamSchema,
  patchBodySchema,
  preconditionHeadersSchema,
  putBodySchema,
  saveResultSchema,
  serverListSchema,
  serverSchema,
} from './schemas.ts';
import { ApiError } from './errors.ts';
import { etagOf } from './etag.ts';
import { describeAll, describeServer, mcpSection, settingsView, type Reader } from './servers.ts';
import { checkName } from './validate.ts';
import type { SaveResult, SettingsWrites } from './writes.ts';

const json = <S>(schema: S, description: string) => ({ description, content: { 'application/json': { schema } } });
const err = (description: string) => json(errorSchema, description);

/** The refusals every route may answer with (the guard's, and the daemon's own trouble). */
const COMMON = {
  401: err("no bearer token, or not this daemon's (ALBEDO_UNAUTHORIZED)"),
  403: err("an Origin other than the daemon's own (ALBEDO_BAD_ORIGIN)"),
  421: err("a Host that is not a loopback name with the daemon's port (ALBEDO_BAD_HOST)"),
  500: err('a defect in the daemon (ALBEDO_INTERNAL)'),
  503: err('the settings service is not available (ALBEDO_SERVICE_LOST, ALBEDO_CLOSED)'),
} as const;

const WRITE_ERRORS = {
  400: err('invalid input: `path` names the field (ALBEDO_INVALID_ARGUMENT, ALBEDO_INVALID_CONFIG)'),
  404: err('no such server (ALBEDO_NOT_FOUND)'),
  409: err(
    'strict save: the server cannot start (the code is why: ALBEDO_SPAWN_FAILED, ALBEDO_SERVER_EXITED, ALBEDO_TIMEOUT, ' +
      'ALBEDO_INVALID_CONFIG for a variable or file it cannot read, …), extensions.json is broken, or the entry was edited in the file ' +
      'while the save was tried (ALBEDO_EDIT_CONFLICT); nothing was written',
  ),
  412: err(
    'If-Match is not the current ETag, or If-None-Match: * and the server exists, also when that changed while the save was tried ' +
      '(ALBEDO_PRECONDITION_FAILED); nothing was written',
  ),
  413: err('the body is over 1 MiB (ALBEDO_TOO_LARGE)'),
  415: err('the body is not JSON (ALBEDO_INVALID_ARGUMENT)'),
} as const;

const etagHeader = { ETag: { description: 'the version of what was read; send it back as If-Match', schema: { type: 'string' as const } } };
const readOk = <S>(schema: S, description: string) => ({ ...json(schema, description), headers: etagHeader });

const getMcp = createRoute({
  method: 'get',
  path: '/v1/mcp',
  tags: ['settings'],
  summary: "The mcp section: retryMs and the extensions' defaults",
  responses: { 200: readOk(mcpSectionSchema, 'the mcp settings in force'), ...COMMON },
});
const patchMcp = createRoute({
  method: 'patch',
  path: '/v1/mcp',
  tags: ['settings'],
  summary: "Change retryMs and the extensions' defaults (a merge patch)",
  request: {
    headers: preconditionHeadersSchema.pick({ 'if-match': true }),
    body: {
      required: true,
      content: { 'application/merge-patch+json': { schema: mcpPatchSchema }, 'application/json': { schema: mcpPatchSchema } },
    },
  },
  responses: {
    200: readOk(mcpSectionSchema, 'saved: the mcp settings in force'),
    400: WRITE_ERRORS[400],
    409: err('extensions.json on disk is broken (ALBEDO_INVALID_CONFIG); nothing was written'),
    412: err('If-Match is not the current ETag of GET /v1/mcp (ALBEDO_PRECONDITION_FAILED); nothing was written'),
    413: WRITE_ERRORS[413],
    415: WRITE_ERRORS[415],
    ...COMMON,
  },
});
const listServers = createRoute({
  method: 'get',
  path: '/v1/mcp/servers',
  tags: ['settings'],
  summary: 'Every configured server, in file order',
  responses: { 200: readOk(serverListSchema, 'the servers'), ...COMMON },
});
const getServer = createRoute({
  method: 'get',
  path: '/v1/mcp/servers/{name}',
  tags: ['settings'],
  summary: 'One server',
  request: { params: nameParamSchema },
  responses: { 200: readOk(serverSchema, 'the server'), 404: err('no such server (ALBEDO_NOT_FOUND)'), ...COMMON },
});
const saved = { 200: readOk(saveResultSchema, 'saved (or, with dry_run, tried only)'), ...WRITE_ERRORS, ...COMMON };
const putServer = createRoute({
  method: 'put',
  path: '/v1/mcp/servers/{name}',
  tags: ['settings'],
  summary: 'Create or replace a server and its secrets (strict save)',
  request: {
    params: nameParamSchema,
    query: dryRunQuerySchema,
    headers: preconditionHeadersSchema,
    body: { required: true, content: { 'application/json': { schema: putBodySchema } } },
  },
  responses: { ...saved, 201: readOk(saveResultSchema, 'created') },
});
const patchServer = createRoute({
  method: 'patch',
  path: '/v1/mcp/servers/{name}',
  tags: ['settings'],
  summary: 'Change a server by a JSON merge patch (strict save)',
  request: {
    params: nameParamSchema,
    query: dryRunQuerySchema,
    headers: preconditionHeadersSchema,
    body: {
      required: true,
      content: { 'application/merge-patch+json': { schema: patchBodySchema }, 'application/json': { schema: patchBodySchema } },
    },
  },
  responses: saved,
});
const deleteServer = createRoute({
  method: 'delete',
  path: '/v1/mcp/servers/{name}',
  tags: ['settings'],
  summary: 'Remove a server and its credentials (typed secrets and sign-in)',
  request: { params: nameParamSchema, headers: preconditionHeadersSchema },
  responses: { 204: { description: 'removed' }, 404: WRITE_ERRORS[404], 409: WRITE_ERRORS[409], 412: WRITE_ERRORS[412], ...COMMON },
});
const toggle = (what: 'enable' | 'disable') =>
  createRoute({
    method: 'post',
    path: `/v1/mcp/servers/{name}/${what}`,
    tags: ['settings'],
    summary:
      what === 'enable' ? 'Switch a server on (it is tried first: strict save)' : 'Switch a server off (kept in the file, never dialled)',
    request: { params: nameParamSchema, headers: preconditionHeadersSchema },
    responses: saved,
  });

/** If-Match / If-None-Match as the writes take them. */
function preconditions(h: { 'if-match'?: string; 'if-none-match'?: string }): { ifMatch?: string; ifNoneMatch?: string } {
  return { ifMatch: h['if-match'], ifNoneMatch: h['if-none-match'] };
}

function answer(c: Context, r: SaveResult, created = r.created && r.saved): Response {
  if (r.etag) c.header('ETag', r.etag);
  const { etag: _etag, ...body } = r;
  return c.json(body, created ? 201 : 200);
}

export interface SettingsRoutesOptions {
  reader: Reader;
  writes: SettingsWrites;
}

/** Adds the settings routes to `app`. */
export function settingsRoutes(app: OpenAPIHono, o: SettingsRoutesOptions): void {
  const { reader, writes } = o;
  const { kernel } = reader;
  const route = <R extends RouteConfig>(r: R, handler: (c: Context) => Promise<Response>): void => {
    app.openapi(r, handler as never);
  };

  route(getMcp, async (c) => {
    const body = mcpSection(await settingsView(kernel));
    c.header('ETag', etagOf(body));
    return c.json(body, 200);
  });

  route(patchMcp, async (c) => {
    const r = await writes.patchSection(c.req.valid('json' as never), preconditions(c.req.valid('header' as never)));
    c.header('ETag', r.etag);
    return c.json(r.section, 200);
  });

  route(listServers, async (c) => {
    const view = await settingsView(kernel);
    const all = await describeAll(reader, view);
    c.header('ETag', all.etag);
    return c.json({ servers: all.servers.map((d) => d.dto), invalid: view.invalid }, 200);
  });

  route(getServer, async (c) => {
    const name = c.req.param('name')!;
    const view = await settingsView(kernel);
    if (!Object.hasOwn(view.servers, name)) {
      throw new ApiError(404, 'ALBEDO_NOT_FOUND', `no server ${JSON.stringify(name)} in the settings`, { path: ['params', 'name'] });
    }
    const d = await describeServer(reader, name, view.servers[name]!);
    c.header('ETag', d.etag);
    return c.json(d.dto, 200);
  });

  route(putServer, async (c) => {
    const name = c.req.param('name')!;
    checkName(name);
    // The body as sent (the validated copy has the defaults filled in; the file keeps what the user wrote).
    const body = await c.req.json();
    return answer(
      c,
      await writes.put(name, body, preconditions(c.req.valid('header' as never)), c.req.query('dry_run') === 'true', c.req.raw.signal),
    );
  });

  route(patchServer, async (c) => {
    const name = c.req.param('name')!;
    checkName(name);
    const body = await c.req.json();
    return answer(
      c,
      await writes.patch(name, body, preconditions(c.req.valid('header' as never)), c.req.query('dry_run') === 'true', c.req.raw.signal),
    );
  });

  route(deleteServer, async (c) => {
    const name = c.req.param('name')!;
    await writes.remove(name, preconditions(c.req.valid('header' as never)), c.req.raw.signal);
    return c.body(null, 204);
  });

  for (const what of ['enable', 'disable'] as const) {
    route(toggle(what), async (c) => {
      const name = c.req.param('name')!;
      return answer(c, await writes.setEnabled(name, what === 'enable', preconditions(c.req.valid('header' as never)), c.req.raw.signal));
    });
  }
}
