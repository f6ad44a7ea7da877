/**
 * One agent session over its composition (docs/design.md, "A session, step by
 * step"): tools and context of the current generation, calls routed to the
 * server's connection, come-back probes on activity, refreshes applied at the
 * end of a turn, reload as prepare-then-swap, close that reaps. Nothing here
 * runs on a timer: time passes only through the injected clock and the
 * activity the embedder reports.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import { describeZodError } from '../../protocol/config.ts';
import type { ModelTool } from '../../protocol/catalogue.ts';
import {
  activitySchema,
  type Activity,
  type OverlayResult,
  type OverlayStatus,
  type ServerStatus,
  type SessionCallOptions,
  type SessionEvent,
  type SessionExtensions,
} from '../../protocol/composer.ts';
import { definitionSchemas, type ServerCatalogue } from '../catalogue/definitions.ts';
import { label } from '../catalogue/definitions-text.ts';
import { capabilitiesChangedText } from './context.ts';
import { changesSince, shownOf, type Composition, type Shown, type SlotHost } from './composition.ts';
import { prepare, type PrepareContext } from './prepare.ts';
import { changesSinceRecord, viewDigest } from './snapshot.ts';
import { checkCall, checkRequest, heldBy, planCall } from './plan-call.ts';
import type { SessionRequestOp } from '../../protocol/services/composer.ts';
import type { ComposerPorts } from './ports.ts';
import type { Upstream } from './upstream.ts';
import { Overlay, publish, swapped, type OverlayRecord } from './overlay.ts';
import { probeRound } from './probe.ts';
import { extensionsOf, withExtensions, type SessionHooks, type SessionInit, type SessionResume } from './session-init.ts';

/** How many async passes a rebuild makes over schemas that change under it before it builds with what it has. */
const WARM_ROUNDS = 5;

export type { SessionHooks, SessionInit, SessionResume } from './session-init.ts';

type Listener = (event: SessionEvent) => void;

export class Session {
  readonly id: string;
  #ports: ComposerPorts;
  #hooks: SessionHooks;
  #init: SessionInit;
  #active!: Composition;
  #generation = 0;
  #listeners = new Set<Listener>();
  #upstreams = new Set<Upstream>();
  #background = new Set<Promise<unknown>>();
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;
  #closing: Promise<void> | undefined;
  #host: SlotHost;
  /** The overlay's slots' host: as #host, but an overlay's catalogue is never saved. */
  #overlayHost: SlotHost;
  #overlay: Overlay;

  /** Use Composer.open: a session is handed out prepared. */
  constructor(ports: ComposerPorts, hooks: SessionHooks, init: SessionInit, listener?: Listener) {
    this.id = init.id;
    this.#ports = ports;
    this.#hooks = hooks;
    this.#init = init;
    if (listener) this.#listeners.add(listener);
    // A session without turns (a gateway's: SessionOptions.turns false) applies what would wait for the end of a turn as
    // soon as it happens: a server's state changed, or a new catalogue was saved.
    const atOnce = init.options?.turns === false;
    this.#host = {
      clock: ports.clock,
      emit: (e) => {
        this.#emit(e);
        if (atOnce && e.type === 'state') this.#soon();
      },
      save: (row) => {
        if (atOnce) this.#soon();
        return this.#track(
          Promise.resolve()
            .then(() => ports.catalogues.put(row))
            .catch((err: Error) => {
              this.#emit({
                type: 'warning',
                server: row.server,
                message: `the catalogue of ${label(row.server)} could not be saved: ${err.message}`,
              });
            }),
        );
      },
    };
    this.#overlayHost = { ...this.#host, save: () => (atOnce ? this.#soon() : undefined) };
    this.#overlay = new Overlay(hooks.overlayKey, init.resume?.overlay);
  }

  #soonScheduled = false;

  /** A refresh on the next turn of the loop (once, however many changes ask for one meanwhile). */
  #soon(): void {
    if (this.#soonScheduled) return;
    this.#soonScheduled = true;
    setImmediate(() => {
      this.#soonScheduled = false;
      if (!this.#closed) this.#track(this.#refresh().catch(() => {}));
    });
  }

  #ctx(init = this.#init): PrepareContext {
    return {
      ports: this.#ports,
      host: this.#host,
      choice: init.choice,
      profile: init.profile,
      mcp: init.mcp,
      editorMcp: init.editorMcp,
      overlay: this.#overlay,
      overlayHost: this.#overlayHost,
      capabilities: init.options?.capabilities,
      newId: this.#ports.newId ?? (() => crypto.randomUUID()),
      register: (up) => {
        this.#upstreams.add(up);
        this.#hooks.register(up);
      },
      unregister: (up) => {
        this.#upstreams.delete(up);
        this.#hooks.unregister(up);
      },
      track: (p) => this.#track(p),
      resume: this.#init.resume?.connections,
    };
  }

  /** The composition of the current generation, read-only (the composer service publishes its snapshot). */
  get composition(): Composition {
    return this.#active;
  }

  /** The session's choice, profile and extensions (as opened, or as setExtensions last changed them; its record keeps them). */
  get init(): Readonly<SessionInit> {
    return this.#init;
  }

  /** Prepares the first composition; on failure everything it opened is closed and the error is thrown. */
  async open(): Promise<void> {
    try {
      this.#active = await prepare(this.#ctx(), null);
      let m;
      for (let i = 0; (m = this.#unprepared(this.#active.targetEntries())) && i < WARM_ROUNDS; i++) await this.#warm(m);
    } catch (err) {
      await this.close();
      throw err;
    }
    this.#active.rebuild(this.#hooks.schemas.lookup, this.#ports.signInHint, this.#exports);
    this.#generation = 1;
    const resume = this.#init.resume;
    if (resume) await this.#resumed(resume);
    this.#announce(this.#active);
  }

  /**
   * A restored session keeps its generation when it shows what it showed;
   * otherwise the next generation tells the model what changed. Connections
   * the previous incarnation held that this composition did not resume are
   * closed (their server's configuration changed meanwhile).
   */
  async #resumed(resume: SessionResume): Promise<void> {
    this.#generation = resume.generation;
    if (viewDigest(this.#active) !== resume.digest) {
      const changes = changesSinceRecord(resume.shown, this.#active.slots);
      this.#generation++;
      const text = capabilitiesChangedText(changes, this.#generation);
      this.#emit({ type: 'refreshed', generation: this.#generation, text, servers: changes.map((c) => c.server), changes });
    }
    const kept = new Set(this.#active.upstreams().map((up) => up.id));
    const stale = [...resume.connections.values()].filter((c) => !kept.has(c.id));
    // In the background, each once the direct calls on it have settled (a crash does not cut them).
    const t = this.#ports.transport;
    for (const c of stale) this.#track((t.drain?.(c.id) ?? Promise.resolve()).catch(() => {}).then(() => t.close(c.id)));
  }

  /**
   * The schemas a rebuild over `entries` needs that have no answer yet (null:
   * none). Callers run the async pass while this is not null and then build
   * without awaiting anything in between, so the rebuild finds every answer
   * (a catalogue that changed meanwhile is warmed again, up to WARM_ROUNDS).
   */
  #unprepared(entries: ServerCatalogue[]): unknown[] | null {
    const schemas = definitionSchemas(entries, this.#exports);
    return this.#hooks.schemas.has(schemas, this.#init.profile) ? null : schemas;
  }

  /** The session has a working directory: its read_resource definitions take `export` and `file`. */
  get #exports(): boolean {
    return this.#init.options?.cwd !== undefined;
  }

  #warm(schemas: unknown[]): Promise<void> {
    return this.#hooks.schemas.warm(schemas, this.#init.profile);
  }

  #announce(c: Composition): void {
    for (const w of c.warnings) this.#emit({ type: 'warning', ...w });
    for (const message of c.definitions.warnings) this.#emit({ type: 'warning', message });
  }

  #emit(event: SessionEvent): void {
    for (const fn of this.#listeners) {
      try {
        fn(event);
      } catch {
        // A listener's bug must not break the session.
      }
    }
  }

  #track(p: Promise<unknown>): void {
    const q = p.catch(() => {}).finally(() => this.#background.delete(q));
    this.#background.add(q);
  }

  #alive(): void {
    if (this.#closed) throw new AlbedoError('ALBEDO_CLOSED', 'the session is closed', { outcome: 'not_run' });
  }

  /** Subscribes to the session's events; returns the unsubscribe function. */
  on(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The tool generation: 1 after open, one more each time what the model sees changes. */
  get generation(): number {
    return this.#generation;
  }

  /** The model-facing definitions of the current generation. */
  tools(): ModelTool[] {
    return [...this.#active.definitions.tools];
  }

  /** The MCP context text of the current generation ('' when there is nothing to say). */
  context(): string {
    return this.#active.context;
  }

  status(): ServerStatus[] {
    return this.#active.status();
  }

  /** The current composition's warnings: servers left out at preparation, then definitions left out or filtered. */
  warnings(): string[] {
    return [...this.#active.warnings.map((w) => w.message), ...this.#active.definitions.warnings];
  }

  /**
   * Calls an advertised name or `server/tool`. A tool's `isError` result is
   * a result. Errors carry `code` and `outcome`: a server that cannot be
   * reached fails as not run (`data.unavailable`), a transport lost mid-call
   * as unknown; nothing is retried.
   */
  async call(
    name: string,
    args?: unknown,
    opts: SessionCallOptions & { progressToken?: string; capabilities?: Record<string, unknown> } = {},
  ): Promise<unknown> {
    this.#alive();
    checkCall(name, opts);
    const comp = this.#active;
    const { definitions: d } = comp;
    const { route, op } = planCall(
      d.routes,
      comp.slots.map((s) => s.name),
      (server) => comp.slot(server),
      name,
      args,
      d.inputs,
    );
    const slot = comp.slot(route.server)!;
    const timeoutMs = opts.timeoutMs ?? slot.entry.callTimeoutMs;
    // The owner chose the token and follows the connection's progress events for it.
    if (typeof opts.progressToken === 'string') (op as { progressToken?: string }).progressToken = opts.progressToken;
    if (opts.capabilities !== undefined && op.method !== 'ping' && !op.method.endsWith('/list')) {
      (op as { capabilities?: Record<string, unknown> }).capabilities = opts.capabilities;
    }
    return slot.upstream!.request(op, { timeoutMs, budgetMs: slot.entry.startupTimeoutMs + timeoutMs, signal: opts.signal });
  }

  /**
   * Sends `op` (completion/complete, logging/setLevel, resources/subscribe or unsubscribe) to the
   * session's server `server`, dialling it first as a call would (or waiting for its dial). A server
   * the session does not hold is ALBEDO_NOT_FOUND, one waiting for a sign-in ALBEDO_NEEDS_SIGN_IN
   * (not run); one that does not declare the capability is the transport's ALBEDO_NOT_FOUND.
   */
  async request(server: string, op: SessionRequestOp, opts: SessionCallOptions = {}): Promise<unknown> {
    this.#alive();
    checkRequest(server, op, opts);
    const slot = this.#active.slot(server);
    if (!slot?.upstream) {
      const message = `the session has no server ${label(server)}`;
      throw new AlbedoError('ALBEDO_NOT_FOUND', message, { outcome: 'not_run', data: { server, state: slot?.state } });
    }
    if (slot.state === 'needs_sign_in') {
      const message = `server ${label(server)} needs the user to sign in; the request did not run`;
      throw new AlbedoError('ALBEDO_NEEDS_SIGN_IN', message, { outcome: 'not_run', data: { server, state: slot.state } });
    }
    const timeoutMs = opts.timeoutMs ?? slot.entry.callTimeoutMs;
    const budget = { timeoutMs, budgetMs: slot.entry.startupTimeoutMs + timeoutMs, signal: opts.signal };
    return slot.upstream.request(heldBy(op, this.id), budget);
  }

  /**
   * Session activity. `turn_end` first applies what waited for the end of a
   * turn (servers that came back, changed catalogues, servers that left for
   * a sign-in); then, on either kind, the left-out servers whose probe is
   * due are probed in the background. A server a probe finds up joins at
   * the next `turn_end`.
   */
  async activity(kind: Activity): Promise<void> {
    this.#alive();
    const k = activitySchema.safeParse(kind);
    if (!k.success) throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `activity: ${describeZodError(k.error)}`, { outcome: 'not_run' });
    if (k.data === 'turn_end') await this.#refresh();
    this.#probe();
  }

  async #refresh(): Promise<void> {
    const comp = this.#active;
    if (!comp.slots.some((s) => s.pending())) return;
    let m;
    for (let i = 0; (m = this.#unprepared(comp.targetEntries())) && i < WARM_ROUNDS; i++) await this.#warm(m);
    // A reload swapped meanwhile, or the session closed: the new composition was built on its own.
    if (comp !== this.#active || this.#closed || !comp.slots.some((s) => s.pending())) return;
    const before = shownOf(comp);
    if (!comp.rebuild(this.#hooks.schemas.lookup, this.#ports.signInHint, this.#exports)) return;
    this.#refreshed(before, comp);
    for (const message of comp.definitions.warnings) this.#emit({ type: 'warning', message });
  }

  /** A new generation: the "capabilities changed" user turn says what changed since `before`. */
  #refreshed(before: Shown, comp: Composition): void {
    const changes = changesSince(before, comp.slots);
    this.#generation++;
    const text = capabilitiesChangedText(changes, this.#generation);
    this.#emit({ type: 'refreshed', generation: this.#generation, text, servers: changes.map((c) => c.server), changes });
  }

  #probe(): void {
    const comp = this.#active;
    const now = this.#ports.clock.now();
    const due = comp.slots.filter((s) => (s.state === 'left_out' || s.state === 'needs_sign_in') && !s.probing && s.comeBack?.due(now));
    if (!due.length) return;
    for (const s of due) s.probing = true;
    const host = { settings: this.#ports.settings, choice: this.#init.choice, active: () => this.#active, closed: () => this.#closed };
    this.#track(probeRound({ ...host, emit: (e) => this.#emit(e) }, comp, due, now));
  }

  /**
   * Prepares a new composition from the settings as they are now, then
   * swaps it in; the previous connections are closed after the swap (once
   * their calls in flight settle), except those the new one took over (same
   * server, same fingerprint). Bad configuration rejects and keeps the
   * previous composition. Reloads run one at a time.
   */
  reload(): Promise<void> {
    const run = this.#queue.then(() => this.#reloadOnce());
    this.#queue = run.catch(() => {});
    return run;
  }

  /** One reload; with `init` (setExtensions), prepared with it, and it becomes the session's at the swap. */
  async #reloadOnce(init = this.#init): Promise<void> {
    this.#alive();
    const old = this.#active;
    const next = await prepare(this.#ctx(init), old);
    try {
      let m;
      for (let i = 0; (m = this.#unprepared(next.targetEntries(true))) && i < WARM_ROUNDS; i++) await this.#warm(m);
      // From here to the swap nothing is awaited: the old composition serves until the new one replaces it whole.
      this.#alive();
    } catch (err) {
      // Not swapped in (the session closed meanwhile, or warming failed): what it opened is closed again.
      const kept = new Set(old.upstreams());
      await Promise.allSettled(
        next
          .upstreams()
          .filter((up) => !kept.has(up))
          .map((up) => up.close()),
      );
      throw err;
    }
    for (const s of next.slots) {
      if (s.adopt) s.takeOver(s.adopt);
      s.live = true;
      const was = old.slot(s.name);
      if (!was || was.state !== s.state) {
        this.#emit(
          s.reason
            ? { type: 'state', server: s.name, state: s.state, reason: s.reason }
            : { type: 'state', server: s.name, state: s.state },
        );
      }
      // A server taken over while unreachable is dialled in the background, as a fresh preparation would.
      if (s.adopt && s.state === 'advertised' && s.upstream?.state === 'idle') this.#track(s.upstream.dial().catch(() => {}));
      s.adopt = undefined;
    }
    next.rebuild(this.#hooks.schemas.lookup, this.#ports.signInHint, this.#exports);
    this.#init = init;
    this.#active = next;
    const seen = next.context !== old.context || JSON.stringify(next.definitions.tools) !== JSON.stringify(old.definitions.tools);
    if (seen) this.#refreshed(shownOf(old), next);
    this.#announce(next);
    this.#track(swapped(this.#overlay, next, (up) => this.#ctx().unregister(up)));
    const kept = new Set(next.upstreams());
    for (const up of old.upstreams()) {
      if (kept.has(up)) continue;
      this.#track(
        up.retire().finally(() => {
          this.#upstreams.delete(up);
          this.#hooks.unregister(up);
        }),
      );
    }
  }

  /**
   * Publishes the session's overlay (overlay.ts `publish`), in the reload queue: no reload crosses a publication, and
   * the publication's own reload takes over the connections it started.
   */
  setOverlay(cwd: unknown, servers: unknown): Promise<OverlayResult> {
    const { settings, transport } = this.#ports;
    const o = { ...this.#ctx(), settings, transport, host: this.#overlayHost, reload: () => this.#reloadOnce() };
    const run = this.#queue.then(() => (this.#alive(), publish(this.#overlay, { ...o, active: this.#active }, cwd, servers)));
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Changes the session's own choice of extensions (session-init.ts `withExtensions`) and applies it by a reload in the
   * queue: the new choice becomes the session's only at the swap, so a failed reload leaves both the choice and the
   * composition as they were, and rejects with the reload's error.
   */
  setExtensions(change: unknown): Promise<SessionExtensions> {
    this.#alive();
    withExtensions(this.#init, change);
    const run = this.#queue.then(async () => {
      await this.#reloadOnce(withExtensions(this.#init, change));
      return this.extensions();
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  /** The session's own choice of each extension and whether it is in force in the active composition. */
  extensions = (): SessionExtensions => extensionsOf(this.#init, this.#active);

  /** The overlay as a snapshot shows it, and what the session's record keeps of it (names and digest; undefined: none). */
  overlayStatus = (): OverlayStatus => this.#overlay.status(this.#active.editorMcp);
  overlayRecord = (): OverlayRecord | undefined => this.#overlay.record();

  /** Settles once no background work (dials, probes, saves, retiring connections) is left. For tests and orderly shutdown. */
  async idle(): Promise<void> {
    while (this.#background.size) await Promise.allSettled([...this.#background]);
  }

  /** Closes every connection of the session (each server reaped) and waits for its background work. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true;
      // A reload in flight may still open connections: sweep until it has ended and nothing new appeared.
      const closed = new Set<Upstream>();
      const sweep = async (): Promise<number> => {
        const all = [...this.#upstreams].filter((up) => !closed.has(up));
        for (const up of all) closed.add(up);
        await Promise.all(all.map((up) => up.close()));
        return all.length;
      };
      await sweep();
      await this.#queue;
      do await this.idle();
      while (await sweep());
      for (const up of closed) this.#hooks.unregister(up);
      this.#upstreams.clear();
      this.#hooks.closed(this);
      this.#emit({ type: 'closed' });
    })();
    return this.#closing;
  }
}
