/**
 * extensions.json on disk: read and validate it into Settings (every error
 * named by server and field path, never quoting a value), and replace it
 * atomically (temporary file in the same directory, fsync, rename, fsync of
 * the directory), keeping the sections other extensions own.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync, mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { z } from 'zod';
import {
  settingsStdioSchema,
  settingsHttpSchema,
  mcpSectionSchema,
  enabledSectionSchema,
  settingsNameProblem,
  type Settings,
  type SettingsIssue,
  type SettingsServer,
} from '../../protocol/settings.ts';

export const SETTINGS_FILE = 'extensions.json';

/** The file as read: its exact bytes (null: absent), the parsed document when it is JSON, and the verdict. */
export interface SettingsRead {
  bytes: Buffer | null;
  doc: Record<string, unknown> | null;
  result: { ok: true; settings: Settings } | { ok: false; issues: SettingsIssue[] };
}

export function emptySettings(): Settings {
  const servers = Object.create(null) as Record<string, SettingsServer>;
  return { servers, retryMs: mcpSectionSchema.parse({}).retryMs, enabled: { mcp: true, 'editor-mcp': true } };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function issuesOf(err: z.ZodError, server: string | null, prefix: Array<string | number>): SettingsIssue[] {
  return err.issues.map((i) => {
    // A bad record key nests the key's own issues: say what is wrong with the key.
    const inner = (i as { issues?: Array<{ message: string }> }).issues;
    const message = i.code === 'invalid_key' && inner?.length ? `bad key: ${inner.map((x) => x.message).join(', ')}` : i.message;
    return { server, path: [...prefix, ...i.path.map((p) => (typeof p === 'symbol' ? String(p) : p))], message };
  });
}

/** One server entry validated: `type` inferred as protocol/config.ts does (a `url` means http), then the type's schema. */
export function parseServerEntry(
  name: string,
  entry: unknown,
): { ok: true; server: SettingsServer } | { ok: false; issues: SettingsIssue[] } {
  const nameProblem = settingsNameProblem(name);
  if (nameProblem) return { ok: false, issues: [{ server: name, path: [], message: nameProblem }] };
  if (!isObject(entry)) return { ok: false, issues: [{ server: name, path: [], message: 'a server entry must be an object' }] };
  const type = Object.hasOwn(entry, 'type') ? entry.type : Object.hasOwn(entry, 'url') ? 'http' : 'stdio';
  if (type !== 'stdio' && type !== 'http')
    return { ok: false, issues: [{ server: name, path: ['type'], message: 'expected "stdio" or "http"' }] };
  const r = type === 'stdio' ? settingsStdioSchema.safeParse({ ...entry, type }) : settingsHttpSchema.safeParse({ ...entry, type });
  return r.success ? { ok: true, server: r.data } : { ok: false, issues: issuesOf(r.error, name, []) };
}

/**
 * Validates a whole document. Server names are checked before any object is
 * built from them (`__proto__` as a key would otherwise reach a prototype),
 * and the result's `servers` has no prototype.
 */
export function parseSettingsDocument(doc: unknown): { ok: true; settings: Settings } | { ok: false; issues: SettingsIssue[] } {
  if (!isObject(doc)) return { ok: false, issues: [{ server: null, path: [], message: 'the file must hold a JSON object' }] };
  const issues: SettingsIssue[] = [];
  const out = emptySettings();
  if (Object.hasOwn(doc, 'mcp')) {
    const m = mcpSectionSchema.safeParse(doc.mcp);
    if (!m.success) issues.push(...issuesOf(m.error, null, ['mcp']));
    else out.retryMs = m.data.retryMs;
    // Servers are checked even when the section's other fields are bad: one list of every issue.
    const servers = isObject(doc.mcp) ? doc.mcp.servers : undefined;
    for (const name of isObject(servers) ? Object.keys(servers) : []) {
      const r = parseServerEntry(name, (servers as Record<string, unknown>)[name]);
      if (r.ok) out.servers[name] = r.server;
      else issues.push(...r.issues);
    }
  }
  if (Object.hasOwn(doc, 'enabled')) {
    const e = enabledSectionSchema.safeParse(doc.enabled);
    if (!e.success) issues.push(...issuesOf(e.error, null, ['enabled']));
    else out.enabled = { mcp: e.data.mcp, 'editor-mcp': e.data['editor-mcp'] };
  }
  return issues.length ? { ok: false, issues } : { ok: true, settings: out };
}

/** JSON.parse's complaint without the excerpt of the file it quotes (a hand-inlined secret could be in it). */
function jsonProblem(err: unknown): string {
  const msg = (err as Error).message;
  const where = /line (\d+) column (\d+)/.exec(msg);
  if (where) return `not valid JSON (line ${where[1]}, column ${where[2]})`;
  if (/Unexpected end/.test(msg)) return 'not valid JSON (it ends too early)';
  return 'not valid JSON';
}

/** Reads and validates the file. Absent means the defaults; empty is an error (an editor part-way through a write). */
export function readSettingsFile(file: string): SettingsRead {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { bytes: null, doc: {}, result: { ok: true, settings: emptySettings() } };
    const why = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    return { bytes: null, doc: null, result: { ok: false, issues: [{ server: null, path: [], message: `cannot read ${file}: ${why}` }] } };
  }
  const text = bytes.toString('utf8');
  if (!text.trim()) return { bytes, doc: null, result: { ok: false, issues: [{ server: null, path: [], message: 'the file is empty' }] } };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return { bytes, doc: null, result: { ok: false, issues: [{ server: null, path: [], message: jsonProblem(err) }] } };
  }
  const result = parseSettingsDocument(doc);
  return { bytes, doc: isObject(doc) ? doc : null, result };
}

/** Fault injection for tests: each is called just before that file's temporary copy is renamed over it; throwing fails the write there. */
export interface WriteHooks {
  beforeConfigRename?: () => void;
  beforeCredsRename?: () => void;
}

/**
 * Replaces `file` with `data`: a temporary file beside it (so the rename is
 * atomic), written and fsynced, renamed over, the directory fsynced. Any
 * failure removes the temporary file and leaves `file` as it was. The mode
 * is `opts.mode`, else an existing file's, else 0600.
 */
export function writeFileAtomic(file: string, data: string | Buffer, opts: { mode?: number; beforeRename?: () => void } = {}): void {
  const dir = path.dirname(file);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let mode = opts.mode ?? 0o600;
  if (opts.mode === undefined) {
    try {
      mode = statSync(file).mode & 0o777;
    } catch {
      // A new file.
    }
  }
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'wx', mode);
  try {
    try {
      if (typeof data === 'string') writeSync(fd, data);
      else writeSync(fd, data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    opts.beforeRename?.();
    renameSync(tmp, file);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      /* already gone */
    }
    throw err;
  }
  syncDir(dir);
}

/** Removes `file` (restoring "absent"), durably. */
export function removeFileDurably(file: string): void {
  try {
    unlinkSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  syncDir(path.dirname(file));
}

/** The rename is durable only once the directory entry is: best effort where a directory cannot be opened for sync. */
function syncDir(dir: string): void {
  try {
    const d = openSync(dir, 'r');
    try {
      fsyncSync(d);
    } finally {
      closeSync(d);
    }
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself is still atomic.
  }
}

/** The document as written: two-space JSON with a final newline. */
export function formatDocument(doc: Record<string, unknown>): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}
