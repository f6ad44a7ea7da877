/**
 * The composer service's message map (docs/design.md, "Layers and threads": a
 * tool call pays no more thread hops than it needs). The composer owns the
 * sessions and publishes each one's snapshot: what the model sees and the
 * routing table down to the connection ids, so the owner's thread sends a
 * call to an open connection's transport worker itself and asks the composer
 * only when the server is not open (a dial to wait for, a server to redial).
 * The `host` service lives on the owner's thread: the composer asks it to
 * drain the calls it sent directly before a connection closes.
 */
import type { InputCheck, ModelTool, RouteEntry } from '../catalogue.ts';
import type {
  Activity,
  ContextCost,
  ExtensionsChange,
  OverlayResult,
  OverlayServer,
  OverlayStatus,
  ServerStatus,
  SessionEvent,
  SessionExtensions,
  SessionOptions,
  ToolsMode,
} from '../composer.ts';
import type { ClientOp } from './transport.ts';

/** The operations `session/request` (and `AlbedoSession.request`) send to one server of a session. */
export type SessionRequestOp = Extract<
  ClientOp,
  { method: 'logging/setLevel' | 'completion/complete' | 'resources/subscribe' | 'resources/unsubscribe' }
>;

/** Where one server's calls go: its transport connection, and whether that connection is open now. */
export interface SessionConnection {
  server: string;
  id: string;
  open: boolean;
  callTimeoutMs: number;
  startupTimeoutMs: number;
}

/** What the model sees in one generation, and the routes behind its names (sent when the generation changes). */
export interface SessionView {
  generation: number;
  tools: ModelTool[];
  context: string;
  /** Advertised name → route; an array of pairs, as Maps cross threads but not every wire. */
  routes: [string, RouteEntry][];
  /** Advertised name → the schema its arguments are checked against before a call is sent (exactly the names in `routes`). */
  inputs: [string, InputCheck][];
  /** The session's server names, for `server/tool` calls. */
  servers: string[];
  /** Advertised names the settings mark `alwaysLoad` (a deferred session advertises them from the start). */
  alwaysLoad: string[];
  /** What the generation costs the context, in estimated tokens. */
  cost: ContextCost;
  /** The servers that set their own result budget (estimated tokens), as [server, budget] pairs. */
  resultBudgets: [string, number][];
}

/**
 * The MCP context text a session keeps for the model until its embedder says the conversation was compacted
 * (`session/compacted`): the system prompt it went into stays the same, so a provider's prompt cache holds, while
 * `refreshed` events tell the model what changed. At open, the first generation's.
 */
export interface KeptContext {
  /** The generation whose text it is. */
  generation: number;
  context: string;
  /** What it costs, in estimated tokens: the whole text, and each server's part of it ([server, tokens] pairs, none of 0). */
  tokens: number;
  servers: [string, number][];
}

/** A session's state as the composer last published it. `version` orders snapshots: an older one never replaces a newer one. */
export interface SessionSnapshot {
  id: string;
  /** The composer incarnation that published it, then a counter within it. */
  version: [number, number];
  /** The provider profile its tool schemas are normalised for. */
  profile: string;
  /** The session's `tools` option and context budget, as opened (the API applies them to the view). */
  tools: ToolsMode;
  contextBudget: number;
  /** The session's result budget (estimated tokens). */
  resultBudget: number;
  /** The `label` it was opened with, if any. */
  label?: string;
  /** Its working directory (SessionOptions.cwd), if any: where read_resource's exports go. */
  cwd?: string;
  status: ServerStatus[];
  warnings: string[];
  connections: SessionConnection[];
  /** Present when the generation changed since the last snapshot (always in the answers of open and snapshot). */
  view?: SessionView;
  /** The kept context text: in a full snapshot, and in any other once it changed (`session/compacted`, a restore). */
  kept?: KeptContext;
  /** In a full snapshot: the loaded names its owner recorded (`session/loaded`), so a restored session's list does not shrink. */
  loaded?: string[];
  /** The session's overlay (the editor's servers, `session/overlay`): names and state, never a command, argument or value. */
  overlay?: OverlayStatus;
  /** The session's own choice of each extension and whether it is in force (`session/extensions` changes the choice). */
  extensions: SessionExtensions;
}

export interface ComposerMethods {
  /** Opens a session for `owner` (the embedder's instance); resolves once it can advertise. */
  'session/open': { params: { owner: string; options: SessionOptions }; result: SessionSnapshot };
  /** A call through the composer (the server is not open, or its actor is gone). */
  'session/call': {
    params: {
      id: string;
      name: string;
      args?: unknown;
      timeoutMs?: number;
      progressToken?: string;
      capabilities?: Record<string, unknown>;
    };
    result: unknown;
  };
  /** One of `SessionRequestOp` to a server of the session, through the composer (it waits for the server's dial as a call does). */
  'session/request': { params: { id: string; server: string; op: SessionRequestOp; timeoutMs?: number }; result: unknown };
  'session/activity': { params: { id: string; kind: Activity }; result: Record<string, never> };
  'session/reload': { params: { id: string }; result: Record<string, never> };
  /**
   * Publishes the session's overlay: `servers` (stdio, run in `cwd`) replace the installed ones. Refused with
   * ALBEDO_OVERLAY_FAILED (`data: { server?, index?, reason, code? }`: invalid, a duplicate name, a name a configured
   * server has, a server that fails to start or list), the previous overlay unchanged; every new or changed server is
   * started and discovered before anything changes. Then installed (memory only) and the session reloaded with it;
   * a failed reload is ALBEDO_OVERLAY_RELOAD_FAILED (installed, state `reload_pending` until a reload succeeds). The same
   * overlay again: `changed: false` (a pending reload is tried again). `[]` removes it.
   */
  'session/overlay': { params: { id: string; cwd: string; servers: OverlayServer[] }; result: OverlayResult };
  /**
   * Changes the session's own choice of extensions (a boolean chooses, null: the settings' default, absent: unchanged),
   * recorded (a restored session keeps it) and applied by a reload (prepare-then-swap). Bad params: ALBEDO_INVALID_ARGUMENT;
   * a failed reload keeps the previous choice and composition and rejects with the reload's error.
   */
  'session/extensions': { params: { id: string; extensions: ExtensionsChange }; result: { extensions: SessionExtensions } };
  'session/close': { params: { id: string }; result: Record<string, never> };
  /** The owner's loaded list of a deferred session grew: recorded, so a restored session keeps it. */
  'session/loaded': { params: { id: string; names: string[] }; result: Record<string, never> };
  /**
   * The conversation was compacted: the kept context text becomes the current generation's (recorded, so a restored
   * session keeps it; the snapshot saying so goes out first) → the kept text now.
   */
  'session/compacted': { params: { id: string }; result: KeptContext };
  /** The session's full snapshot now (view included). */
  'session/snapshot': { params: { id: string }; result: SessionSnapshot };
  /** Settles once the session's background work (dials, probes, saves) is done: for tests and orderly shutdown. */
  'session/idle': { params: { id: string }; result: Record<string, never> };
  /** The open sessions of `owner` (restored ones included, once restored), each with its full snapshot. */
  'composer/sessions': { params: { owner: string }; result: SessionSnapshot[] };
  /** Closes every session of `owner` (every server reaped) and forgets their records. */
  'composer/close-owner': { params: { owner: string }; result: Record<string, never> };
}

export interface ComposerEvents {
  /** Something of the session changed; `view` when the generation did. */
  'session/updated': SessionSnapshot;
  /** A session event, as `on()` delivers it. */
  'session/event': { id: string; event: SessionEvent };
}

/** The owner's side (api/sessions.ts provides it on the kernel's thread). */
export interface HostMethods {
  /** Resolves once no call the owner sent directly is in flight on these connections. */
  'host/drain': { params: { ids: string[] }; result: Record<string, never> };
}
