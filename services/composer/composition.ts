/**
 * A session's composition: per configured server a slot with its state, its
 * connection, the newest discovery known for its fingerprint (`latest`) and
 * the catalogue the current tool generation advertises (`advertised`). The
 * two differ between a change (a background discovery that differs, a
 * list_changed, a server that came back or now needs a sign-in) and the end
 * of the turn that applies it. The slot is its connection's owner: it turns
 * what the connection observed into states, saved catalogues and events.
 */
import type { AlbedoError } from '../../protocol/errors.ts';
import type { Catalogue } from '../../protocol/mcp.ts';
import type { OpenResult } from '../../protocol/services/transport.ts';
import type { ContextCost, ServerState, ServerStatus, SessionEvent, StateReason } from '../../protocol/composer.ts';
import { sameDiscovery, type SavedCatalogue } from '../catalogue/store.ts';
import { catalogueDefinitions, type Definitions, type ServerCatalogue } from '../catalogue/definitions.ts';
import type { Normalise } from '../../protocol/catalogue.ts';
import { ComeBack } from './come-back.ts';
import { contextOf, type Change, type ContextServer } from './context.ts';
import { definitionTokens, tokensOf } from '../catalogue/tokens.ts';
import type { Clock, ComposerServer } from './ports.ts';
import type { Upstream, UpstreamOwner } from './upstream.ts';
import type { RetryProgress } from './connect-retry.ts';

/** What a slot needs from its session. */
export interface SlotHost {
  readonly clock: Clock;
  emit(event: SessionEvent): void;
  /** Saves a discovery in the background (tracked by the session; a failure is a warning). */
  save(row: SavedCatalogue): void;
}

export const reasonOf = (err: AlbedoError): StateReason => ({ code: err.code, message: err.message });

/** Two catalogues, either absent, that advertise the same thing. */
export const sameCatalogue = (a: SavedCatalogue | null, b: SavedCatalogue | null): boolean =>
  a === b || (a !== null && b !== null && sameDiscovery(a, b));

export function rowOf(entry: ComposerServer, r: OpenResult, savedAt: number): SavedCatalogue {
  return {
    server: entry.name,
    fingerprint: entry.fingerprint,
    era: r.era,
    protocolVersion: r.protocolVersion,
    serverInfo: r.serverInfo,
    capabilities: r.capabilities,
    instructions: r.instructions,
    catalogue: r.catalogue,
    savedAt,
  };
}

export class ServerSlot implements UpstreamOwner {
  readonly name: string;
  entry: ComposerServer;
  upstream: Upstream | null = null;
  state: ServerState = 'starting';
  reason: StateReason | undefined;
  latest: SavedCatalogue | null = null;
  advertised: SavedCatalogue | null = null;
  /** Whether the current generation shows it (advertised) or which line the context gives it. */
  shown = '';
  comeBack: ComeBack | null = null;
  probing = false;
  /** Still inside its preparation: the preparation decides what a failed first dial means. */
  preparing = true;
  /** Its composition is the session's (events are published), or it is being prepared for the first one. */
  live: boolean;
  /** Its first dial's connect-retry progress while the episode waits; null otherwise. */
  retry: NonNullable<ServerStatus['retry']> | null = null;
  /** Reload: the slot of the previous composition whose connection this one takes over at the swap. */
  adopt: ServerSlot | undefined;
  #host: SlotHost;
  #retryMs: number;
  /** The first state is always published (the initial value is only a placeholder). */
  #announced = false;

  constructor(entry: ComposerServer, host: SlotHost, retryMs: number, live: boolean) {
    this.name = entry.name;
    this.entry = entry;
    this.#host = host;
    this.#retryMs = retryMs;
    this.live = live;
  }

  setState(state: ServerState, reason?: StateReason): void {
    const same = this.#announced && this.state === state && this.reason?.code === reason?.code;
    this.state = state;
    this.reason = reason;
    if (this.live) this.#announced = true;
    if (!same && this.live)
      this.#host.emit(reason ? { type: 'state', server: this.name, state, reason } : { type: 'state', server: this.name, state });
  }

  /** What the next generation should advertise for it. */
  target(): SavedCatalogue | null {
    return this.state === 'ready' || this.state === 'advertised' ? this.latest : null;
  }

  /** Its line in a generation: advertised, or which context list it is in. */
  showing(): string {
    return this.target() ? 'advertised' : this.state;
  }

  /** A change for it waits for the end of the turn. */
  pending(): boolean {
    return !sameCatalogue(this.target(), this.advertised) || this.showing() !== this.shown;
  }

  /** Left out (or waiting for a sign-in): it is probed on activity, `retryMs` from now first. */
  leaveOut(err: AlbedoError): void {
    this.setState(err.code === 'ALBEDO_NEEDS_SIGN_IN' ? 'needs_sign_in' : 'left_out', reasonOf(err));
    if (!this.comeBack && !this.preparing) this.comeBack = new ComeBack(this.#retryMs, this.#host.clock.now());
  }

  /** Its first dial failed and is tried again (connect-retry.ts): shown in its status until the episode ends. */
  retrying(p: RetryProgress): void {
    const first = this.retry === null;
    this.retry = { attempt: p.attempt, of: p.of, nextAt: p.nextAt, code: p.code };
    // Said once per episode (a state event with its reason) for a server the session already shows (advertised, its
    // dial in the background), never for one its preparation waits for; the status shows each attempt.
    if (first && this.live && this.state !== 'starting') {
      const message = `the first dial failed (${p.code}); trying again, attempt ${p.attempt} of ${p.of}`;
      this.#host.emit({ type: 'state', server: this.name, state: this.state, reason: { code: p.code, message } });
    }
  }

  opened(r: OpenResult): void {
    this.retry = null;
    const row = rowOf(this.entry, r, this.#host.clock.now());
    this.latest = row;
    this.#host.save(row);
    for (const w of r.warnings) this.warned(w);
    this.comeBack = null;
    this.setState('ready');
  }

  failed(err: AlbedoError): void {
    this.retry = null;
    if (this.state === 'starting' || this.state === 'disabled') return;
    if (err.code === 'ALBEDO_NEEDS_SIGN_IN' || this.state === 'left_out' || this.state === 'needs_sign_in') return this.leaveOut(err);
    // A saved catalogue keeps it advertised: its calls report it unavailable and dial again.
    this.setState('advertised', reasonOf(err));
  }

  dropped(err: AlbedoError): void {
    if (this.state === 'ready') this.setState('advertised', reasonOf(err));
  }

  catalogueChanged(catalogue: Catalogue): void {
    if (!this.latest) return;
    this.latest = { ...this.latest, catalogue, savedAt: this.#host.clock.now() };
    this.#host.save(this.latest);
  }

  warned(message: string, code?: string): void {
    if (!this.live) return;
    this.#host.emit(code ? { type: 'warning', server: this.name, message, code } : { type: 'warning', server: this.name, message });
  }

  /** Reload: takes over the previous slot's connection and what it knew, at the swap. */
  takeOver(old: ServerSlot): void {
    this.upstream = old.upstream;
    this.state = old.state;
    this.reason = old.reason;
    this.latest = old.latest;
    this.comeBack = old.comeBack;
    this.retry = old.retry;
    this.upstream!.owner = this;
  }
}

/** A warning of a preparation, with the server it is about. */
export interface PrepareWarning {
  message: string;
  server?: string;
  code?: string;
}

export interface CompositionInit {
  slots: ServerSlot[];
  retryMs: number;
  profile: string;
  preparedAt: number;
  warnings: PrepareWarning[];
}

/** The servers of one preparation, and the tools and context of the generation it shows. */
export class Composition {
  readonly slots: ServerSlot[];
  readonly retryMs: number;
  readonly profile: string;
  readonly preparedAt: number;
  /** What its preparation warned about (left-out servers); the definitions' warnings are in `definitions`. */
  readonly warnings: PrepareWarning[];
  definitions: Definitions = { tools: [], routes: new Map(), inputs: new Map(), warnings: [], leftOut: [], notes: [] };
  context = '';
  /** What the current generation costs the context (estimated tokens). */
  cost: ContextCost = { definitions: 0, context: 0, servers: [] };
  /** Whether it shows the session's overlay (the editor-mcp extension, as the session or the settings chose). */
  editorMcp = true;
  /** Whether the mcp extension is on in it (the session's choice, else the settings'): off, it has no server at all. */
  mcp = true;
  #byName: Map<string, ServerSlot>;

  constructor(init: CompositionInit) {
    this.slots = init.slots;
    this.retryMs = init.retryMs;
    this.profile = init.profile;
    this.preparedAt = init.preparedAt;
    this.warnings = init.warnings;
    this.#byName = new Map(init.slots.map((s) => [s.name, s]));
  }

  slot(name: string): ServerSlot | undefined {
    return this.#byName.get(name);
  }

  /** The connections it holds. */
  upstreams(): Upstream[] {
    return this.slots.flatMap((s) => (s.upstream ? [s.upstream] : []));
  }

  /**
   * The catalogues the next generation would advertise. `adopting` (a reload
   * before its swap): a slot that will take over a previous connection
   * counts with what that one holds.
   */
  targetEntries(adopting = false): ServerCatalogue[] {
    return this.slots.flatMap((s) => {
      const row = (adopting && s.adopt ? s.adopt : s).target();
      return row ? [{ server: s.name, catalogue: row.catalogue, filters: s.entry.filters }] : [];
    });
  }

  /**
   * Builds a generation: every slot advertises its target, the definitions
   * and the context are computed again. Synchronous, so nothing changes in
   * the middle: `normalise` must already have the answers for
   * targetEntries()'s schemas (the session warms its schema cache first).
   * Returns true when what the model sees (tools or context) changed.
   * `exports`: the session has a working directory (read_resource may export).
   */
  rebuild(normalise: Normalise, signInHint?: (server: string) => string, exports = false): boolean {
    for (const s of this.slots) {
      s.advertised = s.target();
      s.shown = s.showing();
    }
    const entries = this.targetEntries();
    const defs = catalogueDefinitions(entries, { normalise, profile: this.profile, exports });
    const counts = new Map<string, number>();
    for (const r of defs.routes.values()) counts.set(r.server, (counts.get(r.server) ?? 0) + 1);
    const servers: ContextServer[] = this.slots.map((s) => ({
      name: s.name,
      state: s.state,
      advertised: s.advertised !== null,
      tools: counts.get(s.name) ?? 0,
      instructions: s.advertised?.instructions ?? null,
      reason: s.reason,
    }));
    const ctx = contextOf(servers, signInHint);
    const context = ctx.text;
    const changed = context !== this.context || JSON.stringify(defs.tools) !== JSON.stringify(this.definitions.tools);
    this.definitions = defs;
    this.context = context;
    this.cost = costOf(
      defs,
      ctx,
      this.slots.map((s) => s.name),
    );
    return changed;
  }

  status(): ServerStatus[] {
    const counts = new Map<string, number>();
    for (const r of this.definitions.routes.values()) counts.set(r.server, (counts.get(r.server) ?? 0) + 1);
    return this.slots.map((s) => {
      const out: ServerStatus = {
        name: s.name,
        state: s.state,
        advertised: s.advertised !== null,
        tools: counts.get(s.name) ?? 0,
        pending: s.pending(),
      };
      if (s.reason) out.reason = s.reason;
      if (s.comeBack && (s.state === 'left_out' || s.state === 'needs_sign_in')) out.nextProbeAt = s.comeBack.dueAt;
      if (s.retry) out.retry = { ...s.retry };
      return out;
    });
  }
}

/** A generation's cost: each definition by the server it routes to, each server's part of the context text. */
function costOf(defs: Definitions, ctx: { text: string; byServer: Map<string, number> }, names: string[]): ContextCost {
  const per = new Map(names.map((n) => [n, { name: n, tools: 0, definitions: 0, context: tokensOf(ctx.byServer.get(n) ?? 0) }]));
  let definitions = 0;
  for (const t of defs.tools) {
    const n = definitionTokens(t);
    definitions += n;
    const s = per.get(defs.routes.get(t.name)!.server);
    if (s) {
      s.tools++;
      s.definitions += n;
    }
  }
  return { definitions, context: tokensOf(ctx.text.length), servers: [...per.values()] };
}

/** What a generation showed of each server, to tell what a new one changed. */
export type Shown = Map<string, { advertised: SavedCatalogue | null; shown: string }>;

export const shownOf = (c: Composition): Shown => new Map(c.slots.map((s) => [s.name, { advertised: s.advertised, shown: s.shown }]));

/** How each server's part changed from `before` to the generation the slots show now (a reload may add and remove servers). */
export function changesSince(before: Shown, slots: readonly ServerSlot[]): Array<{ server: string; change: Change }> {
  const out: Array<{ server: string; change: Change }> = [];
  const gone = (s: ServerSlot): Change => (s.state === 'needs_sign_in' ? 'needs_sign_in' : 'left');
  for (const s of slots) {
    const b = before.get(s.name);
    let change: Change | null = null;
    if (!b) change = 'added';
    else if (!b.advertised && s.advertised) change = 'joined';
    else if (b.advertised && !s.advertised) change = gone(s);
    else if (b.advertised && s.advertised) change = sameCatalogue(b.advertised, s.advertised) ? null : 'changed';
    else if (b.shown !== s.shown) change = gone(s);
    if (change) out.push({ server: s.name, change });
  }
  const now = new Set(slots.map((s) => s.name));
  for (const name of before.keys()) if (!now.has(name)) out.push({ server: name, change: 'removed' });
  return out;
}
