/**
 * The session composer's public shapes (docs/design.md, "Sessions"):
 * what a session may choose for itself, the states a user can see per
 * server, and the events a session publishes. Types and zod schemas only.
 */
import { z } from 'zod';

/** Server states a user can see (docs/design.md, "Server states"). HTTP readiness is what was last observed, never assumed. */
export const SERVER_STATES = ['ready', 'advertised', 'starting', 'left_out', 'needs_sign_in', 'disabled'] as const;
export type ServerState = (typeof SERVER_STATES)[number];

export const TOOLS_MODES = ['all', 'deferred', 'auto'] as const;
export type ToolsMode = (typeof TOOLS_MODES)[number];
/** `auto` defers when the definitions would take more than this share of the context budget… */
export const DEFER_SHARE = 0.1;
/** …or when there are more than this many (OpenAI refuses more than 128 tools in one request). */
export const DEFER_TOOLS = 128;
/** The context budget `auto` assumes when the session does not say (tokens). */
export const DEFAULT_CONTEXT_BUDGET = 200_000;
/** How much of one result goes into the context when neither the session nor the server says (estimated tokens: 100,000 characters). */
export const DEFAULT_RESULT_BUDGET = 25_000;
/** A tool's own `anthropic/maxResultSizeChars` is honoured up to this many characters. */
export const MAX_RESULT_HINT_CHARS = 1_000_000;

/** What a session chooses for itself, on top of the settings. */
export const sessionOptionsSchema = z.strictObject({
  /** `include`: only these configured servers; `exclude`: not these. Names are the settings' server names. */
  servers: z
    .strictObject({
      include: z.array(z.string().min(1)).max(1_000).optional(),
      exclude: z.array(z.string().min(1)).max(1_000).optional(),
    })
    .optional(),
  /** The provider profile the tool schemas are normalised for (`portable` when absent). */
  profile: z.string().min(1).max(64).optional(),
  /** `mcp: false` turns the MCP extension off for this session: no tools, no connections. Absent: the settings' default. */
  extensions: z.strictObject({ mcp: z.boolean().optional() }).optional(),
  /**
   * Which definitions the model is given: `all` (default), `deferred` (a
   * fixed set — mcp_search_tools, mcp_call_tool, the `alwaysLoad` tools —
   * and the tools searches found), or `auto` (deferred when the definitions
   * would cost more than DEFER_SHARE of `contextBudget`, or number more than
   * DEFER_TOOLS).
   */
  tools: z.enum(TOOLS_MODES).optional(),
  /** The model's context size in tokens, for `auto` (default DEFAULT_CONTEXT_BUDGET). */
  contextBudget: z.number().int().min(1_000).max(100_000_000).optional(),
  /** The most one result may put in the context, in estimated tokens (default DEFAULT_RESULT_BUDGET; a server's own setting wins). */
  resultBudget: z.number().int().min(100).max(1_000_000).optional(),
  /**
   * What the session's servers are told the client can do (elicitation, sampling, roots), instead of what the owner's
   * handlers declare; the owner answers their requests (AlbedoOptions.sessionInput). A gateway's session declares all
   * three and hands each request to the host whose call it belongs to.
   */
  capabilities: z
    .strictObject({
      elicitation: z.record(z.string(), z.unknown()).optional(),
      sampling: z.record(z.string(), z.unknown()).optional(),
      roots: z.record(z.string(), z.unknown()).optional(),
    })
    .optional(),
  /**
   * `false`: the session has no turns — what would wait for `turn_end` (a server that came back, a new catalogue) is
   * applied as soon as it happens. A gateway's session: its hosts are told by list_changed, not by a user turn.
   */
  turns: z.boolean().optional(),
  /** The owner's own mark for the session (a gateway's: `gateway:NAME`), kept in its record and shown in its snapshot. */
  label: z.string().min(1).max(200).optional(),
});
export type SessionOptions = z.input<typeof sessionOptionsSchema>;

/** Session activity that may trigger come-back probes; `turn_end` is also when deferred refreshes apply. */
export type Activity = 'submit' | 'turn_end';
export const activitySchema = z.enum(['submit', 'turn_end']);

/** Why a server is left out, needs a sign-in, or why its last dial failed: a stable code and a message for people. */
export interface StateReason {
  code: string;
  message: string;
}

/**
 * What a generation costs the model's context, in estimated tokens
 * (characters / 4): every definition the session has, its MCP context text,
 * and each server's part of both.
 */
export interface ContextCost {
  definitions: number;
  context: number;
  servers: Array<{ name: string; tools: number; definitions: number; context: number }>;
}

/** One server of a session, as `status()` reports it. */
export interface ServerStatus {
  name: string;
  state: ServerState;
  /** Its definitions are in the tools of the current generation. */
  advertised: boolean;
  /** How many definitions it has in the current generation. */
  tools: number;
  /** A change for it (joining, a new catalogue, leaving for a sign-in) waits for the end of the turn. */
  pending: boolean;
  /** left_out and needs_sign_in: why; advertised: why its last dial failed, when it did. */
  reason?: StateReason;
  /** left_out and needs_sign_in: when the next come-back probe is due (the composer clock's ms). */
  nextProbeAt?: number;
}

/** How one server's part of the tools changed in a new generation. */
export interface ServerChange {
  server: string;
  /** joined (came back, signed in), changed (a new catalogue), left, needs_sign_in, added / removed (by a reload). */
  change: 'joined' | 'changed' | 'left' | 'needs_sign_in' | 'added' | 'removed';
}

/** What a session publishes. */
export type SessionEvent =
  | { type: 'state'; server: string; state: ServerState; reason?: StateReason }
  /**
   * The session's tools changed (a server joined or left, a catalogue changed,
   * a reload swapped the composition): `text` is the "capabilities changed"
   * user turn to append, `generation` the new tool generation.
   */
  | { type: 'refreshed'; generation: number; text: string; servers: string[]; changes: ServerChange[] }
  | { type: 'warning'; message: string; server?: string; code?: string }
  /** A come-back probe of a left-out server finished. */
  | { type: 'probed'; server: string; ok: boolean; at: number; nextProbeAt?: number }
  | { type: 'closed' };

export interface SessionCallOptions {
  /** Overrides the server's callTimeoutMs for this call. */
  timeoutMs?: number;
  signal?: AbortSignal;
}
