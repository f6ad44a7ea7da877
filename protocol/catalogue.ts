/**
 * What the catalogue service hands the model and the router: model-facing
 * tool definitions and the routing entries behind their names, plus the
 * per-server tool filters of the config and the contract of the schema
 * normaliser. Types and zod schemas only, no side effects.
 */
import { z } from 'zod';
import type { Catalogue, Implementation, ServerCapabilities } from './mcp.ts';
import type { Era } from './versions.ts';

/** The two per-server pseudo-operations that stand for a server's resources and prompts. */
export const PSEUDO_OPERATIONS = ['read_resource', 'get_prompt'] as const;
export type PseudoOperation = (typeof PSEUDO_OPERATIONS)[number];

/**
 * What a model-facing name stands for: one tool of one server, or one of the
 * server's pseudo-operations. The pseudo-operations live in a namespace of
 * their own, so a tool literally named `read_resource` is a different identity.
 */
export type Identity = { server: string; kind: 'tool'; tool: string } | { server: string; kind: PseudoOperation };

/**
 * How the model's arguments go back to the server's form (the schema
 * normaliser's plan, services/catalogue/schema/args.ts): per property as the
 * model names it, the server's name when it was renamed, and whether a
 * `null` means "not given" (OpenAI strict mode), and whether the value comes
 * as JSON text (a free-form object the profile cannot describe). Plain JSON.
 */
export interface ArgPlan {
  props?: Record<string, PropPlan>;
  items?: ArgPlan;
  /** A string here is JSON text of this kind, parsed before the call (any other value passes as it is). */
  json?: JsonKind;
}

/** What a JSON-text argument must hold: an object, an array, or any JSON value. */
export type JsonKind = 'object' | 'array' | 'any';

/** One property as the model names it. */
export interface PropPlan {
  /** The server's name of the property, when it was renamed. */
  from?: string;
  /** The property was optional: a `null` from the model means "not given" and is dropped. */
  dropNull?: true;
  /** The plan for the property's value. */
  plan?: ArgPlan;
}

export const argPlanSchema: z.ZodType<ArgPlan> = z.lazy(() =>
  z.strictObject({
    props: z
      .record(
        z.string(),
        z.strictObject({ from: z.string().optional(), dropNull: z.literal(true).optional(), plan: argPlanSchema.optional() }),
      )
      .optional(),
    items: argPlanSchema.optional(),
    json: z.enum(['object', 'array', 'any']).optional(),
  }),
);

/**
 * Where a call to an advertised name goes: `tool` is the server's raw tool
 * name, exactly as listed; `args`, when present, is the plan that turns the
 * model's arguments back into the server's before the call is sent.
 */
/** Where an advertised name goes, how its arguments go back, and the tool's own result-size hint (characters), if it gave one. */
export type RouteEntry = Identity & { args?: ArgPlan; maxResultChars?: number };

export const routeEntrySchema = z.union([
  z.strictObject({
    server: z.string(),
    kind: z.literal('tool'),
    tool: z.string(),
    args: argPlanSchema.optional(),
    maxResultChars: z.number().int().positive().optional(),
  }),
  z.strictObject({ server: z.string(), kind: z.enum(PSEUDO_OPERATIONS), args: argPlanSchema.optional() }),
]);

/**
 * What a call's arguments are checked against before it is sent: the input
 * schema as the server gave it (for read_resource and get_prompt, Albedo's
 * own, before the normaliser), and the plan that takes the caller's
 * arguments to that schema's property names (the normaliser's, when it
 * renamed any). Plain JSON.
 */
export interface InputCheck {
  schema: unknown;
  args?: ArgPlan;
}

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
  /** Not a filter: the raw names the settings' `alwaysLoad` lists, checked here only so a name the server does not offer is warned of. */
  alwaysLoad?: readonly string[];
}

/**
 * The schema normaliser's answer: a schema the profile accepts (with notes on
 * what it changed, and `args` when the model's arguments must be restored
 * before the server sees them), or a refusal with a stable `code`.
 */
export type NormaliseResult =
  { ok: true; schema: Record<string, unknown>; notes: string[]; args?: ArgPlan } | { ok: false; code?: string; reason: string };

/** Normalises one input schema (untrusted data) for a provider profile (`portable`, `openai`, …). Pure and synchronous. */
export type Normalise = (schema: unknown, profile: string) => NormaliseResult;

/** The same contract, answered later: the real normaliser (services/catalogue/schema/normalise.ts) is asynchronous. */
export type AsyncNormalise = (schema: unknown, profile: string) => NormaliseResult | Promise<NormaliseResult>;

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

/** A saved catalogue (LMDB `mcp_catalogues`, one row per server name): the discovery made under `fingerprint`. */
export interface SavedCatalogue {
  server: string;
  fingerprint: string;
  era: Era;
  protocolVersion: string;
  serverInfo: Implementation | null;
  capabilities: ServerCapabilities;
  instructions: string | null;
  catalogue: Catalogue;
  /** Epoch ms of the discovery it holds. */
  savedAt: number;
}
