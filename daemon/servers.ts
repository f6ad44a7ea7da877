/**
 * The settings as the API shows them, read through the settings service:
 * each server's entry (secrets are named there, never inlined), which typed
 * secrets are stored (never a value), and why it cannot be prepared if it
 * cannot — with the entity tag of each read (etag.ts).
 *
 * `settings/resolve` is asked only for the fingerprint and the error; its
 * result carries secret values and goes no further than this function.
 * The fingerprint then picks the catalogue saved for the server as it is
 * configured now (`catalogue/current`): its tool count and description.
 */
import type { Kernel } from '../kernel/kernel.ts';
import { AlbedoError } from '../protocol/errors.ts';
import type { SavedCatalogue } from '../protocol/catalogue.ts';
import type { SettingsView } from '../protocol/services/settings.ts';
import type { SecretsSummary, SettingsServer } from '../protocol/settings.ts';
import { etagOf } from './etag.ts';
import type { ServerDto } from './schemas.ts';

export type ViewServer = SettingsView['servers'][string];

/** Settings calls answer from one worker's memory (or a file read): this is plenty. */
export const SETTINGS_TIMEOUT_MS = 15_000;

export function settingsView(kernel: Kernel): Promise<SettingsView> {
  return kernel.call('settings', 'settings/get', {}, { timeoutMs: SETTINGS_TIMEOUT_MS });
}

/** The entry without the summary settings/get puts beside it. */
export function entryOf(s: ViewServer): SettingsServer {
  const { secrets: _summary, ...entry } = s;
  return entry as SettingsServer;
}

function summary(s: SecretsSummary): ServerDto['secrets'] {
  return { bearer: s.bearerToken, header: s.header, env: s.env, oauth_client: s.oauthClient };
}

/** A server description's bound (seed 002), as the MCP context bounds instructions. */
export const MAX_DESCRIPTION = 2_048;

/** The catalogue saved for this server under its current fingerprint, if any. */
async function savedRow(kernel: Kernel, server: string, fingerprint: string): Promise<SavedCatalogue | null> {
  const [row] = await kernel.call('catalogue', 'catalogue/current', { servers: [{ server, fingerprint }] }, { timeoutMs: SETTINGS_TIMEOUT_MS });
  return row ?? null;
}

/** The server's own description (serverInfo.description), else its instructions; at most MAX_DESCRIPTION characters, the cut marked. */
export function descriptionOf(row: SavedCatalogue): string {
  const own = (row.serverInfo as { description?: unknown } | null)?.description;
  const text = (typeof own === 'string' && own.trim() ? own : row.instructions ?? '').trim();
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

/** One server of `view` as the API shows it, with its entity tag. */
export async function describeServer(kernel: Kernel, name: string, s: ViewServer): Promise<Described> {
  let fingerprint: string | null = null;
  let lastError: ServerDto['lastError'] = null;
  try {
    fingerprint = (await kernel.call('settings', 'settings/resolve', { name }, { timeoutMs: SETTINGS_TIMEOUT_MS })).fingerprint;
  } catch (err) {
    // Only "cannot be prepared as saved" is the server's; anything else (the service gone, the server removed meanwhile) is the request's.
    if (!AlbedoError.is(err) || err.code !== 'ALBEDO_INVALID_CONFIG') throw err;
    const d = err.data as { path?: Array<string | number>; reason?: string } | undefined;
    lastError = { code: err.code, message: err.message };
    if (Array.isArray(d?.path)) lastError.path = d.path;
    if (typeof d?.reason === 'string') lastError.reason = d.reason;
  }
  const config = entryOf(s);
  const row = fingerprint === null ? null : await savedRow(kernel, name, fingerprint);
  const dto: ServerDto = {
    name,
    enabled: config.enabled,
    config,
    secrets: summary(s.secrets),
    tools: row ? row.catalogue.tools.length : null,
    description: row ? descriptionOf(row) : '',
    lastError,
  };
  return { dto, etag: etagOf({ dto, fingerprint }) };
}

/** Every server, in file order, and the tag of the whole list. */
export async function describeAll(kernel: Kernel, view: SettingsView): Promise<{ servers: Described[]; etag: string }> {
  const servers = await Promise.all(Object.entries(view.servers).map(([name, s]) => describeServer(kernel, name, s)));
  return { servers, etag: etagOf({ servers: servers.map((d) => d.etag), invalid: view.invalid }) };
}
