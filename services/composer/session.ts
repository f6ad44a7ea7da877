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
  type ServerStatus,
  type SessionCallOptions,
  type SessionEvent,
  type SessionOptions,
} from '../../protocol/composer.ts';
import { definitionSchemas, type ServerCatalogue } from '../catalogue/definitions.ts';
import { label } from '../catalogue/definitions-text.ts';
import type { SchemaCache } from '../catalogue/schema-cache.ts';
import { capabilitiesChangedText } from './context.ts';
import { changesSince, shownOf, type Composition, type Shown, type SlotHost } from './composition.ts';
import { prepare, type PrepareContext } from './prepare.ts';
import { changesSinceRecord, viewDigest, type ShownRecord } from './snapshot.ts';
import { checkCall, checkRequest, planCall } from './plan-call.ts';
import type { SessionRequestOp } from '../../protocol/services/composer.ts';
import type { ComposerPorts, ServerChoice } from './ports.ts';
import type { Upstream } from './upstream.ts';

/** How many async passes a rebuild makes over schemas that change under it before it builds with what it has. */
const WARM_ROUNDS = 5;

/** What a session needs from its composer: the registry its transport events are dispatched through, and the shared schema answers. */
export interface SessionHooks {
  readonly schemas: SchemaCache;
  register(up: Upstream): void;
  unregister(up: Upstream): void;
  closed(session: Session): void;
}

export interface SessionInit {
  id: string;
  choice: ServerChoice;
  profile: string;
  mcp: boolean | undefined;
  /** The options it was opened with, as given (a session record keeps them). */
  options?: SessionOptions;
  /** A session restored by a restarted composer, from its record. */
  resume?: SessionResume;
}

/** What a session record keeps to restore a session: its generation, what it showed, the connections it held. */
export interface SessionResume {
  generation: number;
  /** viewDigest of that generation: when the restored one shows the same, the generation stays and the model is told nothing. */
  digest: string;
  shown: ShownRecord[];
  connections: ReadonlyMap<string, { id: string; fingerprint: string }>;
}

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

  #ctx(): PrepareContext {
    return {
      ports: this.#ports,
      host: this.#host,
      choice: this.#init.choice,
      profile: this.#init.profile,
      mcp: this.#init.mcp,
      capabilities: this.#init.options?.capabilities,
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

  /** The session's choice, profile and extension switch, as opened (a session record keeps them). */
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
    this.#active.rebuild(this.#hooks.schemas.lookup, this.#ports.signInHint);
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
    const schemas = definitionSchemas(entries);
    return this.#hooks.schemas.has(schemas, this.#init.profile) ? null : schemas;
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
    return slot.upstream.request(op, { timeoutMs, budgetMs: slot.entry.startupTimeoutMs + timeoutMs, signal: opts.signal });
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
    if (!comp.rebuild(this.#hooks.schemas.lookup, this.#ports.signInHint)) return;
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
    this.#track(this.#probeRound(comp, due, now));
  }

  /** One round of come-back probes: the servers are resolved again (a sign-in changes a fingerprint), then dialled in parallel. */
  async #probeRound(comp: Composition, due: Composition['slots'], now: number): Promise<void> {
    let fresh: Awaited<ReturnType<ComposerPorts['settings']['servers']>> | undefined;
    try {
      fresh = await this.#ports.settings.servers(this.#init.choice);
    } catch (err) {
      this.#emit({ type: 'warning', message: `come-back probes skipped: the servers could not be resolved (${(err as Error).message})` });
    }
    await Promise.all(
      due.map(async (s) => {
        const entry = fresh?.servers.find((e) => e.name === s.name);
        let ok = false;
        if (entry && s.upstream && !this.#closed) {
          s.entry = entry;
          s.upstream.entry = entry;
          ok = await s.upstream.dial().then(
            () => true,
            () => false,
          );
        }
        s.probing = false;
        if (!ok) s.comeBack?.failed(now);
        if (comp !== this.#active || this.#closed) return;
        this.#emit(
          ok
            ? { type: 'probed', server: s.name, ok, at: now }
            : { type: 'probed', server: s.name, ok, at: now, nextProbeAt: s.comeBack?.dueAt },
        );
      }),
    );
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

  async #reloadOnce(): Promise<void> {
    this.#alive();
    const old = this.#active;
    const next = await prepare(this.#ctx(), old);
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
    next.rebuild(this.#hooks.schemas.lookup, this.#ports.signInHint);
    this.#active = next;
    const seen = next.context !== old.context || JSON.stringify(next.definitions.tools) !== JSON.stringify(old.definitions.tools);
    if (seen) this.#refreshed(shownOf(old), next);
    this.#announce(next);
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
