/**
 * One agent session as `albedo.sessions` hands it out (api/sessions.ts opens
 * them). It mirrors its session's last snapshot from the composer, so
 * tools(), context() and status() answer at once, and sends a call for an
 * open server straight to that connection's transport worker: one thread
 * hop, as `connect()` pays. Only a call whose server is not open (a dial to
 * wait for, a redial) goes through the composer.
 */
import type { Kernel } from '../kernel/kernel.ts';
import { AlbedoError } from '../protocol/errors.ts';
import type { InputCheck, ModelTool, RouteEntry } from '../protocol/catalogue.ts';
import type {
  Activity,
  ContextCost,
  ExtensionsChange,
  OverlayResult,
  OverlayServer,
  OverlayStatus,
  ServerStatus,
  SessionCallOptions,
  SessionEvent,
  SessionExtensions,
  ToolsMode,
} from '../protocol/composer.ts';
import type { KeptContext, SessionRequestOp, SessionSnapshot, SessionView } from '../protocol/services/composer.ts';
import type { Caps, ClientOp } from '../protocol/services/transport.ts';
import { checkCall, checkRequest, heldBy, planCall } from '../services/composer/public.ts';
import { withProgress } from './progress.ts';
import { keptCost, keptOfSnapshot } from './session-context.ts';
import type { DirectCalls } from './direct-calls.ts';
import {
  CALL_TOOL,
  Deferred,
  READ_TOOL,
  SEARCH_TOOL,
  callArgs,
  defers,
  readArgs,
  searchArgs,
  searchResult,
  type FoundTool,
} from './deferred.ts';
import { budgetResult, charsOf, pageResult, type ResultPage, type ResultStore } from './results.ts';
import { exportResult, planExport } from './resource-export.ts';
import { MAX_RESULT_HINT_CHARS } from '../protocol/composer.ts';
import { actorGone, badProgress, extensionsChange, newer, noProgress, type AlbedoCallOptions } from './session-support.ts';

export type { AlbedoCallOptions } from './session-support.ts';
import { definitionsTokens } from '../services/catalogue/public.ts';

/** Slack over a call's own budget, so the composer's (or the transport's) own timeout answers first. */
const SLACK_MS = 5_000;
/** A session's open: dials of servers without a saved catalogue run within it (each bounded by its own startup timeout). */
export const OPEN_TIMEOUT_MS = 10 * 60_000;

type Listener = (event: SessionEvent) => void;

/**
 * One agent session as the embedding API hands it out. Everything the model
 * sees comes from here: `tools()` of the current generation, `context()` as
 * of the last compaction (`compacted()`); `on()` tells when they change
 * (`refreshed`, with the user-turn text).
 */
export class AlbedoSession {
  readonly id: string;
  #kernel: Kernel;
  #direct: DirectCalls;
  #snap: SessionSnapshot;
  #view!: SessionView;
  #kept: KeptContext;
  #routes!: Map<string, RouteEntry>;
  #inputs!: Map<string, InputCheck>;
  #listeners = new Set<Listener>();
  #closed = false;
  #closing: Promise<void> | undefined;
  #deferred: Deferred;
  #defers = false;
  #results: ResultStore;
  #budgets = new Map<string, number>();
  #home: string | null;

  /**
   * Use albedo.sessions.open(). `fixed`: the fixed tools' definitions for the session's profile; `results`: where cut
   * results are kept; `home`: $ALBEDO_HOME, where no export may go.
   */
  constructor(kernel: Kernel, direct: DirectCalls, snap: SessionSnapshot, fixed: ModelTool[], results: ResultStore, home: string | null) {
    this.id = snap.id;
    this.#home = home;
    this.#kernel = kernel;
    this.#direct = direct;
    this.#snap = snap;
    // A shared connection's id comes back when sessions open it again after it was closed: no longer retiring.
    direct.revive(snap.connections.map((c) => c.id));
    this.#results = results;
    this.#deferred = new Deferred(fixed, snap.loaded);
    this.#setView(snap.view!);
    this.#kept = keptOfSnapshot(snap);
  }

  #setView(view: SessionView): void {
    this.#view = view;
    this.#routes = new Map(view.routes);
    this.#inputs = new Map(view.inputs);
    this.#deferred.setView(view);
    // `auto` is sticky: once deferred, a generation that would fit again stays deferred, so the fixed tools and the loaded list hold.
    this.#defers = (this.#snap.tools === 'auto' && this.#defers) || defers(this.#snap.tools, this.#snap.contextBudget, view);
    this.#budgets = new Map(view.resultBudgets);
  }

  /** A snapshot from the composer: applied unless an older one. */
  updated(snap: SessionSnapshot): void {
    if (!newer(snap.version, this.#snap.version)) return;
    const now = new Set(snap.connections.map((c) => c.id));
    const before = new Set(this.#snap.connections.map((c) => c.id));
    this.#direct.forget(this.#snap.connections.filter((c) => !now.has(c.id)).map((c) => c.id));
    this.#direct.revive(snap.connections.filter((c) => !before.has(c.id)).map((c) => c.id));
    this.#snap = snap;
    if (snap.view) this.#setView(snap.view);
    if (snap.kept) this.#kept = snap.kept;
  }

  /** An event from the composer. */
  event(event: SessionEvent): void {
    if (event.type === 'closed') {
      this.#closed = true;
      this.#results.drop(this.id);
    }
    for (const fn of this.#listeners) {
      try {
        fn(event);
      } catch {
        // A listener's bug must not break the session.
      }
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The tool generation: 1 after open, one more each time what the model sees changes. */
  get generation(): number {
    return this.#view.generation;
  }

  /** The provider profile its tool schemas are normalised for. */
  get profile(): string {
    return this.#snap.profile;
  }

  /** The `label` the session was opened with (a gateway's session: `gateway:NAME`). */
  get label(): string | undefined {
    return this.#snap.label;
  }

  /** The session's working directory (the `cwd` it was opened with), where read_resource's exports go; undefined: none. */
  get cwd(): string | undefined {
    return this.#snap.cwd;
  }

  /**
   * The model-facing tool definitions of the current generation (names
   * match `^[a-zA-Z][a-zA-Z0-9_]{0,63}$`): every one and mcp_read_result
   * (reads on in a result cut to its budget), or in a deferred session the
   * fixed set (mcp_search_tools, mcp_call_tool, mcp_read_result, the
   * alwaysLoad ones) and then the ones searches loaded, in the order found.
   * None when the generation has no definition.
   */
  tools(): ModelTool[] {
    // No definition at all (MCP off, no server): nothing to search or to read on in.
    if (!this.#view.tools.length) return [];
    return this.#defers ? this.#deferred.tools() : [...this.#view.tools, this.#deferred.fixed[2]!];
  }

  /** Every definition of the current generation, deferred or not (what `all` would advertise). */
  allTools(): ModelTool[] {
    return [...this.#view.tools];
  }

  /**
   * Where a definition of this session comes from: its server and the raw
   * tool name (`read_resource` / `get_prompt` for those pseudo-operations,
   * `kind` telling them from a tool of that name); Albedo's own tools
   * (mcp_read_result, mcp_search_tools, mcp_call_tool) have server null.
   * Undefined for a name the session does not know.
   */
  origin(name: string): { server: string | null; tool: string; kind: RouteEntry['kind'] | 'albedo' } | undefined {
    const r = this.#routes.get(name);
    if (r) return { server: r.server, tool: r.kind === 'tool' ? r.tool : r.kind, kind: r.kind };
    return [READ_TOOL, SEARCH_TOOL, CALL_TOOL].includes(name) ? { server: null, tool: name, kind: 'albedo' } : undefined;
  }

  /** The session's `tools` option (`all`, `deferred`, `auto`) and whether the current generation defers. */
  get toolsMode(): { option: ToolsMode; deferred: boolean; contextBudget: number } {
    return { option: this.#snap.tools, deferred: this.#defers, contextBudget: this.#snap.contextBudget };
  }

  /**
   * The names of the definitions `tools()` gives beyond the fixed set: in a
   * deferred session the alwaysLoad ones and those searches found, a list
   * that only grows within a generation (a tool that leaves the catalogue
   * leaves it at the next); otherwise every name.
   */
  loaded(): string[] {
    return this.#defers ? this.#deferred.loaded() : this.#view.tools.map((t) => t.name);
  }

  /**
   * Searches every definition of the generation (what `mcp_search_tools`
   * does): the best `limit` (1–20, default 5) with their full definitions,
   * best first; in a deferred session they are loaded.
   */
  search(query: string, limit?: number): FoundTool[] {
    this.#alive();
    const a = searchArgs({ query, limit });
    return this.#deferred.search(a.query, a.limit, this.#grew);
  }

  /**
   * What the session costs the context, in estimated tokens: every
   * definition of the generation, the context text the model has
   * (`context()`, the kept one) and each server's part of both, and what
   * `tools()` gives now (`advertised`: the fixed set and the loaded ones when deferred).
   */
  cost(): ContextCost & { advertised: number } {
    return { ...keptCost(this.#view.cost, this.#kept), advertised: definitionsTokens(this.tools()) };
  }

  /**
   * The MCP context text for the system prompt ('' when there is nothing to say): as of the last compaction
   * (at open, the first generation's), so the prompt and a provider's cache hold while the generations change;
   * the `refreshed` event's text tells the model what changed meanwhile. `compacted()` takes the current one.
   */
  context(): string {
    return this.#kept.context;
  }

  /** The generation whose text `context()` gives (at most `generation`). */
  get contextGeneration(): number {
    return this.#kept.generation;
  }

  /** The MCP context text of the current generation, as a new conversation would start with it. */
  contextNow(): string {
    return this.#view.context;
  }

  /**
   * Says the conversation was compacted (the system prompt is built anew): `context()` becomes the current
   * generation's text, recorded with the session (a restored one keeps it). → `{ generation, context }`, the text now kept.
   */
  async compacted(): Promise<{ generation: number; context: string }> {
    this.#alive();
    const call = () => this.#kernel.call('composer', 'session/compacted', { id: this.id }, { timeoutMs: 60_000 });
    const kept = await this.#composer(call);
    if (kept.generation >= this.#kept.generation) this.#kept = kept;
    return { generation: this.#kept.generation, context: this.#kept.context };
  }

  /** Each server of the session: its state, whether it is advertised, why it is left out. */
  status(): ServerStatus[] {
    return this.#snap.status.map((s) => ({ ...s }));
  }

  /** What the current composition warned about (servers left out, tools left out or filtered). */
  warnings(): string[] {
    return [...this.#snap.warnings];
  }

  #alive(): void {
    if (this.#closed) throw new AlbedoError('ALBEDO_CLOSED', 'the session is closed', { outcome: 'not_run' });
  }

  /**
   * Calls an advertised name, `server/tool` (raw names; `server/read_resource`
   * and `server/get_prompt` too), a raw tool name only one server has, or an
   * advertised name without its hash. Arguments use the property names of
   * the advertised schema (the server's own names work too) and are checked
   * against the server's input schema before the call is sent
   * (ALBEDO_INVALID_ARGUMENT naming the argument). A tool's `isError` is a
   * result; errors carry `code` and `outcome`.
   * A server that cannot be reached fails as not run (`data.unavailable`);
   * nothing is retried. `onProgress` is told the server's progress reports on this call.
   */
  async call(name: string, args?: unknown, opts: AlbedoCallOptions = {}): Promise<unknown> {
    this.#alive();
    checkCall(name, opts);
    if (opts.onProgress !== undefined && typeof opts.onProgress !== 'function') throw badProgress();
    const caps = opts.capabilities;
    if (caps !== undefined && (caps === null || typeof caps !== 'object' || Array.isArray(caps))) {
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', 'capabilities must be an object', { outcome: 'not_run' });
    }
    if (name === READ_TOOL) {
      const a = readArgs(args);
      return pageResult(this.readResult(a.id, a.offset));
    }
    // Once a session may defer, its fixed tools answer whatever the generation does: a model that was given them can always use them.
    const fixed = this.#snap.tools !== 'all';
    if (fixed && name === SEARCH_TOOL) {
      const a = searchArgs(args);
      return searchResult(this.#deferred.search(a.query, a.limit, this.#grew));
    }
    if (fixed && name === CALL_TOOL) {
      const inner = callArgs(args);
      if (inner.name === SEARCH_TOOL || inner.name === CALL_TOOL) {
        throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `${CALL_TOOL} calls a server's tool, not ${inner.name}`, { outcome: 'not_run' });
      }
      return this.call(inner.name, inner.args, opts);
    }
    const status = this.#snap.status;
    const planned = planCall(this.#routes, this.#view.servers, (s) => status.find((x) => x.name === s), name, args, this.#inputs);
    const { route, op } = planned;
    // An export is checked before the read is sent (a refusal is not run) and written after it, before the budget.
    const exporting = planned.export ? await planExport(this.#snap.cwd, this.#home, planned.export) : undefined;
    if (opts.capabilities !== undefined && op.method !== 'ping' && !op.method.endsWith('/list')) {
      (op as { capabilities?: Record<string, unknown> }).capabilities = opts.capabilities;
    }
    // The server's own budget (the user's setting) wins; else the tool's hint, within the hard cap; else the session's.
    const chars =
      this.#budgets.has(route.server) || !(route.kind === 'tool' && route.maxResultChars)
        ? this.#budgetChars(route.server)
        : Math.min(route.maxResultChars, MAX_RESULT_HINT_CHARS);
    const budget = async (r: unknown): Promise<unknown> =>
      budgetResult(exporting ? await exportResult(r, exporting, { signal: opts.signal }) : r, {
        chars,
        keep: (part) => this.#results.keep(this.id, { ...part, page: chars }),
        reader: READ_TOOL,
      });
    if (opts.onProgress === undefined && opts.context === undefined) return budget(await this.#send(route.server, name, args, op, opts));
    // The token is followed on any connection: it is unique to this process, and a connection relays only the tokens it sent.
    return budget(
      await withProgress(
        this.#kernel,
        undefined,
        opts.onProgress ?? noProgress,
        (token) => {
          (op as { progressToken?: string }).progressToken = token;
          return this.#send(route.server, name, args, op, opts, token);
        },
        opts.context,
      ),
    );
  }

  /** A planned call: straight to its connection when the snapshot says it is open, else through the composer. */
  async #send(server: string, name: string, args: unknown, op: ClientOp, opts: SessionCallOptions, token?: string): Promise<unknown> {
    const conn = this.#snap.connections.find((c) => c.server === server);
    const timeoutMs = opts.timeoutMs ?? conn?.callTimeoutMs ?? 60_000;
    if (conn?.open) {
      try {
        return await this.#direct.request(conn.id, op, { timeoutMs, startupTimeoutMs: conn.startupTimeoutMs, signal: opts.signal });
      } catch (err) {
        // The actor is gone (its worker was lost, or the composer closed it meanwhile): the request did not run; the composer decides.
        if (!actorGone(err)) throw err;
      }
    }
    const wait = timeoutMs + (conn?.startupTimeoutMs ?? 30_000) + SLACK_MS;
    const params: { id: string; name: string; args: unknown; timeoutMs?: number; progressToken?: string; capabilities?: Caps } = {
      id: this.id,
      name,
      args,
    };
    if (opts.timeoutMs !== undefined) params.timeoutMs = opts.timeoutMs;
    if (token !== undefined) params.progressToken = token;
    const caps = (op as { capabilities?: Caps }).capabilities;
    if (caps !== undefined) params.capabilities = caps;
    return this.#composer(() => this.#kernel.call('composer', 'session/call', params, { timeoutMs: wait, signal: opts.signal }));
  }

  /**
   * Sends one request that is not a call to the session's server `server` (a configured server of
   * the session): `completion/complete`, `logging/setLevel`, `resources/subscribe` or
   * `resources/unsubscribe`. Straight to its connection when it is open, else through the composer,
   * which dials it (or waits for its dial) as for a call. A server that does not declare the
   * capability (`completions`, `logging`, `resources.subscribe`) is ALBEDO_NOT_FOUND, not run, with
   * `data.capability`. The server's log messages and resource updates come as the transport's
   * `connection/log` and `connection/resource-updated` events of `connectionOf(server)`.
   */
  async request(server: string, asked: SessionRequestOp, opts: SessionCallOptions = {}): Promise<unknown> {
    this.#alive();
    checkRequest(server, asked, opts);
    const op = heldBy(asked, this.id);
    if (!this.#snap.status.some((s) => s.name === server)) {
      throw new AlbedoError('ALBEDO_NOT_FOUND', `the session has no server ${JSON.stringify(server.slice(0, 128))}`, {
        outcome: 'not_run',
        data: { server },
      });
    }
    const conn = this.#snap.connections.find((c) => c.server === server);
    const timeoutMs = opts.timeoutMs ?? conn?.callTimeoutMs ?? 60_000;
    if (conn?.open) {
      try {
        return await this.#direct.request(conn.id, op, { timeoutMs, startupTimeoutMs: conn.startupTimeoutMs, signal: opts.signal });
      } catch (err) {
        if (!actorGone(err)) throw err;
      }
    }
    const wait = timeoutMs + (conn?.startupTimeoutMs ?? 30_000) + SLACK_MS;
    const params: { id: string; server: string; op: SessionRequestOp; timeoutMs?: number } = { id: this.id, server, op };
    if (opts.timeoutMs !== undefined) params.timeoutMs = opts.timeoutMs;
    return this.#composer(() => this.#kernel.call('composer', 'session/request', params, { timeoutMs: wait, signal: opts.signal }));
  }

  /**
   * The transport connection id of the session's server `server` (undefined before it has one, or
   * for a name the session does not hold): the `id` of its `connection/log`,
   * `connection/resource-updated` and `connection/progress` events. A reload may give a server a
   * new connection: ask again after a `refreshed` or `state` event.
   */
  connectionOf(server: string): string | undefined {
    return this.#snap.connections.find((c) => c.server === server)?.id;
  }

  /** The loaded list grew: the composer records it (so a restored session keeps it); a failure costs only that. */
  #grew = (names: string[]): void => {
    if (this.#snap.tools === 'all') return;
    // In order, one after the other: the composer takes only a longer list, so a late shorter one changes nothing.
    this.#loadedWrite = this.#loadedWrite
      .then(() => this.#kernel.call('composer', 'session/loaded', { id: this.id, names }, { timeoutMs: 60_000 }))
      .then(
        () => {},
        () => {},
      );
  };
  #loadedWrite: Promise<void> = Promise.resolve();

  /** A server's result budget in characters: its own setting, else the session's. */
  #budgetChars(server: string): number {
    return charsOf(this.#budgets.get(server) ?? this.#snap.resultBudget);
  }

  /**
   * A page of a result part that was cut to its budget (what
   * `mcp_read_result` returns): from `offset`, about one budget's worth of
   * the cut (`limit` characters when given, at least 1,000), ending at a
   * clean boundary; `next` is
   * where the following page starts, null at the end. ALBEDO_NOT_FOUND for
   * an id this session does not keep.
   */
  readResult(id: string, offset = 0, limit?: number): ResultPage {
    this.#alive();
    return this.#results.read(this.id, id, offset, limit);
  }

  /** `submit` or `turn_end`: due come-back probes run; `turn_end` first applies what waited for the end of the turn. */
  async activity(kind: Activity): Promise<void> {
    this.#alive();
    await this.#composer(() => this.#kernel.call('composer', 'session/activity', { id: this.id, kind }, { timeoutMs: OPEN_TIMEOUT_MS }));
  }

  /**
   * A composer call about this session. The composer not knowing the session
   * (`data.session`: a crash lost it before its record was written, or it
   * closed meanwhile) closes it here too, with its `closed` event.
   */
  async #composer<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      if (AlbedoError.is(err) && err.code === 'ALBEDO_NOT_FOUND' && (err.data as { session?: string } | undefined)?.session === this.id) {
        if (!this.#closed) this.event({ type: 'closed' });
        throw new AlbedoError('ALBEDO_CLOSED', 'the session is closed', { outcome: 'not_run' });
      }
      throw err;
    }
  }

  /** Prepares a new composition from the settings as they are now and swaps it in; on failure the previous one stays and this rejects. */
  async reload(): Promise<void> {
    this.#alive();
    await this.#composer(() => this.#kernel.call('composer', 'session/reload', { id: this.id }, { timeoutMs: OPEN_TIMEOUT_MS }));
  }

  /** The session's overlay (`setOverlay`): names, digest, state (`lost`: a restart lost it) and whether it is shown (editor-mcp). */
  get overlay(): OverlayStatus | undefined {
    const o = this.#snap.overlay;
    return o ? { ...o, servers: [...o.servers] } : undefined;
  }

  /**
   * Publishes the session's overlay (the composer's `session/overlay`: stdio servers run in `cwd`, started and
   * discovered before anything changes; `[]` removes it; the same again is `changed: false`). ALBEDO_OVERLAY_FAILED
   * (nothing changed), ALBEDO_OVERLAY_RELOAD_FAILED (installed, `reload_pending`), ALBEDO_OVERLAY_UNCERTAIN (the
   * composer was lost or did not answer in time: it may still complete).
   */
  async setOverlay(cwd: string, servers: OverlayServer[], opts: { timeoutMs?: number } = {}): Promise<OverlayResult> {
    this.#alive();
    const call = (): Promise<OverlayResult> =>
      this.#kernel.call('composer', 'session/overlay', { id: this.id, cwd, servers }, { timeoutMs: opts.timeoutMs ?? OPEN_TIMEOUT_MS });
    return this.#composer(call).catch((err: AlbedoError) => {
      // Lost under the publication, or not answered in time: it may have been installed (or still be).
      if (err.code !== 'ALBEDO_SERVICE_LOST' && (err.code !== 'ALBEDO_DEADLINE' || err.outcome === 'not_run')) throw err;
      const message = `the overlay publication went unanswered (${err.code}); it may still complete`;
      throw new AlbedoError('ALBEDO_OVERLAY_UNCERTAIN', message, { outcome: 'unknown', data: { code: err.code } });
    });
  }

  /**
   * The session's extensions: for `mcp` and `editor-mcp`, its own choice (`chosen`, null: the settings decide) and
   * whether the extension is in force now (`effective`; `editor-mcp` only while `mcp` is).
   */
  get extensions(): SessionExtensions {
    const e = this.#snap.extensions;
    return { mcp: { ...e.mcp }, 'editor-mcp': { ...e['editor-mcp'] } };
  }

  /**
   * Changes the session's own choice of extensions: true or false chooses, null goes back to the settings' default,
   * an absent key is unchanged. Recorded (a restored session keeps it) and applied by a reload, as `reload()`: with
   * `mcp` off the session's connections close and its tools go; with `editor-mcp` off its overlay's. A failed reload
   * keeps the previous choice and composition and rejects with the reload's error; bad input is ALBEDO_INVALID_ARGUMENT.
   */
  async setExtensions(change: ExtensionsChange): Promise<SessionExtensions> {
    this.#alive();
    const extensions = extensionsChange(change);
    const call = () => this.#kernel.call('composer', 'session/extensions', { id: this.id, extensions }, { timeoutMs: OPEN_TIMEOUT_MS });
    return (await this.#composer(call)).extensions;
  }

  /** Subscribes to the session's events from now on; returns the unsubscribe function. */
  on(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Settles once the session's background work (dials, probes, saves, reloads the settings started) is done. */
  async idle(): Promise<void> {
    await this.#loadedWrite;
    if (this.#closed) return;
    await this.#composer(() => this.#kernel.call('composer', 'session/idle', { id: this.id }, { timeoutMs: OPEN_TIMEOUT_MS }));
  }

  /** Closes every connection of the session (each server reaped). Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      if (this.#closed) return;
      const close = (): Promise<unknown> => this.#kernel.call('composer', 'session/close', { id: this.id }, { timeoutMs: 60_000 });
      try {
        await close();
      } catch (err) {
        // A composer lost under the close: closing is idempotent, so it is asked once more (the restored session closes).
        if (!AlbedoError.is(err) || err.code !== 'ALBEDO_SERVICE_LOST') throw err;
        await close();
      }
      if (!this.#closed) this.event({ type: 'closed' });
    })().finally(() => {
      this.#closing = undefined;
    });
    return this.#closing;
  }
}
