/**
 * One server of another host's config as an Albedo server: the entry for
 * extensions.json (no secret value in it), the typed secrets to store
 * beside it, and the inputs the user must type — or why it is skipped.
 *
 * Literal env values and header values become typed secrets (creds.json);
 * a whole-value variable becomes a named one (`{ "env": "VAR" }`, or
 * `bearerTokenEnvVar` for `Authorization: Bearer ${VAR}`). What Albedo
 * cannot keep faithfully is skipped with a reason, never guessed at: the
 * legacy HTTP+SSE transport, a variable inside an argument or inside other
 * text, a second literal header (one header secret is stored per server).
 *
 * A stdio server runs where its host would run it (docs/config.md "Working
 * directory"): its own `cwd` (a relative one taken from its project, else
 * the workspace), else its project's directory (`Context.project`: a
 * project's file), else — a user-wide file, whose host runs it wherever it
 * was started — no `cwd`: the daemon's empty directory of its own.
 */
import path from 'node:path';
import { dict, setOwn } from '../client/dict.ts';
import { plainValue, secretValue, type Context, type Value } from './values.ts';
import { codexExtras } from './codex.ts';

/** Where an input's value goes once typed. */
export type InputTarget = { kind: 'env'; name: string } | { kind: 'bearer' } | { kind: 'header'; name: string };

export interface Planned {
  name: string;
  kind: 'stdio' | 'http' | null;
  /** The entry as extensions.json will have it (no secret values). */
  entry: Record<string, unknown> | null;
  /** The typed secrets to store (values; never printed). */
  secrets: { bearer?: string; header?: { name: string; value: string }; env?: Record<string, string> };
  inputs: Array<{ id: string; target: InputTarget }>;
  warnings: string[];
  skip: { reason: string; message: string } | null;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Why the daemon would refuse `name` as a server's name, or undefined: the
 * rule of protocol/settings.ts's settingsNameProblem (empty; `__proto__`,
 * `constructor`, `prototype`; `.` and `..`; a control character), kept
 * here because the CLI must not load protocol/'s zod schemas to start.
 * test/cli/import-hostile.test.ts checks that the two agree.
 */
export function serverNameProblem(name: string): string | undefined {
  if (name === '') return 'the server name is empty';
  if (name === '__proto__' || name === 'constructor' || name === 'prototype') return `the server name ${JSON.stringify(name)} is reserved`;
  if (name === '.' || name === '..') return `the server name ${JSON.stringify(name)} is not a name`;
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) return `the server name ${JSON.stringify(name)} holds a control character`;
  return undefined;
}

class Skip extends Error {
  readonly reason: string;
  constructor(reason: string, message: string) {
    super(message);
    this.reason = reason;
  }
}

function plain(raw: unknown, what: string, c: Context): string {
  if (typeof raw !== 'string' || raw === '') throw new Skip('invalid', `${what} is not a non-empty string`);
  const v = plainValue(raw, c);
  if ('embedded' in v) throw new Skip('variable_in_args', `${what} uses ${v.embedded}; the daemon does not expand variables there`);
  return v.value;
}

function value(raw: unknown, what: string, c: Context): Value {
  if (typeof raw !== 'string') throw new Skip('invalid', `${what} is not a string`);
  const v = secretValue(raw, c);
  if (v.kind === 'embedded')
    throw new Skip('variable_in_text', `${what} uses ${v.what} inside other text; only a whole value can name a variable`);
  return v;
}

/** Plans one server; never throws. */
export function plan(name: string, raw: unknown, c: Context): Planned {
  const p: Planned = { name, kind: null, entry: null, secrets: {}, inputs: [], warnings: [], skip: null };
  try {
    const bad = serverNameProblem(name);
    if (bad) throw new Skip('invalid', `${bad}; the daemon would refuse it`);
    if (!isObject(raw)) throw new Skip('invalid', 'the entry is not an object');
    const entry: Record<string, unknown> = {};
    const { kind, url } = transport(raw, p, c);
    if (kind === 'http') {
      p.kind = 'http';
      entry.url = plain(url, 'url', c);
      httpHeaders(raw.headers, entry, p, c);
    } else {
      p.kind = 'stdio';
      entry.command = plain(raw.command, 'command', c);
      const args = raw.args ?? [];
      if (!Array.isArray(args)) throw new Skip('invalid', 'args is not an array');
      entry.args = args.map((a, i) => plain(a, `args[${i}]`, c));
      if (raw.cwd !== undefined) entry.cwd = path.resolve(c.project ?? c.workspace, plain(raw.cwd, 'cwd', c));
      else if (c.project) entry.cwd = c.project;
      stdioEnv(raw.env, entry, p, c);
      if (raw.envFile !== undefined) p.warnings.push('envFile is not imported: its variables are not passed to the server');
    }
    if (raw.disabled === true || raw.enabled === false) entry.enabled = false;
    if (c.dialect === 'gemini') geminiExtras(raw, entry);
    if (c.dialect === 'codex' && isObject(c.original)) codexExtras(c.original, entry);
    p.entry = entry;
  } catch (err) {
    if (!(err instanceof Skip)) throw err;
    p.skip = { reason: err.reason, message: err.message };
    p.secrets = {};
    p.inputs = [];
  }
  return p;
}

const LEGACY_SSE = 'the legacy HTTP+SSE transport is not supported (only Streamable HTTP)';

/**
 * Which transport an entry names, and its URL. Claude Code, VS Code, Gemini
 * CLI (and Cursor, when one is written) say it in `type`: `http` or
 * `streamable-http` is Streamable HTTP, `sse` the legacy HTTP+SSE transport
 * (skipped), `stdio` a command; any other is a transport Albedo does not
 * have. Without a `type`, a `url` is Streamable HTTP and a `command` stdio.
 * Gemini CLI's older `httpUrl` is Streamable HTTP whatever else the entry
 * says (Gemini CLI prefers it too); its bare `url` it tries as Streamable
 * HTTP and falls back to SSE, which Albedo cannot (a warning says so; the
 * strict save's try shows which it is). Codex has no `type`: its `url` is
 * Streamable HTTP, its only remote transport.
 */
function transport(raw: Record<string, unknown>, p: Planned, c: Context): { kind: 'stdio' | 'http'; url?: unknown } {
  if (c.dialect === 'gemini' && raw.httpUrl !== undefined) return { kind: 'http', url: raw.httpUrl };
  const type = raw.type;
  if (type !== undefined && typeof type !== 'string') throw new Skip('invalid', 'type is not a string');
  switch (type) {
    case 'http':
    case 'streamable-http':
      return { kind: 'http', url: raw.url };
    case 'sse':
      throw new Skip('unsupported_transport', LEGACY_SSE);
    case 'stdio':
      return { kind: 'stdio' };
    case undefined:
      break;
    default:
      throw new Skip('unsupported_transport', `the transport ${JSON.stringify(type)} is not supported (only stdio and Streamable HTTP)`);
  }
  if (raw.url !== undefined) {
    if (c.dialect === 'gemini') {
      p.warnings.push('url has no type: Gemini CLI falls back to the legacy SSE transport when Streamable HTTP fails; Albedo does not');
    }
    return { kind: 'http', url: raw.url };
  }
  if (raw.command !== undefined) return { kind: 'stdio' };
  throw new Skip('invalid', 'neither a command nor a url');
}

function stdioEnv(raw: unknown, entry: Record<string, unknown>, p: Planned, c: Context): void {
  if (raw === undefined) return;
  if (!isObject(raw)) throw new Skip('invalid', 'env is not an object');
  const named = dict<{ env: string }>();
  for (const [k, rawV] of Object.entries(raw)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new Skip('invalid', `env ${JSON.stringify(k)} is not a variable name`);
    const v = value(rawV, `env ${k}`, c);
    if (v.kind === 'named') {
      setOwn(named, k, { env: v.name });
      if (v.dropped !== undefined) p.warnings.push(`env ${k}: the default of \${${v.name}:-…} is not kept`);
    } else if (v.kind === 'input') p.inputs.push({ id: v.id, target: { kind: 'env', name: k } });
    else if (v.kind === 'literal') {
      if (v.value === '') throw new Skip('invalid', `env ${k} is empty; an empty value cannot be stored`);
      setOwn((p.secrets.env ??= dict()), k, v.value);
    }
  }
  if (Object.keys(named).length) entry.env = named;
}

function httpHeaders(raw: unknown, entry: Record<string, unknown>, p: Planned, c: Context): void {
  if (raw === undefined) return;
  if (!isObject(raw)) throw new Skip('invalid', 'headers is not an object');
  const named = dict<{ env: string }>();
  const literal = (name: string, v: string): void => {
    if (p.secrets.header) {
      throw new Skip(
        'too_many_header_secrets',
        `headers ${p.secrets.header.name} and ${name} both hold values; one header secret is stored per server`,
      );
    }
    p.secrets.header = { name, value: v };
  };
  for (const [name, rawV] of Object.entries(raw)) {
    if (typeof rawV !== 'string') throw new Skip('invalid', `header ${name} is not a string`);
    const bearer = /^authorization$/i.test(name) ? /^Bearer\s+(.+)$/i.exec(rawV.trim()) : null;
    if (bearer) {
      const v = value(bearer[1]!, `header ${name}`, c);
      if (v.kind === 'named') entry.bearerTokenEnvVar = v.name;
      else if (v.kind === 'input') p.inputs.push({ id: v.id, target: { kind: 'bearer' } });
      else if (v.kind === 'literal') p.secrets.bearer = v.value;
      continue;
    }
    const v = value(rawV, `header ${name}`, c);
    if (v.kind === 'named') {
      setOwn(named, name, { env: v.name });
      if (v.dropped !== undefined) p.warnings.push(`header ${name}: the default of \${${v.name}:-…} is not kept`);
    } else if (v.kind === 'input') p.inputs.push({ id: v.id, target: { kind: 'header', name } });
    else if (v.kind === 'literal') literal(name, v.value);
  }
  if (p.inputs.filter((i) => i.target.kind === 'header').length + (p.secrets.header ? 1 : 0) > 1) {
    throw new Skip('too_many_header_secrets', 'more than one header needs a stored value; one header secret is stored per server');
  }
  if (Object.keys(named).length) entry.headers = named;
}

/** Gemini CLI's own fields that Albedo has: timeout (ms per request), includeTools, excludeTools. */
function geminiExtras(raw: Record<string, unknown>, entry: Record<string, unknown>): void {
  if (typeof raw.timeout === 'number' && Number.isInteger(raw.timeout) && raw.timeout > 0)
    entry.callTimeoutMs = Math.min(raw.timeout, 3_600_000);
  const names = (v: unknown): string[] | null => (Array.isArray(v) && v.every((x) => typeof x === 'string' && x) ? (v as string[]) : null);
  const include = names(raw.includeTools);
  const exclude = names(raw.excludeTools);
  if (include) entry.enabledTools = include;
  if (exclude) entry.disabledTools = exclude;
}

/** Where a planned stdio server will run, for the preview: its `cwd`, or the daemon's default; '' for an http one. */
export function runsIn(p: Planned): string {
  if (p.kind !== 'stdio' || !p.entry) return '';
  return typeof p.entry.cwd === 'string' ? p.entry.cwd : '(an empty directory of its own)';
}

/** What a plan would store, by name only (for the preview): "env TOKEN", "bearer", "header X-Key". */
export function secretNames(p: Planned): string[] {
  const out: string[] = [];
  if (p.secrets.bearer !== undefined) out.push('bearer');
  if (p.secrets.header) out.push(`header ${p.secrets.header.name}`);
  for (const k of Object.keys(p.secrets.env ?? {})) out.push(`env ${k}`);
  for (const i of p.inputs)
    out.push(i.target.kind === 'env' ? `env ${i.target.name}` : i.target.kind === 'bearer' ? 'bearer' : `header ${i.target.name}`);
  return out;
}
