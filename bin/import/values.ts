/**
 * The variable syntaxes of other hosts' MCP configs, read into what Albedo
 * can keep: a literal value (to be stored as a typed secret), a variable the
 * daemon reads (`{ "env": "VAR" }`), or an input the user must type (VS
 * Code's `${input:id}`). Path-like built-ins (`${userHome}`,
 * `${workspaceFolder}`) are not secrets and are substituted.
 *
 * - Claude Desktop: no variables (every value is literal).
 * - Claude Code (`.mcp.json`, `~/.claude.json`): `${VAR}` and `${VAR:-default}`.
 * - VS Code (`mcp.json`): `${env:VAR}`, `${input:id}`, `${workspaceFolder}`, `${userHome}`.
 * - Cursor (`mcp.json`): `${env:VAR}`, `${userHome}`, `${workspaceFolder}`, `${workspaceFolderBasename}`, `${pathSeparator}`.
 * - Gemini CLI (`settings.json`): `$VAR` and `${VAR}`.
 * - Codex (`config.toml`): no variables in values; codex.ts spells the names it holds (`env_vars`, `env_http_headers`,
 *   `bearer_token_env_var`) as `${VAR}`.
 */
import os from 'node:os';
import path from 'node:path';

export type Dialect = 'claude' | 'claude-code' | 'vscode' | 'cursor' | 'gemini' | 'codex';

/** One value as Albedo can take it. */
export type Value =
  | { kind: 'literal'; value: string }
  | { kind: 'named'; name: string; dropped?: string }
  | { kind: 'input'; id: string }
  /** Holds a variable inside other text, which Albedo cannot name (only whole values are named). */
  | { kind: 'embedded'; what: string };

export interface Context {
  dialect: Dialect;
  /** The workspace folder `${workspaceFolder}` means: the folder that holds `.vscode/`, `.cursor/`, or the current one. */
  workspace: string;
  /** The project the server's file belongs to, where its host runs it (sources.ts projectOf); null or absent: a user-wide file. */
  project?: string | null;
  /** The server's entry as its host wrote it, for fields the generic shape does not carry (Codex's timeouts). */
  original?: unknown;
}

/** A `${…}` or `$VAR` reference in the dialect: its name, and what kind. */
interface Ref {
  text: string;
  kind: 'env' | 'input' | 'builtin';
  name: string;
  fallback?: string;
}

function refs(s: string, d: Dialect): Ref[] {
  if (d === 'claude') return [];
  const out: Ref[] = [];
  const re = d === 'gemini' ? /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g : /\$\{([^}]+)\}/g;
  for (let m; (m = re.exec(s));) {
    const inner = (m[1] ?? m[2])!;
    if (d === 'gemini') out.push({ text: m[0], kind: 'env', name: inner });
    else if (d === 'claude-code' || d === 'codex') {
      const [name, fallback] = inner.split(':-', 2) as [string, string | undefined];
      out.push({ text: m[0], kind: 'env', name, fallback });
    } else if (inner.startsWith('env:')) out.push({ text: m[0], kind: 'env', name: inner.slice(4) });
    else if (inner.startsWith('input:')) out.push({ text: m[0], kind: 'input', name: inner.slice(6) });
    else out.push({ text: m[0], kind: 'builtin', name: inner });
  }
  return out;
}

/** What a built-in (`${userHome}` …) stands for, or undefined for one Albedo does not know. */
function builtin(name: string, c: Context): string | undefined {
  switch (name) {
    case 'userHome':
      return os.homedir();
    case 'workspaceFolder':
      return c.workspace;
    case 'workspaceFolderBasename':
      return path.basename(c.workspace);
    case 'pathSeparator':
    case '/':
      return path.sep;
    default:
      return undefined;
  }
}

/** `s` with every built-in substituted; variables and inputs are left as they are. */
function substitute(s: string, c: Context): string {
  let out = s;
  for (const r of refs(s, c.dialect)) {
    if (r.kind !== 'builtin') continue;
    const v = builtin(r.name, c);
    if (v !== undefined) out = out.replace(r.text, v);
  }
  return out;
}

/** A value that may be a secret (an env value, a header value): literal, named, an input, or embedded. */
export function secretValue(raw: string, c: Context): Value {
  const s = substitute(raw, c);
  const rs = refs(s, c.dialect).filter((r) => r.kind !== 'builtin' || builtin(r.name, c) === undefined);
  if (!rs.length) return { kind: 'literal', value: s };
  if (rs.length === 1 && rs[0]!.text === s) {
    const r = rs[0]!;
    if (r.kind === 'input') return { kind: 'input', id: r.name };
    if (r.kind === 'env' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(r.name)) {
      return r.fallback !== undefined ? { kind: 'named', name: r.name, dropped: r.fallback } : { kind: 'named', name: r.name };
    }
  }
  return { kind: 'embedded', what: rs[0]!.text };
}

/**
 * A value that is not a secret (a command, an argument, a URL, a working
 * directory): built-ins substituted; a variable in it cannot be kept (the
 * daemon does not expand arguments), so it is reported.
 */
export function plainValue(raw: string, c: Context): { value: string } | { embedded: string } {
  const s = substitute(raw, c);
  const left = refs(s, c.dialect).find((r) => r.kind !== 'builtin' || builtin(r.name, c) === undefined);
  return left ? { embedded: left.text } : { value: s };
}
