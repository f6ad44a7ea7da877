/**
 * `GET /v1/mcp/servers/{name}/tools`: a configured server's tools as its
 * saved catalogue holds them (LMDB `mcp_catalogues`, the catalogue service),
 * read without opening a session or dialling the server — what the `/mcp`
 * screen and the web pane list when a person asks "what does it offer?".
 *
 * The catalogue is the one saved for the server as configured now: the
 * fingerprint of `settings/resolve` picks it, as it picks the list's tool
 * count (servers.ts), so the two never disagree. None saved (never
 * connected, its entry or credentials changed since, or it cannot be
 * prepared as saved) is a 200 with `tools: null`: a fact about the server,
 * not a failure of the request. `settings/resolve`'s result carries secret
 * values; only its fingerprint is read here, and nothing of the entry or the
 * credentials is in the answer. The tools' text is the server's: returned
 * as data, for whoever shows it to escape.
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { Kernel } from '../kernel/kernel.ts';
import { AlbedoError } from '../protocol/errors.ts';
import type { SavedCatalogue } from '../protocol/catalogue.ts';
import { ApiError } from './errors.ts';
import { errorSchema, nameParamSchema, serverToolsSchema, type ServerToolsDto } from './schemas.ts';
import { entryOf, settingsView, SETTINGS_TIMEOUT_MS } from './servers.ts';

const json = <S>(schema: S, description: string) => ({ description, content: { 'application/json': { schema } } });
const err = (description: string) => json(errorSchema, description);

const getTools = createRoute({
  method: 'get',
  path: '/v1/mcp/servers/{name}/tools',
  tags: ['settings'],
  summary: "A server's tools from its saved catalogue (no session is opened, the server is not dialled)",
  request: { params: nameParamSchema },
  responses: {
    200: json(serverToolsSchema, 'the saved catalogue; tools (and the rest) null when none is saved for the server as configured now'),
    404: err('no such server (ALBEDO_NOT_FOUND)'),
    401: err("no bearer token, or not this daemon's (ALBEDO_UNAUTHORIZED)"),
    403: err("an Origin other than the daemon's own (ALBEDO_BAD_ORIGIN)"),
    421: err("a Host that is not a loopback name with the daemon's port (ALBEDO_BAD_HOST)"),
    500: err('a defect in the daemon (ALBEDO_INTERNAL)'),
    503: err('the settings or catalogue service is not available (ALBEDO_SERVICE_LOST, ALBEDO_CLOSED)'),
  },
});

/** The server's fingerprint as configured now; null when it cannot be prepared as saved (then no catalogue is its own). */
async function fingerprintOf(kernel: Kernel, name: string): Promise<string | null> {
  try {
    return (await kernel.call('settings', 'settings/resolve', { name }, { timeoutMs: SETTINGS_TIMEOUT_MS })).fingerprint;
  } catch (e) {
    if (AlbedoError.is(e) && e.code === 'ALBEDO_INVALID_CONFIG') return null;
    throw e;
  }
}

/** The answer for a saved row (or none), with the entry's tool filters marked on each tool. */
export function toolsOf(
  name: string,
  row: SavedCatalogue | null,
  filters: { enabledTools?: string[]; disabledTools?: string[] },
): ServerToolsDto {
  if (!row) {
    return {
      server: name,
      tools: null,
      resources: null,
      resourceTemplates: null,
      prompts: null,
      instructions: null,
      serverInfo: null,
      discoveredAt: null,
    };
  }
  const allow = filters.enabledTools ? new Set(filters.enabledTools) : null;
  const deny = new Set(filters.disabledTools ?? []);
  const c = row.catalogue;
  const info = row.serverInfo;
  return {
    server: name,
    tools: c.tools.map((t) => ({
      name: t.name,
      ...(typeof t.title === 'string' ? { title: t.title } : {}),
      ...(typeof t.description === 'string' ? { description: t.description } : {}),
      inputSchema: t.inputSchema,
      enabled: (allow === null || allow.has(t.name)) && !deny.has(t.name),
    })),
    resources: c.resources.length,
    resourceTemplates: c.resourceTemplates.length,
    prompts: c.prompts.length,
    instructions: row.instructions,
    serverInfo: info
      ? {
          name: info.name,
          version: info.version,
          ...(typeof info.title === 'string' ? { title: info.title } : {}),
          ...(typeof info.description === 'string' ? { description: info.description } : {}),
        }
      : null,
    discoveredAt: new Date(row.savedAt).toISOString(),
  };
}

/** Adds the saved-catalogue route to `app`. */
export function catalogueRoutes(app: OpenAPIHono, kernel: Kernel): void {
  app.openapi(getTools, (async (c: Context) => {
    const name = c.req.param('name')!;
    const view = await settingsView(kernel);
    if (!Object.hasOwn(view.servers, name)) {
      throw new ApiError(404, 'ALBEDO_NOT_FOUND', `no server ${JSON.stringify(name)} in the settings`, { path: ['params', 'name'] });
    }
    const entry = entryOf(view.servers[name]!);
    const fingerprint = await fingerprintOf(kernel, name);
    const [row] =
      fingerprint === null
        ? [null]
        : await kernel.call(
            'catalogue',
            'catalogue/current',
            { servers: [{ server: name, fingerprint }] },
            { timeoutMs: SETTINGS_TIMEOUT_MS },
          );
    return c.json(toolsOf(name, row ?? null, entry), 200);
  }) as never);
}
