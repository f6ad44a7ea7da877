/**
 * Codex's `[mcp_servers.<name>]` tables (`~/.codex/config.toml`, read with
 * smol-toml) in the shape the planner reads (plan.ts), with variable names
 * spelled `${VAR}` (the `codex` dialect of values.ts):
 *
 * - stdio: `command`, `args`, `cwd`, `env` (literal values), `env_vars` (names
 *   Codex passes through from its own environment: named variables here);
 * - Streamable HTTP: `url`, `http_headers` (literal), `env_http_headers`
 *   (header → variable), `bearer_token_env_var`;
 * - both: `enabled`, `startup_timeout_sec`, `tool_timeout_sec`,
 *   `enabled_tools`, `disabled_tools` (the extras, below).
 */
import { dict, setOwn } from '../client/dict.ts';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A Codex server table as the planner's generic entry; anything it does not know is left for the planner to refuse. */
export function fromCodex(raw: unknown): unknown {
  if (!isObject(raw)) return raw;
  const out: Record<string, unknown> = {};
  for (const k of ['command', 'args', 'cwd', 'url', 'enabled'] as const) if (raw[k] !== undefined) out[k] = raw[k];
  if (raw.env !== undefined || raw.env_vars !== undefined) {
    const env = dict<unknown>();
    for (const [k, v] of isObject(raw.env) ? Object.entries(raw.env) : []) setOwn(env, k, v);
    for (const name of Array.isArray(raw.env_vars) ? raw.env_vars : []) if (typeof name === 'string') setOwn(env, name, `\${${name}}`);
    out.env = raw.env === undefined || isObject(raw.env) ? env : raw.env;
  }
  const headers = dict<unknown>();
  for (const [h, v] of isObject(raw.http_headers) ? Object.entries(raw.http_headers) : []) setOwn(headers, h, v);
  if (isObject(raw.env_http_headers)) {
    for (const [h, v] of Object.entries(raw.env_http_headers)) setOwn(headers, h, typeof v === 'string' ? `\${${v}}` : v);
  }
  if (typeof raw.bearer_token_env_var === 'string') headers.Authorization = `Bearer \${${raw.bearer_token_env_var}}`;
  if (Object.keys(headers).length) out.headers = headers;
  return out;
}

/** Codex's own fields Albedo has: the timeouts (seconds there, ms here) and the tool filters. */
export function codexExtras(raw: Record<string, unknown>, entry: Record<string, unknown>): void {
  const ms = (v: unknown): number | null =>
    typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.min(Math.round(v * 1000), 3_600_000) : null;
  const startup = ms(raw.startup_timeout_sec);
  const call = ms(raw.tool_timeout_sec);
  if (startup) entry.startupTimeoutMs = startup;
  if (call) entry.callTimeoutMs = call;
  const names = (v: unknown): string[] | null => (Array.isArray(v) && v.every((x) => typeof x === 'string' && x) ? (v as string[]) : null);
  const include = names(raw.enabled_tools);
  const exclude = names(raw.disabled_tools);
  if (include) entry.enabledTools = include;
  if (exclude) entry.disabledTools = exclude;
}
