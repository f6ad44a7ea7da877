/**
 * Preparing a composition (docs/design.md, "A session, step by step",
 * 1–3): the settings resolve the chosen servers (bad configuration fails
 * the whole preparation); a server with a saved catalogue for its current fingerprint
 * is advertised at once and dialled in the background; the others are
 * dialled now, all in parallel, and the ones that fail are left out with a
 * warning (or wait for a sign-in). A catalogue over the size limit fails the
 * whole preparation, as bad configuration does. A failed preparation closes
 * every connection it opened and changes nothing else.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import { label } from '../catalogue/definitions-text.ts';
import type { SavedCatalogue } from '../catalogue/store.ts';
import { ComeBack } from './come-back.ts';
import { Composition, ServerSlot, type PrepareWarning, type SlotHost } from './composition.ts';
import type { Overlay } from './overlay.ts';
import type { ComposerPorts, ComposerServer, ResolvedServers, ServerChoice } from './ports.ts';
import { isShared, sharedId } from './shared-port.ts';
import { Upstream } from './upstream.ts';

export interface PrepareContext {
  ports: ComposerPorts;
  host: SlotHost;
  choice: ServerChoice;
  profile: string;
  /** The session's own choice for the `mcp` extension (undefined: the settings' default). */
  mcp: boolean | undefined;
  /** The session's own choice for the `editor-mcp` extension, its overlay shown (undefined: the settings' default). */
  editorMcp?: boolean;
  /** The session's overlay: its installed servers join the composition (catalogues never looked up nor saved). */
  overlay?: Overlay;
  /** The overlay slots' host: no catalogue saves. */
  overlayHost?: SlotHost;
  /** The client capabilities its servers are told (SessionOptions.capabilities; undefined: the owner's). */
  capabilities?: Record<string, unknown>;
  newId: () => string;
  /** Connections are registered with the session as they are made (its transport events find them by id). */
  register(up: Upstream): void;
  unregister(up: Upstream): void;
  /** Background work the session waits for in idle() and close(). */
  track(p: Promise<unknown>): void;
  /** A restored session (the composer restarted): per server, the connection the previous incarnation held and under which fingerprint. */
  resume?: ReadonlyMap<string, { id: string; fingerprint: string }>;
}

/** The composition of a session with MCP off (by its own choice or the settings'). */
export function emptyComposition(ctx: PrepareContext, retryMs = 0, editorMcp?: boolean): Composition {
  const c = new Composition({ slots: [], retryMs, profile: ctx.profile, preparedAt: ctx.ports.clock.now(), warnings: [] });
  c.editorMcp = ctx.editorMcp ?? editorMcp ?? true;
  c.mcp = false;
  return c;
}

/**
 * The overlay's servers this composition shows: none with the editor-mcp extension off; one whose name a configured
 * server took since it was published is left out (the configured one wins), with a warning.
 */
function overlayEntries(ctx: PrepareContext, taken: Set<string>, editorMcp: boolean, warnings: PrepareWarning[]): ComposerServer[] {
  if (!editorMcp || !ctx.overlay) return [];
  return ctx.overlay.entries().filter((e) => {
    if (!taken.has(e.name)) return true;
    const message = `the overlay server ${label(e.name)} is left out: a configured server now has its name`;
    warnings.push({ server: e.name, message, code: 'ALBEDO_OVERLAY_FAILED' });
    return false;
  });
}

/** The entries the session's choice selects: include (each name must be configured) minus exclude. */
export function select(resolved: ResolvedServers, choice: ServerChoice): { servers: ComposerServer[]; disabled: string[] } {
  const names = new Set<string>();
  for (const s of resolved.servers) {
    if (names.has(s.name)) {
      throw new AlbedoError('ALBEDO_INVALID_CONFIG', `the server ${label(s.name)} is configured twice`, {
        outcome: 'not_run',
        data: { server: s.name },
      });
    }
    names.add(s.name);
  }
  const disabled = resolved.disabled ?? [];
  const include = choice.include ? new Set(choice.include) : null;
  const exclude = new Set(choice.exclude ?? []);
  for (const n of include ?? []) {
    if (!names.has(n) && !disabled.includes(n)) {
      const message = `the session includes ${label(n)}, which is not a configured server`;
      throw new AlbedoError('ALBEDO_NOT_FOUND', message, { outcome: 'not_run', data: { server: n } });
    }
  }
  const chosen = (n: string): boolean => (include === null || include.has(n)) && !exclude.has(n);
  return { servers: resolved.servers.filter((s) => chosen(s.name)), disabled: disabled.filter(chosen) };
}

/** A switched-off server's slot entry: it has no connection and is never dialled, so its transport form is inert. */
function disabledEntry(name: string): ComposerServer {
  const server = {
    type: 'stdio' as const,
    command: '',
    args: [],
    cwd: '',
    env: {},
    startupTimeoutMs: 0,
    callTimeoutMs: 0,
    fingerprint: '',
  };
  return { name, fingerprint: '', server, filters: {}, isolate: false, startupTimeoutMs: 0, callTimeoutMs: 0 };
}

/** The previous slot whose connection a new one can take over: same server, same fingerprint, advertised or ready. */
function reusable(previous: Composition | null, entry: ComposerServer): ServerSlot | undefined {
  const old = previous?.slot(entry.name);
  if (!old?.upstream || old.upstream.state === 'closed') return undefined;
  if (old.entry.fingerprint !== entry.fingerprint || old.entry.isolate !== entry.isolate) return undefined;
  // `share` turned on or off: the session moves to a connection of the other kind (shared-port.ts).
  if ((old.entry.share ?? false) !== (entry.share ?? false)) return undefined;
  return old.state === 'ready' || old.state === 'advertised' ? old : undefined;
}

async function savedFor(ctx: PrepareContext, entry: ComposerServer, warnings: PrepareWarning[]): Promise<SavedCatalogue | undefined> {
  try {
    return await ctx.ports.catalogues.current(entry.name, entry.fingerprint);
  } catch (err) {
    // An unreadable store costs the saved catalogue, not the session: the server is dialled now instead.
    const message = `server ${label(entry.name)}: its saved catalogue could not be read (${(err as Error).message}); dialling it now`;
    warnings.push({ server: entry.name, message });
    return undefined;
  }
}

/**
 * Prepares a composition. With `previous` (a reload), a server whose
 * fingerprint did not change keeps its connection: the new slot takes it
 * over at the swap, so nothing of the previous composition changes unless
 * the swap happens.
 */
export async function prepare(ctx: PrepareContext, previous: Composition | null): Promise<Composition> {
  if (ctx.mcp === false) return emptyComposition(ctx);
  const resolved = await ctx.ports.settings.servers(ctx.choice);
  if (resolved.mcpEnabled === false && ctx.mcp !== true) return emptyComposition(ctx, resolved.retryMs, resolved.editorMcpEnabled);
  const chosen = select(resolved, ctx.choice);
  const { disabled } = chosen;
  const editorMcp = ctx.editorMcp ?? resolved.editorMcpEnabled ?? true;
  const live = previous === null;
  // What an entry exposes of $ALBEDO_HOME (its working directory or an argument there) is said in every session over it.
  const warnings: PrepareWarning[] = chosen.servers.flatMap((e) =>
    (e.warnings ?? []).map((m) => ({ server: e.name, message: `server ${label(e.name)}: ${m}` })),
  );
  const taken = new Set([...resolved.servers.map((e) => e.name), ...(resolved.disabled ?? [])]);
  const servers = [...chosen.servers, ...overlayEntries(ctx, taken, editorMcp, warnings)];
  const created: Upstream[] = [];
  const slots: ServerSlot[] = [];
  const dials: ServerSlot[] = [];
  try {
    // An overlay server a publication just started is taken over as a kept connection is: it is not started twice.
    const adopted = servers.map((entry) => reusable(previous, entry) ?? (entry.overlay ? ctx.overlay?.pendingFor(entry) : undefined));
    // All saved rows at once: a catalogue service answers them in one round trip. An overlay's are never saved.
    const rows = await Promise.all(servers.map((entry, i) => (adopted[i] || entry.overlay ? undefined : savedFor(ctx, entry, warnings))));
    for (const [i, entry] of servers.entries()) {
      const slot = new ServerSlot(entry, entry.overlay ? (ctx.overlayHost ?? ctx.host) : ctx.host, resolved.retryMs, live);
      slots.push(slot);
      const old = adopted[i];
      if (old) {
        slot.adopt = old;
        continue;
      }
      const was = previous === null && !entry.overlay ? ctx.resume?.get(entry.name) : undefined;
      const resumable = was !== undefined && was.fingerprint === entry.fingerprint;
      const id = resumable ? was.id : isShared(entry, rows[i]?.era) ? sharedId(entry, ctx.capabilities) : ctx.newId();
      const up = new Upstream(id, entry, ctx.ports.transport, slot, {
        resumable,
        capabilities: ctx.capabilities,
      });
      ctx.register(up);
      created.push(up);
      slot.upstream = up;
      const saved = rows[i];
      if (saved) {
        slot.latest = saved;
        slot.setState('advertised');
        // Advertised at once; the dial runs in the background and tells the slot how it went.
        ctx.track(up.dial().catch(() => {}));
      } else {
        slot.setState('starting');
        dials.push(slot);
      }
    }
    for (const name of disabled) {
      const slot = new ServerSlot(disabledEntry(name), ctx.host, resolved.retryMs, live);
      slot.setState('disabled');
      slots.push(slot);
    }
    const failures = await Promise.all(
      dials.map((s) =>
        s.upstream!.dial().then(
          () => null,
          (err: AlbedoError) => err,
        ),
      ),
    );
    const tooLarge = failures.find((e) => e?.code === 'ALBEDO_CATALOGUE_TOO_LARGE');
    if (tooLarge) throw tooLarge;
    const preparedAt = ctx.ports.clock.now();
    dials.forEach((slot, i) => {
      const err = failures[i];
      if (!err) return;
      slot.leaveOut(err);
      const message =
        err.code === 'ALBEDO_NEEDS_SIGN_IN'
          ? `server ${label(slot.name)} needs the user to sign in; it is left out until then`
          : `server ${label(slot.name)} is left out: ${err.message}`;
      warnings.push({ server: slot.name, message, code: err.code });
    });
    for (const s of slots) {
      s.preparing = false;
      // Left out now (or by a background dial that asked for a sign-in): the first probe is retryMs after preparation.
      if ((s.state === 'left_out' || s.state === 'needs_sign_in') && !s.comeBack) s.comeBack = new ComeBack(resolved.retryMs, preparedAt);
    }
    const comp = new Composition({ slots, retryMs: resolved.retryMs, profile: ctx.profile, preparedAt, warnings });
    comp.editorMcp = editorMcp;
    return comp;
  } catch (err) {
    await Promise.all(
      created.map(async (up) => {
        await up.close();
        ctx.unregister(up);
      }),
    );
    throw err;
  }
}
