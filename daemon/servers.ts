/**
 * The settings as the API shows them, read through the settings service:
 * each server's entry (secrets are named there, never inlined), which typed
 * secrets are stored (never a value), and why it cannot be prepared if it
 * cannot — with the entity tag of each read (etag.ts).
 *
 * `settings/resolve` is asked only for the fingerprint, the error, the URL,
 * whether the server uses OAuth and what its entry exposes of the home
 * (`warnings`: paths, never a value); its result carries secret values and
 * goes no further than this function. The fingerprint then picks the
 * catalogue saved for the server as it is configured now
 * (`catalogue/current`): its tool count and description. `auth` is the
 * OAuth record's status (albedo.authStatuses: never a token), and `state`
 * what all this says without dialling the server.
 *
 * The entity tag covers what a write can change (the config, the secrets
 * set, the fingerprint — which moves with a sign-in or sign-out); `state`
 * and `auth` are reports (a token refresh moves `expires_at`) and are left
 * out of it, so they never make an If-Match fail.
 */
import type { Kernel } from '../kernel/kernel.ts';
import { AlbedoError, deserializeError } from '../protocol/errors.ts';
import type { SavedCatalogue } from '../protocol/catalogue.ts';
import type { ServerResolution, SettingsView } from '../protocol/services/settings.ts';
import type { SecretsSummary, SettingsServer } from '../protocol/settings.ts';
import type { AuthStatus } from '../protocol/oauth.ts';
import { etagOf } from './etag.ts';
import type { AuthDto, ServerDto } from './schemas.ts';

export type ViewServer = SettingsView['servers'][string];

/** What reads need: the kernel, and the OAuth records' statuses (albedo.authStatuses). */
export interface Reader {
  kernel: Kernel;
  authStatuses(): Promise<AuthStatus[]>;
}

/** An AuthStatus as the API shows it (the server and URL are the DTO's own). */
export function authOf(s: AuthStatus): AuthDto {
  const { server: _server, url: _url, ...rest } = s;
  return rest;
}

/** The statuses, or null when creds.json cannot be read now (each server's lastError says so). */
async function statuses(r: Reader): Promise<AuthStatus[] | null> {
  try {
    return await r.authStatuses();
  } catch {
    return null;
  }
}

/** Settings calls answer from one worker's memory (or a file read): this is plenty. */
export const SETTINGS_TIMEOUT_MS = 15_000;

export function settingsView(kernel: Kernel): Promise<SettingsView> {
  return kernel.call('settings', 'settings/get', {}, { timeoutMs: SETTINGS_TIMEOUT_MS });
}

/** GET /v1/mcp's body: the mcp section in force. */
export interface McpSection {
  retryMs: number;
  enabled: SettingsView['enabled'];
  path: string | null;
  invalid: SettingsView['invalid'];
}

export function mcpSection(v: Pick<SettingsView, 'retryMs' | 'enabled' | 'path' | 'invalid'>): McpSection {
  return { retryMs: v.retryMs, enabled: v.enabled, path: v.path, invalid: v.invalid };
}

/** The entry without the summary settings/get puts beside it. */
export function entryOf(s: ViewServer): SettingsServer {
  const { secrets: _summary, ...entry } = s;
  return entry as SettingsServer;
}

function summary(s: SecretsSummary): ServerDto['secrets'] {
  return { bearer: s.bearerToken, header: s.header, env: s.env, oauth_client: s.oauthClient };
}

/** A server description's bound (docs/design.md, "Bounds"), as the MCP context bounds instructions. */
export const MAX_DESCRIPTION = 2_048;

/** The catalogue saved for this server under its current fingerprint, if any. */
async function savedRow(kernel: Kernel, server: string, fingerprint: string): Promise<SavedCatalogue | null> {
  const [row] = await kernel.call(
    'catalogue',
    'catalogue/current',
    { servers: [{ server, fingerprint }] },
    { timeoutMs: SETTINGS_TIMEOUT_MS },
  );
  return row ?? null;
}

/** The server's own description (serverInfo.description), else its instructions; at most MAX_DESCRIPTION characters, the cut marked. */
export function descriptionOf(row: SavedCatalogue): string {
  const own = (row.serverInfo as { description?: unknown } | null)?.description;
  const text = (typeof own === 'string' && own.trim() ? own : (row.instructions ?? '')).trim();
  if (text.length <= MAX_DESCRIPTION) return text;
  let cut = MAX_DESCRIPTION - 1;
  // Never half a surrogate pair.
  if (/[\uD800-\uDBFF]/.test(text[cut - 1]!)) cut--;
  return `${text.slice(0, cut)}…`;
}

export interface Described {
  dto: ServerDto;
  etag: string;
}

/**
 * Whether an entry (with its stored secrets) sends a fixed Authorization, so OAuth does not apply:
 * for an entry that cannot be resolved.
 */
function fixedAuthorization(entry: SettingsServer, secrets: SecretsSummary): boolean {
  if (entry.type !== 'http') return true;
  const auth = (h: string): boolean => h.toLowerCase() === 'authorization';
  return (
    !!entry.bearerTokenEnvVar ||
    Object.keys(entry.headers).some(auth) ||
    secrets.bearerToken ||
    (secrets.header !== null && auth(secrets.header))
  );
}

function stateOf(dto: Omit<ServerDto, 'state'>): ServerDto['state'] {
  if (!dto.enabled) return 'disabled';
  if (dto.lastError) return 'error';
  if (dto.auth && (dto.auth.state === 'needs_sign_in' || dto.auth.state === 'signed_out')) return 'needs_sign_in';
  return dto.tools !== null ? 'discovered' : 'configured';
}

/** What `settings/resolve` makes of the server, without its secret values (the form `settings/apply` answers with). */
async function resolutionOf(kernel: Kernel, name: string): Promise<ServerResolution> {
  try {
    const r = await kernel.call('settings', 'settings/resolve', { name }, { timeoutMs: SETTINGS_TIMEOUT_MS });
    return {
      ok: true,
      fingerprint: r.fingerprint,
      warnings: r.warnings ?? [],
      oauthUrl: r.server.type === 'http' && r.server.auth ? r.server.url : null,
    };
  } catch (err) {
    if (!AlbedoError.is(err) || err.code !== 'ALBEDO_INVALID_CONFIG') throw err;
    return { ok: false, error: err.toJSON() };
  }
}

/**
 * One server of `view` as the API shows it, with its entity tag; `known` is the statuses when the caller has them,
 * `resolution` what the server resolves to when the caller has it (else `settings/resolve` is asked).
 */
export async function describeServer(
  r: Reader,
  name: string,
  s: ViewServer,
  known?: AuthStatus[] | null,
  resolution?: ServerResolution,
): Promise<Described> {
  const { kernel } = r;
  let fingerprint: string | null = null;
  let lastError: ServerDto['lastError'] = null;
  let warnings: ServerDto['warnings'] = [];
  const config = entryOf(s);
  let oauthUrl: string | null = config.type === 'http' && !fixedAuthorization(config, s.secrets) ? config.url : null;
  const resolved = resolution ?? (await resolutionOf(kernel, name));
  if (resolved.ok) {
    fingerprint = resolved.fingerprint;
    warnings = resolved.warnings;
    oauthUrl = resolved.oauthUrl;
  } else {
    // Only "cannot be prepared as saved" is the server's (resolutionOf); anything else (the service gone, the server removed
    // meanwhile) is the request's, thrown there.
    const err = deserializeError(resolved.error);
    const d = err.data as { path?: Array<string | number>; reason?: string } | undefined;
    lastError = { code: err.code, message: err.message };
    if (Array.isArray(d?.path)) lastError.path = d.path;
    if (typeof d?.reason === 'string') lastError.reason = d.reason;
  }
  const row = fingerprint === null ? null : await savedRow(kernel, name, fingerprint);
  let auth: AuthDto | null = null;
  if (oauthUrl !== null) {
    const all = known === undefined ? await statuses(r) : known;
    const rec = all?.find((a) => a.server === name && a.url === oauthUrl);
    auth = all === null ? null : rec ? authOf(rec) : { state: 'none' };
  }
  const versioned = {
    name,
    enabled: config.enabled,
    config,
    secrets: summary(s.secrets),
    tools: row ? row.catalogue.tools.length : null,
    description: row ? descriptionOf(row) : '',
    lastError,
  };
  // Warnings follow from the entry and the home, which the tag already covers.
  const dto: ServerDto = { ...versioned, state: stateOf({ ...versioned, auth, warnings }), auth, warnings };
  return { dto, etag: etagOf({ dto: versioned, fingerprint }) };
}

/** Every server, in file order, and the tag of the whole list. */
export async function describeAll(r: Reader, view: SettingsView): Promise<{ servers: Described[]; etag: string }> {
  const known = await statuses(r);
  const servers = await Promise.all(Object.entries(view.servers).map(([name, s]) => describeServer(r, name, s, known)));
  return { servers, etag: etagOf({ servers: servers.map((d) => d.etag), invalid: view.invalid }) };
}
