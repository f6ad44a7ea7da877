/**
 * How the mcp commands show a server and a save to a person: what it runs
 * or reaches, which secrets it has (names only, never a value), what a
 * strict save found.
 */
import { savedStateLabel, toolsLabel } from '../../web/shared/labels.js';
import { withProgress } from './progress.ts';

/** A server entry's transport: `type`, else http when it has a `url`, else stdio (the rule of extensions.json). */
export function kindOf(config: Record<string, any>): 'http' | 'stdio' {
  return config.type === 'http' || (config.type === undefined && typeof config.url === 'string') ? 'http' : 'stdio';
}

/** What a server runs or reaches, in a few words. */
export function target(config: Record<string, any>): string {
  if (kindOf(config) === 'http') return String(config.url);
  return [config.command, ...(config.args ?? [])].map((w: string) => (/[\s'"\\]/.test(w) ? JSON.stringify(w) : w)).join(' ');
}

/** Which secrets a server has: typed ones stored by the daemon, and the variables it names (never a value). */
export function secretsOf(s: any): string {
  const out: string[] = [];
  if (s.secrets.bearer) out.push('bearer');
  if (s.secrets.header) out.push(`header ${s.secrets.header}`);
  for (const e of s.secrets.env) out.push(`env ${e}`);
  if (s.secrets.oauth_client) out.push('oauth client');
  for (const [k, v] of Object.entries<any>(s.config.env ?? {})) out.push(`env ${k}←${v.env ? `$${v.env}` : `file ${v.file}`}`);
  for (const [k, v] of Object.entries<any>(s.config.headers ?? {})) if (v?.env) out.push(`header ${k}←$${v.env}`);
  if (s.config.bearerTokenEnvVar) out.push(`bearer←$${s.config.bearerTokenEnvVar}`);
  return out.join(', ');
}

/**
 * A save's outcome in words, with the state words of every list
 * (web/shared/labels.js: `mcp list`, the /mcp screen and the pane say the
 * same): `added docs: discovered, 13 tools`, `saved web: needs sign-in
 * (albedo mcp sign-in web)`, `added old: disabled, so not tried`.
 */
export function saveLine(name: string, r: any): string {
  const verb = r.saved ? (r.created ? 'added' : 'saved') : 'tried (not saved: --dry-run)';
  // A saved server's state as the lists show it; a dry run's by what the try found (nothing of it was kept).
  const state: string =
    r.saved && typeof r.server?.state === 'string'
      ? r.server.state
      : !r.check.tried
        ? 'disabled'
        : r.check.result === 'needs_sign_in'
          ? 'needs_sign_in'
          : 'discovered';
  const words = savedStateLabel(state).text;
  if (!r.check.tried) return `${verb} ${name}: ${words}, so not tried`;
  if (r.check.result === 'needs_sign_in') return `${verb} ${name}: ${words} (albedo mcp sign-in ${name})`;
  const tools = r.saved && typeof r.server?.tools === 'number' ? `, ${toolsLabel(r.server.tools)}` : '';
  return `${verb} ${name}: ${words}${tools}`;
}

/**
 * Runs a save (`work`: its request) with a progress line on a terminal
 * ("trying docs… 4 s" while the daemon's strict save tries it; nothing on
 * a pipe). `tries`: false when the save does not try the server
 * (`--disabled`); `json`: no progress (with `--json` the one document is
 * all a command prints, even on a terminal).
 */
export function saving<T>(name: string, o: { tries?: boolean; json?: boolean }, work: () => Promise<T>): Promise<T> {
  if (o.json) return work();
  return withProgress(o.tries === false ? `saving ${name}` : `trying ${name}`, work);
}
