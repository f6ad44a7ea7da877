/**
 * Where each host keeps its MCP servers, and how its file holds them:
 *
 * | --from | default file | servers under |
 * | --- | --- | --- |
 * | claude | Claude Desktop's `claude_desktop_config.json` (~/.config/Claude, ~/Library/Application Support/Claude, %APPDATA%\Claude) | `mcpServers` |
 * | claude-code | `./.mcp.json`, else `~/.claude.json` | `mcpServers`; in `~/.claude.json` also `projects[<cwd>].mcpServers` |
 * | vscode | `./.vscode/mcp.json`, else the user profile's `mcp.json` | `servers` (and `inputs`); a settings.json's `mcp.servers` |
 * | cursor | `./.cursor/mcp.json`, else `~/.cursor/mcp.json` | `mcpServers` |
 * | gemini | `./.gemini/settings.json`, else `~/.gemini/settings.json` | `mcpServers` |
 * | codex | `./.codex/config.toml`, else `$CODEX_HOME/config.toml` (`~/.codex`) | `[mcp_servers.<name>]` (TOML, read with smol-toml; codex.ts) |
 *
 * The others are JSON; VS Code's and Cursor's may hold comments and trailing
 * commas (JSONC, read with jsonc-parser, which reports errors instead of
 * guessing).
 *
 * Where a server runs (docs/config.md "Working directory"): a project's file
 * (`.mcp.json`, `.vscode/`, `.cursor/`, `.gemini/`, `.codex/` in a project,
 * and `~/.claude.json`'s `projects[<cwd>]`) is that project's, and its
 * host runs the servers there: each server is given that `project`. A
 * user-wide file (Claude Desktop's, `~/.claude.json`'s own servers, the
 * user profile's, `~/.cursor`, `~/.gemini`, `$CODEX_HOME`) names no
 * directory: its host runs the servers wherever it was started (Claude
 * Desktop in one it does not document), so `project` is null and they keep
 * the daemon's default, an empty directory of their own. A project at the
 * user's home is not taken for one (the home holds ~/.albedo).
 */
import { closeSync, constants, existsSync, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CliError, EXIT } from '../client/errors.ts';
import type { Dialect } from './values.ts';
import { parse as parseToml } from 'smol-toml';
import { parse as parseJsonc, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { fromCodex } from './codex.ts';

export const SOURCES = ['claude', 'claude-code', 'vscode', 'cursor', 'codex', 'gemini'] as const;
export type Source = (typeof SOURCES)[number];

/** A VS Code input (`inputs[]`): asked for when a server that uses it is added. */
export interface Input {
  id: string;
  description: string;
  password: boolean;
}

export interface Read {
  from: Source;
  file: string;
  dialect: Dialect;
  /** What `${workspaceFolder}` means for this file. */
  workspace: string;
  /**
   * `raw` in the generic shape plan.ts reads; `original` as the host wrote
   * it; `project` the directory its host runs it in when it has no `cwd`
   * (the project of a project's file), null for a user-wide one.
   */
  servers: Array<{ name: string; raw: unknown; original?: unknown; project: string | null }>;
  inputs: Map<string, Input>;
}

function appData(): string {
  const home = os.homedir();
  if (process.platform === 'darwin') return path.join(home, 'Library', 'Application Support');
  if (process.platform === 'win32') return process.env.APPDATA ?? path.join(home, 'AppData', 'Roaming');
  return process.env.XDG_CONFIG_HOME || path.join(home, '.config');
}

/** The file `--from` reads when none is given: the project's own first, then the user's. */
export function defaultFile(from: Source): string {
  const home = os.homedir();
  const first = (...candidates: string[]): string => candidates.find((f) => existsSync(f)) ?? candidates[candidates.length - 1]!;
  switch (from) {
    case 'claude':
      return path.join(appData(), 'Claude', 'claude_desktop_config.json');
    case 'claude-code':
      return first(path.resolve('.mcp.json'), path.join(home, '.claude.json'));
    case 'vscode':
      return first(path.resolve('.vscode', 'mcp.json'), path.join(appData(), 'Code', 'User', 'mcp.json'));
    case 'cursor':
      return first(path.resolve('.cursor', 'mcp.json'), path.join(home, '.cursor', 'mcp.json'));
    case 'gemini':
      return first(path.resolve('.gemini', 'settings.json'), path.join(home, '.gemini', 'settings.json'));
    case 'codex':
      return first(path.resolve('.codex', 'config.toml'), path.join(process.env.CODEX_HOME || path.join(home, '.codex'), 'config.toml'));
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function serversOf(o: unknown): Array<{ name: string; raw: unknown }> {
  return isObject(o) ? Object.entries(o).map(([name, raw]) => ({ name, raw })) : [];
}

/** `dir`, unless it is the user's home (which holds ~/.albedo: never a server's directory by default), then null. */
function notHome(dir: string): string | null {
  let home = '';
  try {
    home = os.homedir();
  } catch {
    /* no home */
  }
  return home && path.resolve(dir) === path.resolve(home) ? null : dir;
}

/**
 * The project `f` belongs to, or null for a user-wide file: a `.mcp.json`'s
 * folder; the folder holding `.vscode/`, `.cursor/`, `.gemini/` or `.codex/`
 * (not `$CODEX_HOME` itself, nor the home's own `~/.cursor` and the like).
 */
export function projectOf(from: Source, f: string): string | null {
  const dir = path.dirname(f);
  if (from === 'claude') return null;
  if (from === 'claude-code') return path.basename(f) === '.mcp.json' ? notHome(dir) : null;
  const dot = { vscode: '.vscode', cursor: '.cursor', gemini: '.gemini', codex: '.codex' }[from];
  if (path.basename(dir) !== dot) return null;
  if (from === 'codex' && process.env.CODEX_HOME && path.resolve(process.env.CODEX_HOME) === dir) return null;
  return notHome(path.dirname(dir));
}

/** A config file larger than this is not one (the biggest real ones are kilobytes): refused before it is read. */
export const MAX_CONFIG_BYTES = 16 * 1024 * 1024;

const invalid = (message: string): CliError => new CliError('ALBEDO_INVALID_CONFIG', message, EXIT.failed);

/** Why `st` cannot be a config file, or null. */
function notAConfig(f: string, st: Stats): CliError | null {
  if (!st.isFile()) return invalid(`${f} is not a regular file`);
  if (st.size > MAX_CONFIG_BYTES) return invalid(`${f} is larger than ${MAX_CONFIG_BYTES / 1024 / 1024} MiB; it is not a config file`);
  return null;
}

/**
 * The text of `f`: looked at (statSync) before it is opened, so a device
 * (/dev/zero), a FIFO or a directory is refused rather than read forever,
 * and a file over the limit is refused unread. It is opened without
 * blocking and checked again by its descriptor (it may have been swapped
 * meanwhile), and never read past the limit.
 */
function readConfig(f: string): string {
  let st: Stats;
  try {
    st = statSync(f);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new CliError('ALBEDO_NOT_FOUND', `no such file: ${f}`, EXIT.notFound);
    throw invalid(`cannot read ${f}: ${code ?? (err as Error).message}`);
  }
  const bad = notAConfig(f, st);
  if (bad) throw bad;
  let fd: number;
  try {
    fd = openSync(f, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (err) {
    throw invalid(`cannot read ${f}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    const again = notAConfig(f, fstatSync(fd));
    if (again) throw again;
    const chunks: Buffer[] = [];
    let n = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(64 * 1024);
      const got = readSync(fd, chunk, 0, chunk.length, null);
      if (got === 0) break;
      chunks.push(chunk.subarray(0, got));
      n += got;
      if (n > MAX_CONFIG_BYTES) throw invalid(`${f} is larger than ${MAX_CONFIG_BYTES / 1024 / 1024} MiB; it is not a config file`);
    }
    return Buffer.concat(chunks, n).toString('utf8');
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw invalid(`cannot read ${f}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  } finally {
    closeSync(fd);
  }
}

/** A parser that ran out of stack on a document nested absurdly deep: that is a bad file, not an internal error. */
function tooDeep(err: unknown): boolean {
  return err instanceof RangeError;
}

/** No host's config nests deeper than a few levels; past this a document is not one, whichever parser read it. */
export const MAX_CONFIG_DEPTH = 1_000;

/** Whether `doc` nests arrays and objects deeper than `max` (walked without recursion: the depth is what is in doubt). */
function deeperThan(doc: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[doc, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= max) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/** The file's document: TOML for Codex, JSONC for VS Code and Cursor, JSON for the others; an object, or a clear error. */
function parseDocument(from: Source, f: string, text: string): Record<string, unknown> {
  let doc: unknown;
  if (from === 'codex') {
    try {
      doc = parseToml(text);
    } catch (err) {
      if (tooDeep(err)) throw invalid(`${f} is not valid TOML: it is nested too deeply`);
      throw invalid(`${f} is not valid TOML: ${(err as Error).message.split('\n')[0]}`);
    }
  } else if (from === 'vscode' || from === 'cursor') {
    const errors: ParseError[] = [];
    try {
      doc = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false });
    } catch (err) {
      if (tooDeep(err)) throw invalid(`${f} is not valid JSON with comments: it is nested too deeply`);
      throw err;
    }
    if (errors.length) {
      const e = errors[0]!;
      throw invalid(`${f} is not valid JSON with comments: ${printParseErrorCode(e.error)} at offset ${e.offset}`);
    }
  } else {
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw invalid(`${f} is not valid JSON: ${tooDeep(err) ? 'it is nested too deeply' : (err as Error).message}`);
    }
  }
  if (!isObject(doc)) throw invalid(`${f} does not hold an object`);
  if (deeperThan(doc, MAX_CONFIG_DEPTH)) throw invalid(`${f} is nested more than ${MAX_CONFIG_DEPTH} levels deep; it is not a config file`);
  return doc;
}

/** The servers `from`'s file holds. */
export function readSource(from: Source, file: string | undefined): Read {
  const f = path.resolve(file ?? defaultFile(from));
  const doc = parseDocument(from, f, readConfig(f));
  const project = projectOf(from, f);
  if (from === 'codex') {
    const servers = serversOf(doc.mcp_servers).map(({ name, raw }) => ({ name, raw: fromCodex(raw), original: raw, project }));
    return { from, file: f, dialect: 'codex', workspace: process.cwd(), servers, inputs: new Map() };
  }

  // .vscode/mcp.json and .cursor/mcp.json are a workspace's: ${workspaceFolder} is the folder that holds them.
  const parent = path.basename(path.dirname(f));
  const workspace = parent === '.vscode' || parent === '.cursor' ? path.dirname(path.dirname(f)) : process.cwd();
  const inputs = new Map<string, Input>();
  let servers: Array<{ name: string; raw: unknown; project: string | null }>;
  switch (from) {
    case 'vscode': {
      const mcp = isObject(doc.mcp) ? doc.mcp : doc;
      servers = serversOf(mcp.servers).map((x) => ({ ...x, project }));
      for (const i of Array.isArray(mcp.inputs) ? mcp.inputs : []) {
        if (isObject(i) && typeof i.id === 'string') {
          inputs.set(i.id, {
            id: i.id,
            description: typeof i.description === 'string' ? i.description : i.id,
            password: i.password === true,
          });
        }
      }
      break;
    }
    case 'claude-code': {
      servers = serversOf(doc.mcpServers).map((x) => ({ ...x, project }));
      // ~/.claude.json: the user's servers, then this project's ("local" scope), which win on a name both have; Claude Code runs
      // those in that project.
      const local = isObject(doc.projects) && Object.hasOwn(doc.projects, process.cwd()) ? doc.projects[process.cwd()] : undefined;
      if (isObject(local)) {
        for (const s of serversOf(local.mcpServers)) {
          servers = [...servers.filter((x) => x.name !== s.name), { ...s, project: notHome(process.cwd()) }];
        }
      }
      break;
    }
    default:
      servers = serversOf(doc.mcpServers).map((x) => ({ ...x, project }));
  }
  return { from, file: f, dialect: from as Dialect, workspace, servers, inputs };
}
