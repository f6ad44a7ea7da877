/**
 * The settings file on disk (extensions.json, or another format's file:
 * codec.ts): read and validate it into Settings (every error named by server
 * and field path, never quoting a value), and the document as written,
 * keeping the sections other extensions own (it is replaced atomically by
 * platform/atomic-file.ts).
 */
import { readFileSync } from 'node:fs';
import { AlbedoError } from '../../protocol/errors.ts';
import { removeFileDurably, writeFileAtomic } from '../../platform/atomic-file.ts';
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
import { gatewayNameProblem, gatewaySchema, type Gateway } from '../../protocol/gateway.ts';
import { jsonCodec, type SettingsCodec } from './codec.ts';

/** The file as read: its exact bytes (null: absent), the parsed document when it is JSON, and the verdict. */
export interface SettingsRead {
  bytes: Buffer | null;
  doc: Record<string, unknown> | null;
  result: { ok: true; settings: Settings } | { ok: false; issues: SettingsIssue[] };
}

export function emptySettings(): Settings {
  const servers = Object.create(null) as Record<string, SettingsServer>;
  const gateways = Object.create(null) as Record<string, Gateway>;
  return { servers, retryMs: mcpSectionSchema.parse({}).retryMs, enabled: { mcp: true, 'editor-mcp': true }, gateways };
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

/**
 * One server entry validated: `type` inferred as protocol/config.ts does (a `url` means http), then the type's schema.
 * A failure of the schema also gives the schema's own issues (`schema`), as a caller validating the entry would see them.
 */
export function parseServerEntry(
  name: string,
  entry: unknown,
): { ok: true; server: SettingsServer } | { ok: false; issues: SettingsIssue[]; schema?: z.core.$ZodIssue[] } {
  const nameProblem = settingsNameProblem(name);
  if (nameProblem) return { ok: false, issues: [{ server: name, path: [], message: nameProblem }] };
  if (!isObject(entry)) return { ok: false, issues: [{ server: name, path: [], message: 'a server entry must be an object' }] };
  const type = Object.hasOwn(entry, 'type') ? entry.type : Object.hasOwn(entry, 'url') ? 'http' : 'stdio';
  if (type !== 'stdio' && type !== 'http')
    return { ok: false, issues: [{ server: name, path: ['type'], message: 'expected "stdio" or "http"' }] };
  const r = type === 'stdio' ? settingsStdioSchema.safeParse({ ...entry, type }) : settingsHttpSchema.safeParse({ ...entry, type });
  return r.success ? { ok: true, server: r.data } : { ok: false, issues: issuesOf(r.error, name, []), schema: r.error.issues };
}

/**
 * One gateway validated: its name first (gatewayNameProblem), then its definition. Every issue names the
 * gateway (`gateway`) and its path from the top of the document (`["gateways", NAME, …]`). A server it names
 * need not be configured: that is reported where gateways are listed, not here (the server may come later).
 */
export function parseGateway(name: string, def: unknown): { ok: true; gateway: Gateway } | { ok: false; issues: SettingsIssue[] } {
  const at = ['gateways', name];
  const nameProblem = gatewayNameProblem(name);
  if (nameProblem) return { ok: false, issues: [{ server: null, gateway: name, path: at, message: nameProblem }] };
  const r = gatewaySchema.safeParse(def);
  if (r.success) return { ok: true, gateway: r.data };
  return { ok: false, issues: issuesOf(r.error, null, at).map((i) => ({ ...i, gateway: name })) };
}

/**
 * Validates a whole document. Server and gateway names are checked before any
 * object is built from them (`__proto__` as a key would otherwise reach a
 * prototype), and the result's `servers` and `gateways` have no prototype.
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
  if (Object.hasOwn(doc, 'gateways')) {
    const g = doc.gateways;
    if (!isObject(g)) issues.push({ server: null, path: ['gateways'], message: 'gateways must be an object: { NAME: gateway }' });
    for (const name of isObject(g) ? Object.keys(g) : []) {
      const r = parseGateway(name, (g as Record<string, unknown>)[name]);
      if (r.ok) out.gateways[name] = r.gateway;
      else issues.push(...r.issues);
    }
  }
  return issues.length ? { ok: false, issues } : { ok: true, settings: out };
}

/**
 * Reads and validates the file. Absent means the defaults; empty is an error (an editor part-way through a write).
 * `known`: a read of the same file before; when the bytes are still its bytes, it is the answer (not parsed again).
 */
export function readSettingsFile(file: string, codec: SettingsCodec = jsonCodec, known?: SettingsRead): SettingsRead {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      return known && known.bytes === null ? known : { bytes: null, doc: {}, result: { ok: true, settings: emptySettings() } };
    }
    const why = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    return { bytes: null, doc: null, result: { ok: false, issues: [{ server: null, path: [], message: `cannot read ${file}: ${why}` }] } };
  }
  if (known?.bytes && known.bytes.equals(bytes)) return known;
  const text = bytes.toString('utf8');
  if (!text.trim()) return { bytes, doc: null, result: { ok: false, issues: [{ server: null, path: [], message: 'the file is empty' }] } };
  let doc: unknown;
  try {
    doc = codec.parse(text);
  } catch (err) {
    return { bytes, doc: null, result: { ok: false, issues: [{ server: null, path: [], message: (err as Error).message }] } };
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
 * Puts `file` back as it was (`bytes`; null: absent) before a write whose creds half failed (`cause`) — only while it
 * (read through `readPath`) still holds what that write put there (`wrote`): a hand edit made since then stands, as the
 * journal's recovery keeps it.
 */
export function restoreSettingsFile(readPath: string, file: string, bytes: Buffer | null, wrote: string, cause: unknown): void {
  let now: Buffer | null;
  try {
    now = readFileSync(readPath);
  } catch {
    now = null;
  }
  if (now === null || !now.equals(Buffer.from(wrote))) return;
  try {
    if (bytes === null) removeFileDurably(file);
    else writeFileAtomic(file, bytes);
  } catch (err) {
    throw new AlbedoError(
      'ALBEDO_INTERNAL',
      `the credentials could not be written (${(cause as Error).message}), and restoring ${file} failed too ` +
        `(${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); it holds the new entry`,
      { outcome: 'not_run', cause },
    );
  }
}
