/**
 * The session composer's public shapes (docs/design.md, "Sessions"):
 * what a session may choose for itself, the states a user can see per
 * server, and the events a session publishes. Types and zod schemas only.
 */
import path from 'node:path';
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
  /**
   * `mcp: false` turns the MCP extension off for this session: no tools, no connections. `editor-mcp: false` hides the
   * session's overlay (the editor's servers, `session/overlay`): published overlays are still validated and discovered,
   * then closed. Absent: the settings' default (`enabled` in extensions.json, both on unless it says otherwise).
   */
  extensions: z.strictObject({ mcp: z.boolean().optional(), 'editor-mcp': z.boolean().optional() }).optional(),
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
  /**
   * The session's working directory (absolute; an ACP session's is its editor's `cwd`): read_resource may write the
   * blobs it reads to new files there (`export`, api/resource-export.ts). Kept in the record and shown in the snapshot.
   */
  cwd: z
    .string()
    .max(4_096)
    .refine((c) => path.isAbsolute(c) && !c.includes('\0'), { message: 'cwd must be an absolute path' })
    .optional(),
});
export type SessionOptions = z.input<typeof sessionOptionsSchema>;

/**
 * A change of an open session's own choice of extensions (`session/extensions`): a boolean chooses, null goes back to
 * the settings' default, an absent key leaves that choice as it is.
 */
export const extensionsChangeSchema = z.strictObject({
  mcp: z.boolean().nullable().optional(),
  'editor-mcp': z.boolean().nullable().optional(),
});
export type ExtensionsChange = z.input<typeof extensionsChangeSchema>;

/** One extension of a session: its own choice (null: none, the settings decide) and whether it is in force now. */
export interface ExtensionState {
  chosen: boolean | null;
  effective: boolean;
}

/** A session's extensions as its snapshot shows them. `editor-mcp` is in force only while `mcp` is (no MCP, no overlay). */
export interface SessionExtensions {
  mcp: ExtensionState;
  'editor-mcp': ExtensionState;
}

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
  /** Its first dial is being tried again (connect retry): the next attempt, of how many, when (epoch ms), and why. */
  retry?: { attempt: number; of: number; nextAt: number; code: string };
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

/** The most servers one overlay may hold, and the most arguments or environment variables one of them may have. */
export const MAX_OVERLAY_SERVERS = 1_000;
export const MAX_OVERLAY_ITEMS = 1_000;

const noNul = (what: string) => z.string().refine((v) => !v.includes('\0'), { message: `${what} must not contain a NUL byte` });

/**
 * One server of a session's overlay (an editor's MCP server, as an ACP client gives it): run directly, no shell and no
 * PATH lookup (`command` is absolute), in the publication's working directory, with the launcher's reduced environment
 * plus `env`. The env values are secrets: kept in the composer's memory only, never in a record, a log, an error or an event.
 */
export const overlayServerSchema = z.strictObject({
  /**
   * A configured server's name rules (protocol/settings.ts settingsNameProblem) are checked by the composer: that module
   * reaches this one through protocol/gateway.ts, so importing it here would make a cycle.
   */
  name: z.string().max(1_000),
  command: noNul('command').refine((c) => path.isAbsolute(c), { message: 'command must be an absolute path' }),
  args: z.array(noNul('an argument')).max(MAX_OVERLAY_ITEMS),
  env: z
    .array(z.strictObject({ name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'), value: noNul('a value') }))
    .max(MAX_OVERLAY_ITEMS),
});
export type OverlayServer = z.output<typeof overlayServerSchema>;

/**
 * A session's overlay as its snapshot shows it. `servers`: the names installed (or, `lost`, the names the record
 * said); `digest`: an HMAC of the installed configuration under a key random per composer incarnation (null: none);
 * `state`: `ready`, `reload_pending` (installed, but the session's reload failed: a later reload applies it) or `lost`
 * (the record says a non-empty overlay was installed, the composer that held it is gone: publish it again);
 * `editorMcp`: whether the session shows it (SessionOptions.extensions['editor-mcp'], else the settings' default).
 */
export interface OverlayStatus {
  servers: string[];
  digest: string | null;
  state: 'ready' | 'reload_pending' | 'lost';
  editorMcp: boolean;
}

/** What a successful `session/overlay` answers. `changed: false`: the same overlay was installed already (no new process). */
export interface OverlayResult {
  servers: string[];
  digest: string;
  changed: boolean;
  state: 'ready';
}

/** Why an overlay publication was refused (ALBEDO_OVERLAY_FAILED `data.reason`). */
export type OverlayFailure = 'duplicate' | 'collision' | 'unsupported' | 'invalid' | 'failed';
