/**
 * The pure parts of a settings write through the API: which variant of an
 * entry a body means (so an error names a field of that variant), a JSON
 * merge patch (RFC 7396), and the API's secrets (`""` keeps the stored one)
 * as the settings service's SecretsPatch. No I/O here.
 */
import type { z } from 'zod';
import type { SecretsPatch, SecretsSummary, SettingsServer } from '../protocol/settings.ts';
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

/** RFC 7396: objects merge key by key, null removes, anything else replaces. Keys are own data properties, never a prototype. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = {};
  const set = (k: string, v: unknown): void => {
    Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  };
  if (isObject(target)) for (const [k, v] of Object.entries(target)) set(k, v);
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else set(k, mergePatch(Object.hasOwn(out, k) ? out[k] : undefined, v));
  }
  return out;
}

const bad = (path: Array<string | number>, message: string): ApiError =>
  new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', `${path.join('.')}: ${message}`, { path: ['body', ...path] });

/**
 * The API's secrets as a SecretsPatch: left out or `""` keeps the stored
 * secret, `null` removes it (`oauth: null` signs out), a value replaces it. A blank that has nothing
 * to keep (a header of another name, an env entry not stored) is refused
 * rather than silently dropped.
 */
export function toSecretsPatch(input: SecretsInput | undefined, stored: SecretsSummary | undefined): SecretsPatch | undefined {
  if (!input) return undefined;
  const out: SecretsPatch = {};
  if (input.bearer !== undefined && input.bearer !== '') out.bearerToken = input.bearer;
  if (input.header === null) out.header = null;
  else if (input.header) {
    if (input.header.value !== '') out.header = input.header;
    else if (stored?.header !== input.header.name)
      throw bad(['secrets', 'header', 'value'], 'no stored header of this name to keep; give its value');
  }
  if (input.env === null) out.env = null;
  else if (input.env) {
    const env: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(input.env)) {
      if (v !== '') env[k] = v;
      else if (!stored?.env.includes(k)) throw bad(['secrets', 'env', k], 'no stored value to keep; give the value');
    }
    if (Object.keys(env).length) out.env = env;
  }
  if (input.oauth_client === null) out.oauthClient = null;
  else if (input.oauth_client) {
    const c = input.oauth_client;
    if (c.client_id === '') {
      if (c.client_secret !== undefined) throw bad(['secrets', 'oauth_client', 'client_id'], 'a client secret needs its client_id');
      if (!stored?.oauthClient) throw bad(['secrets', 'oauth_client', 'client_id'], 'no stored client to keep; give the client_id');
    } else {
      out.oauthClient =
        c.client_secret === undefined ? { clientId: c.client_id } : { clientId: c.client_id, clientSecret: c.client_secret };
    }
  }
  if (input.oauth === null) out.oauth = null;
  return Object.keys(out).length ? out : undefined;
}
