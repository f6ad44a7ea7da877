/**
 * The pure parts of a settings write: the new document (other sections and
 * servers kept as they are), the typed secrets a patch makes of the stored
 * ones, and whether they fit the entry. No I/O here.
 */
import { httpServerSchema, describeZodError } from '../../protocol/config.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import {
  secretsPatchSchema,
  type Settings,
  type SecretsPatch,
  type SectionsPatch,
  type SecretsSummary,
  type SettingsIssue,
  type SettingsServer,
  type StoredSecrets,
} from '../../protocol/settings.ts';

/** ALBEDO_INVALID_CONFIG for a list of issues; the message lists them (they never hold a value). */
export function invalidConfig(issues: SettingsIssue[], lead = 'invalid settings'): AlbedoError {
  const list = issues
    .map((i) => `${i.server === null ? '' : `${i.server}: `}${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`)
    .join('; ');
  return new AlbedoError('ALBEDO_INVALID_CONFIG', `${lead}: ${list}`, { outcome: 'not_run', data: { issues } });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A write's failure: an AlbedoError as it is; a filesystem failure (both files as they were) as ALBEDO_INTERNAL, its errno named. */
export function asWriteError(err: unknown): unknown {
  if (AlbedoError.is(err)) return err;
  const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  return new AlbedoError('ALBEDO_INTERNAL', `the settings could not be written (${why}); nothing changed`, {
    outcome: 'not_run',
    cause: err,
  });
}

/** What a write was planned on: the server's entry as extensions.json held it then (null: none). */
export interface EntryExpectation {
  entry: Record<string, unknown> | null;
}

/** Server `name`'s entry as written in the document (undefined: none). */
export function entryIn(doc: Record<string, unknown>, name: string): unknown {
  const servers = isObject(doc.mcp) ? doc.mcp.servers : undefined;
  return isObject(servers) && Object.hasOwn(servers, name) ? servers[name] : undefined;
}

/**
 * A copy of `obj` one level deep: its own keys (`__proto__` kept as a key) in order, their values shared. The
 * copies below change only what they copied this way: a document read (the store keeps its last one) is never
 * changed, and every value they leave alone is the codec's own — a deep clone would turn TOML's local dates and
 * times (Date subclasses) into plain Dates, written back as instants.
 */
function copyOf(obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) setOwn(out, k, v);
  return out;
}

/**
 * A copy of the document with server `name` set to `entry` (undefined:
 * removed). Every other key — other servers, `retryMs`, `enabled`, other
 * extensions' sections — is kept in place, as it is; a new server goes last.
 */
export function documentWith(doc: Record<string, unknown>, name: string, entry: unknown): Record<string, unknown> {
  const out = copyOf(doc);
  const mcp = isObject(out.mcp) ? copyOf(out.mcp) : {};
  setOwn(out, 'mcp', mcp);
  const servers = isObject(mcp.servers) ? copyOf(mcp.servers) : {};
  setOwn(mcp, 'servers', servers);
  if (entry === undefined) delete servers[name];
  else setOwn(servers, name, entry);
  return out;
}

/**
 * The settings with server `name` set to `entry` (undefined: removed), in the
 * document's order as documentWith leaves it: a server replaced keeps its
 * place, a new one goes last. Nothing is validated again.
 */
export function settingsWith(settings: Settings, name: string, entry: SettingsServer | undefined): Settings {
  const servers = Object.create(null) as Record<string, SettingsServer>;
  for (const [n, e] of Object.entries(settings.servers)) {
    if (n !== name) servers[n] = e;
    else if (entry) servers[n] = entry;
  }
  if (entry && !Object.hasOwn(servers, name)) servers[name] = entry;
  return { ...settings, servers };
}

/**
 * A copy of the document with the sections patch applied (protocol/settings.ts
 * sectionsPatchSchema): `mcp.retryMs`, `enabled.<extension>` and
 * `gateways.<name>` set, or removed by `null` (a gateway is replaced whole,
 * in its place; a new one goes last). Everything else — servers, other keys
 * of these sections, other sections — is kept in place, as it is; a section
 * left empty by removals stays, as written.
 */
export function documentWithSections(doc: Record<string, unknown>, patch: SectionsPatch): Record<string, unknown> {
  const out = copyOf(doc);
  const set = (section: 'mcp' | 'enabled' | 'gateways', key: string, v: unknown): void => {
    if (v === undefined) return;
    const cur = out[section];
    if (v === null) {
      if (!isObject(cur)) return;
      const next = copyOf(cur);
      delete next[key];
      setOwn(out, section, next);
      return;
    }
    const next = isObject(cur) ? copyOf(cur) : {};
    setOwn(next, key, v);
    setOwn(out, section, next);
  };
  set('mcp', 'retryMs', patch.retryMs);
  for (const ext of ['mcp', 'editor-mcp'] as const) set('enabled', ext, patch.enabled?.[ext]);
  for (const [name, def] of Object.entries(patch.gateways ?? {})) set('gateways', name, def);
  return out;
}

/** Validates a patch; its issues are reported under `secrets.*` of the server. */
export function parseSecretsPatch(name: string, patch: unknown): SecretsPatch {
  const r = secretsPatchSchema.safeParse(patch);
  if (r.success) return r.data;
  throw invalidConfig(r.error.issues.map((i) => ({ server: name, path: ['secrets', ...i.path.map(String)], message: i.message })));
}

/**
 * What the stored secrets become: each patch field absent keeps the stored
 * one, null removes it, a value replaces it (env entry by entry). Secrets
 * of the other transport are dropped (they could not be used), and an http
 * server's are bound to its URL. null: nothing left to store.
 */
export function applySecretsPatch(
  name: string,
  entry: SettingsServer,
  cur: StoredSecrets | undefined,
  patch: SecretsPatch | undefined,
): StoredSecrets | null {
  const p = patch ?? {};
  const issues: SettingsIssue[] = [];
  const wrongType = entry.type === 'stdio' ? (['bearerToken', 'header', 'oauthClient'] as const) : (['env'] as const);
  for (const f of wrongType) {
    if (p[f] !== undefined && p[f] !== null) issues.push({ server: name, path: ['secrets', f], message: `not for a ${entry.type} server` });
  }
  if (issues.length) throw invalidConfig(issues);
  const next: StoredSecrets = {};
  if (entry.type === 'stdio') {
    const env: Record<string, string> = { ...(p.env === null ? {} : cur?.env) };
    for (const [k, v] of Object.entries(p.env ?? {})) {
      if (v === null) delete env[k];
      else env[k] = v;
    }
    if (Object.keys(env).length) next.env = env;
  } else {
    const pick = <K extends 'bearerToken' | 'header' | 'oauthClient'>(k: K): void => {
      const v = p[k] === undefined ? cur?.[k] : p[k];
      if (v !== null && v !== undefined) next[k] = v as StoredSecrets[K];
    };
    pick('bearerToken');
    pick('header');
    pick('oauthClient');
  }
  if (Object.keys(next).length === 0) return null;
  if (entry.type === 'http') next.url = entry.url;
  return next;
}

/**
 * Whether stored secrets fit the entry, by protocol/config.ts's own rules
 * over the merged config (placeholders stand in for every value, so no
 * value can reach an error): one Authorization at most, not beside OAuth,
 * no header or env name both in the file and stored, no second client id.
 */
export function secretsConflicts(name: string, entry: SettingsServer, s: StoredSecrets | null): SettingsIssue[] {
  if (!s) return [];
  const issues: SettingsIssue[] = [];
  if (entry.type === 'stdio') {
    for (const k of Object.keys(s.env ?? {})) {
      if (Object.hasOwn(entry.env, k))
        issues.push({ server: name, path: ['secrets', 'env', k], message: `env.${k} is already named in the entry` });
    }
    return issues;
  }
  const headers: Record<string, string> = {};
  for (const k of Object.keys(entry.headers)) headers[k] = 'x';
  if (s.header) {
    if (Object.keys(headers).some((h) => h.toLowerCase() === s.header!.name.toLowerCase())) {
      issues.push({
        server: name,
        path: ['secrets', 'header', 'name'],
        message: `the header ${s.header.name} is already named in the entry`,
      });
    }
    headers[s.header.name] = 'x';
  }
  if (s.bearerToken) {
    if (Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) {
      issues.push({
        server: name,
        path: ['secrets', 'bearerToken'],
        message: 'give either a bearer token or an Authorization header, not both',
      });
    }
    headers.Authorization = 'x';
  }
  if (s.oauthClient && entry.oauth?.clientId) {
    issues.push({ server: name, path: ['secrets', 'oauthClient'], message: 'the entry already gives oauth.clientId' });
  }
  const client = s.oauthClient;
  const oauth = client
    ? { ...(entry.oauth ?? {}), clientId: client.clientId, clientSecret: client.clientSecret ? 'x' : entry.oauth?.clientSecret }
    : entry.oauth;
  const r = httpServerSchema.safeParse({ type: 'http', url: entry.url, headers, bearerTokenEnvVar: entry.bearerTokenEnvVar, oauth });
  if (!r.success && !issues.length)
    issues.push({ server: name, path: ['secrets'], message: `with the entry: ${describeZodError(r.error)}` });
  return issues;
}

/** Which typed secrets are stored, never their values. */
export function summaryOf(s: StoredSecrets | undefined): SecretsSummary {
  return {
    bearerToken: !!s?.bearerToken,
    header: s?.header?.name ?? null,
    env: Object.keys(s?.env ?? {}).sort(),
    oauthClient: !!s?.oauthClient,
  };
}

/** Stored secrets compared by content (the write time aside). */
export function sameSecrets(a: StoredSecrets | null | undefined, b: StoredSecrets | null | undefined): boolean {
  const strip = (s: StoredSecrets | null | undefined): string => (s ? stableJson({ ...s, updatedAt: undefined }) : 'null');
  return strip(a) === strip(b);
}

/** JSON with object keys sorted: equal data, equal text, whatever the key order. */
export function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (isObject(v)) {
    return `{${Object.keys(v)
      .filter((k) => v[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson(v[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}
