/**
 * The pure parts of a settings write through the API: which variant of an
 * entry a body means (so an error names a field of that variant), and the
 * API's secrets (`""` keeps the stored one) as the settings service's
 * SecretsPatch and the secrets to keep. No I/O here.
 */
import type { z } from 'zod';
import type { SecretsKeep } from '../protocol/services/settings.ts';
import type { SecretsPatch, SettingsServer } from '../protocol/settings.ts';
import { settingsNameProblem } from '../protocol/settings.ts';
import { ApiError, validationError } from './errors.ts';
import { httpBodySchema, stdioBodySchema, type SecretsInput } from './schemas.ts';

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * 400 for a name extensions.json cannot hold, or that still holds a `%XX`
 * sequence that does not decode: the router leaves such a sequence as sent,
 * so `%ff` would otherwise become a server named "%ff" that no encoded path
 * addresses the way it was written.
 */
export function checkName(name: string): void {
  const why = settingsNameProblem(name) ?? undecodable(name);
  if (why) throw new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', why, { path: ['params', 'name'] });
}

function undecodable(name: string): string | undefined {
  for (const [seq] of name.matchAll(/(?:%[0-9a-fA-F]{2})+/g)) {
    try {
      decodeURIComponent(seq);
    } catch {
      return `the name holds ${JSON.stringify(seq)}, which is not a URL-encoded UTF-8 sequence; encode the name with encodeURIComponent`;
    }
  }
  return undefined;
}

/**
 * A body (entry + `secrets`) validated as the variant it means, as
 * extensions.json decides it: `type`, else http when there is a `url`, else
 * stdio. Returns the entry as given (to be written so), its parsed form and
 * the secrets.
 */
export function parseBody(body: unknown): { raw: Record<string, unknown>; entry: SettingsServer; secrets: SecretsInput | undefined } {
  if (!isObject(body)) throw new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', 'the body must be a JSON object', { path: ['body'] });
  const type = Object.hasOwn(body, 'type') ? body.type : Object.hasOwn(body, 'url') ? 'http' : 'stdio';
  if (type !== 'stdio' && type !== 'http')
    throw new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', 'type: expected "stdio" or "http"', { path: ['body', 'type'] });
  const schema: z.ZodType = type === 'stdio' ? stdioBodySchema : httpBodySchema;
  const r = schema.safeParse({ ...body, type });
  if (!r.success) throw validationError('body', r.error, body, ['secrets.header.name']);
  const { secrets, ...entry } = r.data as SettingsServer & { secrets?: SecretsInput };
  // A stdio server has no sign-in: a sign-out of one is a mistake to say, not a save to try.
  if (entry.type === 'stdio' && secrets?.oauth !== undefined)
    throw bad(['secrets', 'oauth'], 'a stdio server has no sign-in to sign out of');
  const raw: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    if (k !== 'secrets') Object.defineProperty(raw, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return { raw, entry: entry as SettingsServer, secrets };
}

export const bad = (path: Array<string | number>, message: string): ApiError =>
  new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', `${path.join('.')}: ${message}`, { path: ['body', ...path] });

/**
 * The API's secrets as a SecretsPatch: left out or `""` keeps the stored
 * secret, `null` removes it (`oauth: null` signs out), a value replaces it.
 * A blank is a secret to keep (`keep`): the settings service refuses it
 * when nothing is stored to keep (a header of another name, an env entry not
 * stored) rather than silently dropping it (writes.ts names the field).
 */
export function toSecretsPlan(input: SecretsInput | undefined): { secrets?: SecretsPatch; keep?: SecretsKeep } {
  if (!input) return {};
  const out: SecretsPatch = {};
  const keep: SecretsKeep = {};
  if (input.bearer !== undefined && input.bearer !== '') out.bearerToken = input.bearer;
  if (input.header === null) out.header = null;
  else if (input.header) {
    if (input.header.value !== '') out.header = input.header;
    else keep.header = input.header.name;
  }
  if (input.env === null) out.env = null;
  else if (input.env) {
    const env: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(input.env)) {
      if (v !== '') env[k] = v;
      else (keep.env ??= []).push(k);
    }
    if (Object.keys(env).length) out.env = env;
  }
  if (input.oauth_client === null) out.oauthClient = null;
  else if (input.oauth_client) {
    const c = input.oauth_client;
    if (c.client_id === '') {
      if (c.client_secret !== undefined) throw bad(['secrets', 'oauth_client', 'client_id'], 'a client secret needs its client_id');
      keep.oauthClient = true;
    } else {
      out.oauthClient =
        c.client_secret === undefined ? { clientId: c.client_id } : { clientId: c.client_id, clientSecret: c.client_secret };
    }
  }
  if (input.oauth === null) out.oauth = null;
  return { ...(Object.keys(out).length ? { secrets: out } : {}), ...(Object.keys(keep).length ? { keep } : {}) };
}

/** The 400 of a secret to keep (`settings/apply`'s `data.keep`) that is not stored. */
export function keepError(keep: unknown, key: unknown): ApiError | null {
  if (keep === 'header') return bad(['secrets', 'header', 'value'], 'no stored header of this name to keep; give its value');
  if (keep === 'env' && typeof key === 'string') return bad(['secrets', 'env', key], 'no stored value to keep; give the value');
  if (keep === 'oauthClient') return bad(['secrets', 'oauth_client', 'client_id'], 'no stored client to keep; give the client_id');
  return null;
}
