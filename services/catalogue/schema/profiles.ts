/**
 * Provider profiles and the bounds every normalised tool schema keeps. The
 * rules are the providers' published ones, written down with sources in
 * docs/research/provider-schemas.md; test/catalogue/provider-rules.ts checks
 * outputs against the same rules independently of this table.
 */

/** The provider a schema is shaped for. `portable` (the default) is accepted by OpenAI, Anthropic, Gemini and Bedrock at once. */
export type Profile = 'portable' | 'openai' | 'openai-strict' | 'anthropic' | 'gemini' | 'bedrock';

export const PROFILES: readonly Profile[] = ['portable', 'openai', 'openai-strict', 'anthropic', 'gemini', 'bedrock'];

export function isProfile(value: unknown): value is Profile {
  return typeof value === 'string' && (PROFILES as readonly string[]).includes(value);
}

/**
 * The bounds (the same for every profile). Chosen, not published, except where
 * noted: OpenAI Structured Outputs allow 10 nesting levels, 5,000 properties
 * and 1,000 enum values per schema; the rest keeps one tool's schema a small
 * share of a model's context.
 */
export const BOUNDS = {
  /** Deepest schema node: the root is depth 0, each property/items/member one more. */
  maxDepth: 10,
  /** Properties kept per object (required ones first). */
  maxProperties: 100,
  /** Properties kept in the whole schema. */
  maxTotalProperties: 1_000,
  /** Values per enum; a longer enum is dropped into the description. */
  maxEnum: 1_000,
  /** Characters per description or title inside the schema, the cut marker included. */
  maxDescription: 1_024,
  /** UTF-8 bytes of the whole normalised schema as JSON. */
  maxBytes: 64 * 1024,
  /** Schema nodes visited per schema (guards against `$ref` fan-out). */
  maxNodes: 20_000,
  /** JSON nesting of the raw input kept before `$ref` handling (deeper input is cut). */
  maxRawDepth: 64,
  /** Bytes of a `default`/`examples`/`const` value kept; a larger one is dropped. */
  maxValueBytes: 1_024,
} as const;

/** Appended to a description that was cut to its bound. */
export const CUT_MARK = ' …[truncated]';

/** Keys an object node may carry at the root for Bedrock (Amazon Nova: only type, properties, required at the top level). */
export const ROOT_MINIMAL = new Set(['type', 'properties', 'required']);

/** Property-name rules: Anthropic's (also Claude on Bedrock) and Gemini's (also portable, the stricter one). */
export const KEY_RULES = {
  anthropic: /^[a-zA-Z0-9_.-]{1,64}$/,
  gemini: /^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/,
} as const;

/** Every 2020-12 keyword the canonical form keeps (after `$ref` inlining, draft conversions and validation). */
export const CANONICAL_KEYWORDS = new Set([
  'type',
  'description',
  'title',
  'enum',
  'const',
  'default',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
  'properties',
  'required',
  'additionalProperties',
  'patternProperties',
  'propertyNames',
  'minProperties',
  'maxProperties',
  'dependentRequired',
  'dependentSchemas',
  'unevaluatedProperties',
  'items',
  'prefixItems',
  'contains',
  'minContains',
  'maxContains',
  'minItems',
  'maxItems',
  'uniqueItems',
  'unevaluatedItems',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'contentMediaType',
  'contentEncoding',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'anyOf',
  'oneOf',
  'allOf',
  'not',
  'if',
  'then',
  'else',
]);

/** How a profile shapes a schema. `rich` keeps JSON Schema; `subset` is Gemini's OpenAPI 3.0 subset. */
export interface Rules {
  kind: 'rich' | 'subset';
  /** Keywords kept on a node; the others are dropped, their constraints written into the description. */
  keep: ReadonlySet<string>;
  /** Only these keys at the root (Bedrock's Nova rule), or null. */
  rootKeys: ReadonlySet<string> | null;
  /** Property names must match this (renamed otherwise), or null. */
  keyRule: RegExp | null;
  /** OpenAI strict mode: all properties required (optional ones made nullable), `additionalProperties: false`. */
  strict: boolean;
  /** How "may be null" is said in a subset profile: `nullable: true` (Gemini) or not at all (portable). */
  nullable: boolean;
  /** Formats kept, per type; others go to the description. null: any format string. */
  formats: Readonly<Record<string, ReadonlySet<string>>> | null;
}

const OPENAI_KEEP = new Set([
  'type',
  'description',
  'title',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'anyOf',
]);

/** OpenAI Structured Outputs' supported keywords (strict mode). */
const OPENAI_STRICT_KEEP = new Set([
  'type',
  'description',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'anyOf',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
]);

/** The intersection of Gemini's Schema object over its API versions (v1, v1alpha, v1beta, Vertex). */
const SUBSET_KEEP = new Set([
  'type',
  'format',
  'description',
  'nullable',
  'enum',
  'items',
  'properties',
  'required',
  'minItems',
  'maxItems',
]);

/** Gemini's documented formats: NUMBER float/double, INTEGER int32/int64, STRING enum/date-time (Developer API). */
const SUBSET_FORMATS = {
  string: new Set(['date-time']),
  number: new Set(['float', 'double']),
  integer: new Set(['int32', 'int64']),
};

const STRICT_FORMATS = {
  string: new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid']),
};

export const RULES: Readonly<Record<Profile, Rules>> = {
  anthropic: {
    kind: 'rich',
    keep: CANONICAL_KEYWORDS,
    rootKeys: null,
    keyRule: KEY_RULES.anthropic,
    strict: false,
    nullable: false,
    formats: null,
  },
  bedrock: {
    kind: 'rich',
    keep: CANONICAL_KEYWORDS,
    rootKeys: ROOT_MINIMAL,
    keyRule: KEY_RULES.anthropic,
    strict: false,
    nullable: false,
    formats: null,
  },
  openai: { kind: 'rich', keep: OPENAI_KEEP, rootKeys: null, keyRule: null, strict: false, nullable: false, formats: null },
  'openai-strict': {
    kind: 'rich',
    keep: OPENAI_STRICT_KEEP,
    rootKeys: null,
    keyRule: null,
    strict: true,
    nullable: false,
    formats: STRICT_FORMATS,
  },
  gemini: {
    kind: 'subset',
    keep: SUBSET_KEEP,
    rootKeys: null,
    keyRule: KEY_RULES.gemini,
    strict: false,
    nullable: true,
    formats: SUBSET_FORMATS,
  },
  portable: {
    kind: 'subset',
    keep: SUBSET_KEEP,
    rootKeys: ROOT_MINIMAL,
    keyRule: KEY_RULES.gemini,
    strict: false,
    nullable: false,
    formats: SUBSET_FORMATS,
  },
};

/** Per-run limits; the size fitter tightens them step by step when a schema is over `maxBytes`. */
export interface Limits {
  maxDepth: number;
  maxDescription: number;
  maxEnum: number;
}

export const DEFAULT_LIMITS: Limits = { maxDepth: BOUNDS.maxDepth, maxDescription: BOUNDS.maxDescription, maxEnum: BOUNDS.maxEnum };

/** The tightening steps, in order, tried while the schema is too large. */
export const FIT_STEPS: readonly Limits[] = [
  { maxDepth: 10, maxDescription: 256, maxEnum: 100 },
  { maxDepth: 10, maxDescription: 0, maxEnum: 50 },
  { maxDepth: 6, maxDescription: 0, maxEnum: 50 },
  { maxDepth: 3, maxDescription: 0, maxEnum: 20 },
  { maxDepth: 1, maxDescription: 0, maxEnum: 20 },
];
