/**
 * The session composer's public shapes (HOST.md "A session, step by step"):
 * what a session may choose for itself, the states a user can see per
 * server, and the events a session publishes. Types and zod schemas only.
 */
import { z } from 'zod';

/** Server states a user can see (HOST.md). HTTP readiness is what was last observed, never assumed. */
export const SERVER_STATES = ['ready', 'advertised', 'starting', 'left_out', 'needs_sign_in', 'disabled'] as const;
export type ServerState = (typeof SERVER_STATES)[number];

/** What a session chooses for itself, on top of the settings. */
export const sessionOptionsSchema = z.strictObject({
  /** `include`: only these configured servers; `exclude`: not these. Names are the settings' server names. */
  servers: z.strictObject({
    include: z.array(z.string().min(1)).max(1_000).optional(),
    exclude: z.array(z.string().min(1)).max(1_000).optional(),
  }).optional(),
  /** The provider profile the tool schemas are normalised for (`portable` when absent). */
  profile: z.string().min(1).max(64).optional(),
  /** `mcp: false` turns the MCP extension off for this session: no tools, no connections. Absent: the settings' default. */
  extensions: z.strictObject({ mcp: z.boolean().optional() }).optional(),
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
