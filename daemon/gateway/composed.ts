/**
 * A composed gateway: an ordinary session (api/session.ts) served as one MCP
 * server. Its tools are the session's model-facing definitions (stable,
 * provider-safe names; the fixed deferred tools when it defers), its
 * instructions the session's MCP context text as of now, and a call is the session's
 * call (budgets, `mcp_read_result`, the saved catalogue answering before the
 * server is up). A gateway has no turns: each call is activity (`submit`
 * before it, for come-back probes; `turn_end` once no call is in flight, so
 * what waited — a server that came back, a new catalogue — is applied), and
 * a new generation is a `tools/list_changed`.
 */
import type { AlbedoSession } from '../../api/sessions.ts';
import type { GatewayBackend, Json, ListKind, OpContext } from './backend.ts';
import { callOptions, InFlight, Listeners } from './backend.ts';

export class ComposedBackend implements GatewayBackend {
  readonly kind = 'composed' as const;
  #session: AlbedoSession;
  #name: string;
  #version: string;
  #changed = new Listeners<ListKind>();
  #inFlight = 0;
  #calls = new InFlight();
  #shown: string;

  #activityOn: boolean;
  #gate: (() => void) | undefined;

  /**
   * `activity: false`: calls mark no activity (an ACP session's gateway: its adapter marks the agent's turns); `gate`: run
   * before each call, its throw refusing the call before anything is sent (an overlay not in force).
   */
  constructor(session: AlbedoSession, o: { name: string; version: string; activity?: boolean; gate?: () => void }) {
    this.#session = session;
    this.#name = o.name;
    this.#version = o.version;
    this.#activityOn = o.activity ?? true;
    this.#gate = o.gate;
    this.#shown = this.#names();
    session.on((e) => {
      if (e.type !== 'refreshed') return;
      this.#shown = this.#names();
      this.#changed.emit('tools');
    });
  }

  get closed(): boolean {
    return this.#session.closed;
  }

  get session(): AlbedoSession {
    return this.#session;
  }

  async prepare(): Promise<void> {}

  info(): { name: string; version: string } {
    return { name: `albedo-gateway-${this.#name}`, version: this.#version };
  }

  has(kind: ListKind): boolean {
    return kind === 'tools';
  }

  /** For a client connecting now: a new conversation, so the current generation's text (not the one kept until a compaction). */
  instructions(): string | undefined {
    return this.#session.contextNow() || undefined;
  }

  async listTools(): Promise<Json[]> {
    // What waited for the end of a turn is applied now, so a client that lists sees it (after this answer: list_changed).
    if (this.#inFlight === 0) this.#activity('turn_end');
    return this.#session.tools().map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
  }

  #schemas: { key: string; map: ReadonlyMap<string, Json> } | undefined;

  async toolSchemas(): Promise<ReadonlyMap<string, Json>> {
    const key = `${this.#session.generation}\n${this.#shown}`;
    if (this.#schemas?.key !== key) {
      this.#schemas = { key, map: new Map(this.#session.tools().map((t) => [t.name, t.inputSchema as Json])) };
    }
    return this.#schemas.map;
  }

  async callTool(name: string, args: Json, ctx: OpContext): Promise<Json> {
    this.#gate?.();
    this.#inFlight++;
    this.#activity('submit');
    try {
      return (await this.#calls.run(this.#serverOf(name, args), ctx, () => this.#session.call(name, args, callOptions(ctx)))) as Json;
    } finally {
      this.#inFlight--;
      // A search may have loaded tools (a deferred session's list grows without a new generation).
      this.#maybeChanged();
      if (this.#inFlight === 0) this.#activity('turn_end');
    }
  }

  async listResources(): Promise<Json[]> {
    return [];
  }
  async listResourceTemplates(): Promise<Json[]> {
    return [];
  }
  async readResource(): Promise<Json> {
    throw new Error('unreachable: a composed gateway serves its resources as tools');
  }
  async listPrompts(): Promise<Json[]> {
    return [];
  }
  async getPrompt(): Promise<Json> {
    throw new Error('unreachable: a composed gateway serves its prompts as tools');
  }

  /** The upstream server a call goes to (through mcp_call_tool, the inner tool's). */
  #serverOf(name: string, args: Json): string | null | undefined {
    const o = this.#session.origin(name);
    if (o?.kind === 'albedo' && name === 'mcp_call_tool' && typeof args.name === 'string') return this.#session.origin(args.name)?.server;
    return o?.server;
  }

  inputFor(server: string): OpContext['input'] | undefined {
    return this.#calls.latest(server);
  }

  offers(): boolean {
    return false;
  }
  async complete(): Promise<Json> {
    throw new Error('unreachable: a composed gateway offers no completions');
  }
  async subscribe(): Promise<void> {
    throw new Error('unreachable: a composed gateway offers no subscriptions');
  }
  async setLogLevel(level: string): Promise<void> {
    await Promise.all(
      this.servers().map((s) =>
        this.#session.request(s, { method: 'logging/setLevel', level: level as never }).catch(() => {
          // A server without logging (or not up) is simply not asked.
        }),
      ),
    );
  }

  callsOn(server: string): readonly OpContext[] {
    return this.#calls.calls(server);
  }

  servers(): string[] {
    return this.#session.status().map((s) => s.name);
  }

  onListChanged(fn: (kind: ListKind) => void): () => void {
    return this.#changed.add(fn);
  }

  #names(): string {
    return this.#session.closed
      ? ''
      : this.#session
          .tools()
          .map((t) => t.name)
          .join('\n');
  }

  #maybeChanged(): void {
    const now = this.#names();
    if (now === this.#shown) return;
    this.#shown = now;
    this.#changed.emit('tools');
  }

  #activity(kind: 'submit' | 'turn_end'): void {
    if (this.#session.closed || !this.#activityOn) return;
    // Probes and refreshes are the session's own business: a failure here costs the client nothing.
    this.#session.activity(kind).catch(() => {});
  }
}
