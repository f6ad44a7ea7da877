/**
 * What the catalogue service hands the model and the router: model-facing
 * tool definitions and the routing entries behind their names, plus the
 * per-server tool filters of the config and the contract of the schema
 * normaliser. Types and zod schemas only, no side effects.
 */
import { z } from 'zod';

/** The two per-server pseudo-operations that stand for a server's resources and prompts. */
export const PSEUDO_OPERATIONS = ['read_resource', 'get_prompt'] as const;
export type PseudoOperation = (typeof PSEUDO_OPERATIONS)[number];

/**
 * What a model-facing name stands for: one tool of one server, or one of the
 * server's pseudo-operations. The pseudo-operations live in a namespace of
 * their own, so a tool literally named `read_resource` is a different identity.
 */
export type Identity =
  | { server: string; kind: 'tool'; tool: string }
  | { server: string; kind: PseudoOperation };

/** Where a call to an advertised name goes: `tool` is the server's raw tool name, exactly as listed. */
export type RouteEntry = Identity;

export const routeEntrySchema = z.union([
  z.strictObject({ server: z.string(), kind: z.literal('tool'), tool: z.string() }),
  z.strictObject({ server: z.string(), kind: z.enum(PSEUDO_OPERATIONS) }),
]);

/** One tool as the model sees it: a name matching NAME_RULE, a bounded description, a normalised input schema. */
export interface ModelTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export const modelToolSchema = z.strictObject({
  name: z.string(),
  description: z.string(),
  inputSchema: z.record(z.string(), z.unknown()),
});

/**
 * A server's tool filters from its config. `enabledTools`, when given, is an
 * allow-list (an empty list allows no tool); `disabledTools` then removes.
 * Both match the server's raw tool names exactly; they do not apply to the
 * read_resource / get_prompt pseudo-operations.
 */
export interface ToolFilters {
  enabledTools?: readonly string[];
  disabledTools?: readonly string[];
}

/** The schema normaliser's answer: a schema the profile accepts (with notes on what it changed), or a refusal. */
export type NormaliseResult =
  | { ok: true; schema: Record<string, unknown>; notes: string[] }
  | { ok: false; reason: string };

/** Normalises one input schema (untrusted data) for a provider profile (`portable`, `openai`, …). Pure. */
export type Normalise = (schema: unknown, profile: string) => NormaliseResult;

/** Why something of a server is not advertised. */
export type LeftOutReason = 'schema_refused' | 'duplicate';

/** One tool (or pseudo-operation) of a server that is not advertised, and why. */
export interface LeftOut {
  server: string;
  /** The raw tool name, or the pseudo-operation. */
  operation: string;
  kind: Identity['kind'];
  reason: LeftOutReason;
  detail: string;
}
