/**
 * How the mcp commands show a server and a save to a person: what it runs
 * or reaches, which secrets it has (names only, never a value), what a
 * strict save found.
 */

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

/** A save's outcome in words. */
export function saveLine(name: string, r: any): string {
  const verb = r.saved ? (r.created ? 'added' : 'saved') : 'tried (not saved: --dry-run)';
  const tools = typeof r.server?.tools === 'number' ? `, ${r.server.tools} tools` : '';
  if (!r.check.tried) return `${verb} ${name}: disabled, so not tried`;
  if (r.check.result === 'needs_sign_in') return `${verb} ${name}: it needs a sign-in: albedo mcp sign-in ${name}`;
  return `${verb} ${name}: connected${tools}`;
}
