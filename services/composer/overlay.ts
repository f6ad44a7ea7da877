/**
 * A session's overlay: the editor's MCP servers (an ACP client's `mcpServers`), composed into the session beside the
 * configured ones under the same names scheme. A publication is all or nothing: the list is validated (names, duplicates,
 * names a configured server has), every new or changed server is started and discovered, all in parallel, and only
 * then installed and the session reloaded with it (prepare.ts takes over the connections just dialled, so no server is
 * started twice). Everything here lives in the composer's memory: the env values are secrets, so nothing persistent
 * holds a command, an argument or a value; a record keeps the names and a digest, an HMAC under a key random per
 * composer incarnation (so nothing in a file helps guess a secret). A restored session whose record names a
 * non-empty overlay shows it `lost` until it is published again.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { AlbedoError } from '../../protocol/errors.ts';
import { describeZodError, stdioServerSchema, type ResolvedStdioServer } from '../../protocol/config.ts';
import { settingsNameProblem } from '../../protocol/settings.ts';
import {
  MAX_OVERLAY_SERVERS,
  overlayServerSchema,
  type OverlayFailure,
  type OverlayResult,
  type OverlayServer,
  type OverlayStatus,
} from '../../protocol/composer.ts';
import { redact, secretValues } from '../../protocol/redact.ts';
import { INHERITED_ENV } from '../config/resolve.ts';
import { label } from '../catalogue/definitions-text.ts';
import { ServerSlot, type Composition, type SlotHost } from './composition.ts';
import type { ComposerServer, SettingsPort, TransportPort } from './ports.ts';
import { Upstream } from './upstream.ts';

/** A key for one composer incarnation: the digests it gives mean nothing to the next one, nor to anyone reading a file. */
export const overlayKey = (): Buffer => randomBytes(32);

/** An overlay server's timeouts: a configured stdio server's defaults. */
const DEFAULTS = stdioServerSchema.parse({ command: '/' });

const paramsSchema = z.strictObject({
  cwd: z.string().min(1).max(4_096),
  servers: z.array(overlayServerSchema).max(MAX_OVERLAY_SERVERS),
});

/** What a record keeps of an overlay: the names and the digest, nothing else. */
export interface OverlayRecord {
  servers: string[];
  digest: string;
}

export interface InstalledOverlay {
  cwd: string;
  digest: string;
  entries: ComposerServer[];
}

function refused(reason: OverlayFailure, message: string, data: { server?: string; index?: number; code?: string } = {}): AlbedoError {
  return new AlbedoError('ALBEDO_OVERLAY_FAILED', message, { outcome: 'not_run', data: { ...data, reason } });
}

/** The overlay state of one session: what is installed, what its record said (lost), connections waiting for a reload. */
export class Overlay {
  readonly #key: Buffer;
  installed: InstalledOverlay | null = null;
  /** A restored session's record named a non-empty overlay the previous composer held: publish again to clear it. */
  lost: OverlayRecord | null;
  /** The active composition was prepared with what is installed (false: its reload failed; the state is reload_pending). */
  applied = true;
  /** Servers a publication started, by name, until a reload takes their connections over (or they are closed). */
  readonly pending = new Map<string, ServerSlot>();

  constructor(key: Buffer, lost?: OverlayRecord) {
    this.#key = key;
    this.lost = lost && lost.servers.length ? { servers: [...lost.servers], digest: lost.digest } : null;
  }

  #hmac(value: unknown): string {
    return createHmac('sha256', this.#key).update(JSON.stringify(value)).digest('hex');
  }

  /** The installed servers, for a preparation. */
  entries(): readonly ComposerServer[] {
    return this.installed?.entries ?? [];
  }

  /** A connection a publication started for this entry (same configuration), still open. */
  pendingFor(entry: ComposerServer): ServerSlot | undefined {
    const p = this.pending.get(entry.name);
    return p && p.entry.fingerprint === entry.fingerprint && p.upstream && p.upstream.state !== 'closed' ? p : undefined;
  }

  status(editorMcp: boolean): OverlayStatus {
    const names = this.installed?.entries.map((e) => e.name) ?? [];
    if (this.lost && !names.length)
      return { servers: [...this.lost.servers], digest: this.lost.digest, state: editorMcp ? 'lost' : 'ready', editorMcp };
    const digest = names.length ? this.installed!.digest : null;
    return { servers: names, digest, state: this.applied ? 'ready' : 'reload_pending', editorMcp };
  }

  /** What the session's record keeps (undefined: no overlay). */
  record(): OverlayRecord | undefined {
    if (this.installed?.entries.length) return { servers: this.installed.entries.map((e) => e.name), digest: this.installed.digest };
    return this.lost ? { servers: [...this.lost.servers], digest: this.lost.digest } : undefined;
  }

  /** The transport's form of one overlay server: run as given in `cwd`, the launcher's reduced environment plus its values. */
  entryOf(cwd: string, s: OverlayServer, daemonEnv: NodeJS.ProcessEnv): ComposerServer {
    const env: Record<string, string> = {};
    for (const k of INHERITED_ENV) {
      const v = daemonEnv[k];
      if (v !== undefined) env[k] = v;
    }
    for (const { name, value } of s.env) env[name] = value;
    const fingerprint = this.#hmac(['server', s.command, s.args, cwd, Object.entries(env).sort(([a], [b]) => (a < b ? -1 : 1))]);
    const server: ResolvedStdioServer = {
      type: 'stdio',
      command: s.command,
      args: [...s.args],
      cwd,
      env,
      startupTimeoutMs: DEFAULTS.startupTimeoutMs,
      callTimeoutMs: DEFAULTS.callTimeoutMs,
      fingerprint,
    };
    const timeouts = { startupTimeoutMs: server.startupTimeoutMs, callTimeoutMs: server.callTimeoutMs };
    return { name: s.name, fingerprint, server, filters: {}, isolate: false, ...timeouts, overlay: true };
  }

  /** The digest of a whole publication: the working directory and every server's command, arguments and values. */
  digestOf(cwd: string, servers: OverlayServer[]): string {
    const byName = [...servers].sort((a, b) => (a.name < b.name ? -1 : 1));
    const canon = byName.map((s) => [s.name, s.command, s.args, [...s.env].sort((a, b) => (a.name < b.name ? -1 : 1))]);
    return this.#hmac(['overlay', cwd, canon]);
  }
}

/** The params checked: the schema, then each name, duplicates, the working directory. Nothing is started. */
export function validate(cwd: unknown, servers: unknown): { cwd: string; servers: OverlayServer[] } {
  const parsed = paramsSchema.safeParse({ cwd, servers });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const index = issue.path[0] === 'servers' && typeof issue.path[1] === 'number' ? issue.path[1] : undefined;
    const name = index !== undefined && Array.isArray(servers) ? (servers[index] as { name?: unknown } | null)?.name : undefined;
    const data = { ...(typeof name === 'string' ? { server: name } : {}), ...(index === undefined ? {} : { index }) };
    throw refused('invalid', `overlay: ${describeZodError(parsed.error)}`, data);
  }
  const p = parsed.data;
  const seen = new Set<string>();
  for (const [index, s] of p.servers.entries()) {
    const problem = settingsNameProblem(s.name);
    if (problem) throw refused('invalid', `overlay server ${index}: ${problem}`, { server: s.name, index });
    if (seen.has(s.name)) throw refused('duplicate', `the overlay names ${label(s.name)} twice`, { server: s.name, index });
    seen.add(s.name);
    const names = new Set<string>();
    for (const e of s.env) {
      if (names.has(e.name))
        throw refused('invalid', `overlay server ${label(s.name)} sets env ${e.name} twice`, { server: s.name, index });
      names.add(e.name);
    }
  }
  let dir = false;
  try {
    dir = path.isAbsolute(p.cwd) && statSync(p.cwd).isDirectory();
  } catch {
    dir = false;
  }
  if (!dir) throw refused('invalid', `the overlay's cwd ${label(p.cwd, 200)} is not an absolute path to a directory`);
  return p;
}

/** At most this many editor servers start at once: each is a process, a launcher and a share of a transport worker. */
const DIAL_AT_ONCE = 8;

/** Every entry dialled, DIAL_AT_ONCE at a time; after a failure no more are started (they are left without outcome). */
async function dialAll(ctx: OverlayContext, entries: ComposerServer[]): Promise<Array<{ slot?: ServerSlot; err?: AlbedoError }>> {
  const out: Array<{ slot?: ServerSlot; err?: AlbedoError }> = entries.map(() => ({}));
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < entries.length && !failed) {
      const i = next++;
      try {
        out[i] = { slot: await dial(ctx, entries[i]!) };
      } catch (err) {
        failed = true;
        out[i] = { err: err as AlbedoError };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(DIAL_AT_ONCE, entries.length) }, worker));
  return out;
}

/** What a publication needs from its session (which runs it in its queue, between reloads). */
export interface OverlayContext {
  active: Composition;
  settings: SettingsPort;
  transport: TransportPort;
  /** The slots' host without catalogue saves: an overlay's catalogue never reaches the store. */
  host: SlotHost;
  newId: () => string;
  capabilities?: Record<string, unknown>;
  register(up: Upstream): void;
  unregister(up: Upstream): void;
  /** One reload of the session (prepare-then-swap) with what is installed now. */
  reload(): Promise<void>;
  daemonEnv?: NodeJS.ProcessEnv;
}

async function configuredNames(settings: SettingsPort): Promise<Set<string>> {
  if (settings.names) return new Set(await settings.names());
  const r = await settings.servers({});
  return new Set([...r.servers.map((s) => s.name), ...(r.disabled ?? [])]);
}

/** Closes a connection a publication started and forgets it. */
async function drop(ctx: OverlayContext, slot: ServerSlot): Promise<void> {
  const up = slot.upstream;
  if (!up) return;
  await up.close();
  ctx.unregister(up);
}

/** The installed server `entry` replaces is running with the same configuration: it keeps its connection. */
function running(ov: Overlay, ctx: OverlayContext, entry: ComposerServer): boolean {
  if (ov.pendingFor(entry)) return true;
  const slot = ctx.active.slot(entry.name);
  return (
    !!slot?.entry.overlay &&
    slot.entry.fingerprint === entry.fingerprint &&
    (slot.state === 'ready' || slot.state === 'advertised') &&
    !!slot.upstream &&
    slot.upstream.state !== 'closed'
  );
}

/** Starts and discovers one server (initialise, every list) into a slot of its own, not yet in any composition. */
async function dial(ctx: OverlayContext, entry: ComposerServer): Promise<ServerSlot> {
  const slot = new ServerSlot(entry, ctx.host, 0, false);
  const up = new Upstream(ctx.newId(), entry, ctx.transport, slot, { capabilities: ctx.capabilities });
  ctx.register(up);
  slot.upstream = up;
  try {
    await up.dial();
  } catch (err) {
    await drop(ctx, slot);
    throw err;
  }
  slot.preparing = false;
  return slot;
}

async function reloaded(ov: Overlay, ctx: OverlayContext): Promise<void> {
  try {
    await ctx.reload();
  } catch (err) {
    const e = err as AlbedoError;
    if (AlbedoError.is(e) && e.code === 'ALBEDO_CLOSED') throw e;
    const secrets = ov.entries().flatMap((x) => secretValues(x.server));
    const message = `the overlay is installed, but the session could not reload: ${redact(String(e?.message), secrets)}`;
    throw new AlbedoError('ALBEDO_OVERLAY_RELOAD_FAILED', message, {
      data: { servers: ov.entries().map((x) => x.name), ...(AlbedoError.is(e) ? { code: e.code } : {}) },
    });
  }
}

/**
 * One publication (the session runs it in its queue, so no reload crosses it). Refusals change nothing; a failed
 * reload leaves the overlay installed (state reload_pending) and rejects with ALBEDO_OVERLAY_RELOAD_FAILED.
 */
export async function publish(ov: Overlay, ctx: OverlayContext, cwdIn: unknown, serversIn: unknown): Promise<OverlayResult> {
  const { cwd, servers } = validate(cwdIn, serversIn);
  const configured = await configuredNames(ctx.settings);
  for (const [index, s] of servers.entries()) {
    if (configured.has(s.name)) {
      throw refused('collision', `the overlay server ${label(s.name)} has the name of a configured server`, { server: s.name, index });
    }
  }
  const names = servers.map((s) => s.name);
  const digest = ov.digestOf(cwd, servers);
  if (!ov.lost && (ov.installed ? ov.installed.digest === digest : !servers.length)) {
    // The same overlay: nothing is started; a reload that failed is tried again.
    if (!ov.applied) await reloaded(ov, ctx);
    return { servers: names, digest, changed: false, state: 'ready' };
  }
  const env = ctx.daemonEnv ?? process.env;
  const entries = servers.map((s) => ov.entryOf(cwd, s, env));
  const fresh = entries.filter((e) => !running(ov, ctx, e));
  const outcomes = await dialAll(ctx, fresh);
  const bad = outcomes.findIndex((o) => o.err);
  if (bad >= 0) {
    await Promise.all(outcomes.map((o) => (o.slot ? drop(ctx, o.slot) : undefined)));
    const entry = fresh[bad]!;
    const err = outcomes[bad]!.err!;
    const code = AlbedoError.is(err) ? err.code : 'ALBEDO_INTERNAL';
    // The transport redacts what a server said; the values are cut again here, since this message may travel far.
    const why = redact(String(err?.message), secretValues(entry.server));
    const message = `the overlay server ${label(entry.name)} could not be started and listed: ${why}`;
    throw refused('failed', message, { server: entry.name, index: names.indexOf(entry.name), code });
  }
  // Installed: connections started for a replaced or removed configuration are closed; the new ones wait for the reload.
  const started = new Map(outcomes.map((o) => [o.slot!.name, o.slot!]));
  for (const [name, slot] of [...ov.pending]) {
    const keep = !started.has(name) && entries.some((e) => ov.pendingFor(e) === slot);
    if (keep) continue;
    ov.pending.delete(name);
    await drop(ctx, slot);
  }
  for (const [name, slot] of started) ov.pending.set(name, slot);
  ov.installed = servers.length ? { cwd, digest, entries } : null;
  ov.lost = null;
  ov.applied = false;
  await reloaded(ov, ctx);
  return { servers: names, digest, changed: true, state: 'ready' };
}

/**
 * A reload swapped `next` in: it was prepared with what is installed, and the connections a publication started that
 * it did not take over (the editor-mcp extension is off) are closed.
 */
export async function swapped(ov: Overlay, next: Composition, unregister: (up: Upstream) => void): Promise<void> {
  ov.applied = true;
  const kept = new Set(next.upstreams());
  const left = [...ov.pending.values()].filter((s) => s.upstream && !kept.has(s.upstream));
  ov.pending.clear();
  await Promise.all(
    left.map(async (s) => {
      await s.upstream!.close();
      unregister(s.upstream!);
    }),
  );
}
