/**
 * A pass-through gateway: one configured server served under its own tool,
 * resource and prompt names (the mcp-remote use: a host that wants Albedo
 * only for transport, OAuth and supervision). Behind it is a session of that
 * one server, so the saved catalogue answers at once, the server is dialled
 * in the background, comes back after a crash, and is signed in once for
 * every host. The lists are the server's own, from the catalogue saved for
 * it as configured now (the settings' fingerprint), narrowed by the
 * entry's tool filters as the session's routes are; a call goes through the
 * session by the server's raw name (`server/tool`), so it is checked against
 * the server's own input schema before it is sent.
 */
import type { AlbedoSession } from '../../api/sessions.ts';
import type { Kernel } from '../../kernel/kernel.ts';
import type { SavedCatalogue } from '../../protocol/catalogue.ts';
import type { Implementation } from '../../protocol/mcp.ts';
import type { GatewayBackend, Json, ListKind, OpContext } from './backend.ts';
import { callOptions, InFlight, Listeners } from './backend.ts';

const SETTINGS_TIMEOUT_MS = 30_000;

export class PassThroughBackend implements GatewayBackend {
  readonly kind = 'pass-through' as const;
  #session: AlbedoSession;
  #kernel: Kernel;
  #server: string;
  #changed = new Listeners<ListKind>();
  #saved: Promise<SavedCatalogue | null> | undefined;
  #last: SavedCatalogue | null = null;
  #calls = new InFlight();

  constructor(session: AlbedoSession, o: { kernel: Kernel; server: string }) {
    this.#session = session;
    this.#kernel = o.kernel;
    this.#server = o.server;
    session.on((e) => {
      if (e.type !== 'refreshed') return;
      this.#saved = undefined;
      for (const k of ['tools', 'resources', 'prompts'] as const) this.#changed.emit(k);
    });
  }

  get closed(): boolean {
    return this.#session.closed;
  }

  get session(): AlbedoSession {
    return this.#session;
  }

  /** Loads the saved catalogue (once per generation); call before the answers that read it synchronously. */
  async load(): Promise<SavedCatalogue | null> {
    this.#saved ??= this.#read().then(
      (c) => (this.#last = c),
      (err) => {
        this.#saved = undefined;
        throw err;
      },
    );
    return this.#saved;
  }

  async #read(): Promise<SavedCatalogue | null> {
    const { fingerprint } = await this.#kernel.call(
      'settings',
      'settings/resolve',
      { name: this.#server },
      { timeoutMs: SETTINGS_TIMEOUT_MS },
    );
    const [row] = await this.#kernel.call(
      'catalogue',
      'catalogue/current',
      { servers: [{ server: this.#server, fingerprint }] },
      { timeoutMs: SETTINGS_TIMEOUT_MS },
    );
    return row ?? null;
  }

  async prepare(): Promise<void> {
    await this.load();
  }

  info(): Implementation {
    const i = this.#last?.serverInfo;
    return i ? { ...i } : { name: this.#server, version: '0.0.0' };
  }

  has(kind: ListKind): boolean {
    const c = this.#last?.catalogue;
    if (!c) return kind === 'tools';
    if (kind === 'tools') return true;
    if (kind === 'resources') return c.resources.length > 0 || c.resourceTemplates.length > 0;
    return c.prompts.length > 0;
  }

  instructions(): string | undefined {
    return this.#last?.instructions ?? undefined;
  }

  /** The raw names the session routes to (the entry's enabledTools / disabledTools applied). */
  #routed(): Set<string> {
    const out = new Set<string>();
    for (const t of this.#session.allTools()) {
      const o = this.#session.origin(t.name);
      if (o?.kind === 'tool' && o.server === this.#server) out.add(o.tool);
    }
    return out;
  }

  async listTools(): Promise<Json[]> {
    // What waited for the end of a turn (a new catalogue) is applied now, so a client that lists sees it next.
    if (this.#inFlight === 0) this.#activity('turn_end');
    const c = await this.load();
    if (!c) return [];
    const routed = this.#routed();
    return c.catalogue.tools.filter((t) => routed.has(t.name)) as unknown as Json[];
  }

  #schemas: { of: SavedCatalogue | null; map: ReadonlyMap<string, Json> } | undefined;

  async toolSchemas(): Promise<ReadonlyMap<string, Json>> {
    const c = await this.load();
    if (!this.#schemas || this.#schemas.of !== c) {
      const tools = await this.listTools();
      this.#schemas = { of: c, map: new Map(tools.map((t) => [t.name as string, t.inputSchema as Json])) };
    }
    return this.#schemas.map;
  }

  async listResources(): Promise<Json[]> {
    return ((await this.load())?.catalogue.resources ?? []) as unknown as Json[];
  }

  async listResourceTemplates(): Promise<Json[]> {
    return ((await this.load())?.catalogue.resourceTemplates ?? []) as unknown as Json[];
  }

  async listPrompts(): Promise<Json[]> {
    return ((await this.load())?.catalogue.prompts ?? []) as unknown as Json[];
  }

  #inFlight = 0;

  /** A call is activity: come-back probes before it, and what waited for the end of a turn after the last one. */
  async #active<T>(fn: () => Promise<T>): Promise<T> {
    this.#inFlight++;
    this.#activity('submit');
    try {
      return await fn();
    } finally {
      if (--this.#inFlight === 0) this.#activity('turn_end');
    }
  }

  #activity(kind: 'submit' | 'turn_end'): void {
    if (!this.#session.closed) this.#session.activity(kind).catch(() => {});
  }

  async callTool(name: string, args: Json, ctx: OpContext): Promise<Json> {
    const s = this.#server;
    return (await this.#active(() => this.#calls.run(s, ctx, () => this.#session.call(`${s}/${name}`, args, callOptions(ctx))))) as Json;
  }

  async readResource(uri: string, ctx: OpContext): Promise<Json> {
    const s = this.#server;
    return (await this.#active(() =>
      this.#calls.run(s, ctx, () => this.#session.call(`${s}/read_resource`, { uri }, callOptions(ctx))),
    )) as Json;
  }

  async getPrompt(name: string, args: Record<string, string>, ctx: OpContext): Promise<Json> {
    const a = { name, arguments: args };
    const s = this.#server;
    return (await this.#active(() => this.#calls.run(s, ctx, () => this.#session.call(`${s}/get_prompt`, a, callOptions(ctx))))) as Json;
  }

  inputFor(server: string): OpContext['input'] | undefined {
    return server === this.#server ? this.#calls.latest(server) : undefined;
  }

  offers(what: 'completions' | 'subscribe'): boolean {
    const caps = (this.#last?.capabilities ?? {}) as { completions?: unknown; resources?: { subscribe?: boolean } };
    return what === 'completions' ? caps.completions !== undefined : caps.resources?.subscribe === true;
  }

  async complete(params: Json, ctx: OpContext): Promise<Json> {
    const op = { method: 'completion/complete' as const, ref: params.ref, argument: params.argument, context: params.context };
    return (await this.#session.request(this.#server, op as never, { signal: ctx.signal })) as Json;
  }

  async subscribe(uri: string, on: boolean): Promise<void> {
    await this.#session.request(this.#server, { method: on ? 'resources/subscribe' : 'resources/unsubscribe', uri });
  }

  async setLogLevel(level: string): Promise<void> {
    await this.#session.request(this.#server, { method: 'logging/setLevel', level: level as never });
  }

  callsOn(server: string): readonly OpContext[] {
    return server === this.#server ? this.#calls.calls(server) : [];
  }

  servers(): string[] {
    return [this.#server];
  }

  onListChanged(fn: (kind: ListKind) => void): () => void {
    return this.#changed.add(fn);
  }
}
