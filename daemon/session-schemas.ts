/**
 * The sessions routes' shapes as zod schemas (validation and the OpenAPI
 * document, as schemas.ts for the settings). The body of a session's open
 * is protocol/composer.ts's SessionOptions, spelled again here only so the
 * document can name and describe it; the composer validates it too.
 */
import { z } from '@hono/zod-openapi';
import { SERVER_STATES, TOOLS_MODES } from '../protocol/composer.ts';
import { errorSchema } from './schemas.ts';
import { MAX_LEASE_TTL_MS, MIN_LEASE_TTL_MS } from './session-lease.ts';

const names = z.array(z.string().min(1)).max(1_000);

/** What a client may ask of a session's lease (session-lease.ts): its ttl, 10 s to 1 h. */
export const leaseBodySchema = z
  .strictObject({
    ttlMs: z.number().int().min(MIN_LEASE_TTL_MS).max(MAX_LEASE_TTL_MS).optional().openapi({
      description:
        'how long the session outlives the last request naming it (an open event stream holds it): 10000 to 3600000 ms, default 300000',
    }),
  })
  .openapi('SessionLeaseAsk');

export const leaseSchema = z
  .object({
    ttlMs: z.number().int(),
    expiresAt: z.number().openapi({ description: 'when it expires unless a request names the session first (epoch ms)' }),
    streams: z.number().int().openapi({ description: 'event streams open on the session: each holds it' }),
  })
  .openapi('SessionLease');

export const openBodySchema = z
  .strictObject({
    lease: leaseBodySchema.optional().openapi({ description: 'the lease: a session no request names for its ttl is closed' }),
    servers: z
      .strictObject({
        include: names.optional().openapi({ description: 'only these configured servers' }),
        exclude: names.optional().openapi({ description: 'not these' }),
      })
      .optional(),
    profile: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .openapi({ description: 'portable (default), openai, openai-strict, anthropic, gemini or bedrock', example: 'anthropic' }),
    extensions: z
      .strictObject({ mcp: z.boolean().optional(), 'editor-mcp': z.boolean().optional() })
      .optional()
      .openapi({
        description:
          "mcp: false opens a session without MCP (no tools, no connections); 'editor-mcp': false hides its overlay (an editor's " +
          "servers); absent: the settings' default (enabled in extensions.json)",
      }),
    tools: z
      .enum(TOOLS_MODES)
      .optional()
      .openapi({
        description:
          'all (default): every definition; deferred: mcp_search_tools, mcp_call_tool, the alwaysLoad tools and what searches loaded; ' +
          'auto: deferred when the definitions would take more than a tenth of contextBudget, or number more than 128',
      }),
    contextBudget: z
      .number()
      .int()
      .min(1_000)
      .max(100_000_000)
      .optional()
      .openapi({ description: "the model's context in tokens, for auto (default 200000)" }),
    resultBudget: z.number().int().min(100).max(1_000_000).optional().openapi({
      description: "the most one result puts in the context, in estimated tokens (default 25000; a server's own resultBudget wins)",
    }),
    cwd: z
      .string()
      .max(4_096)
      .optional()
      .openapi({
        description:
          "the session's working directory (absolute, an existing directory, not the daemon's home or inside it): " +
          'read_resource with `export` writes the blobs it reads to new files there instead of returning their base64',
        example: '/home/me/project',
      }),
  })
  .openapi('SessionOpen');

const reasonSchema = z.object({ code: z.string(), message: z.string() }).openapi('StateReason');

export const serverStatusSchema = z
  .object({
    name: z.string(),
    state: z.enum(SERVER_STATES),
    advertised: z.boolean(),
    tools: z.number().int(),
    pending: z.boolean().openapi({ description: 'a change for it waits for the end of the turn' }),
    reason: reasonSchema.optional(),
    nextProbeAt: z
      .number()
      .optional()
      .openapi({ description: 'left out or waiting for a sign-in: when the next come-back probe is due (epoch ms)' }),
    retry: z.object({ attempt: z.number().int(), of: z.number().int(), nextAt: z.number(), code: z.string() }).optional().openapi({
      description: "its first dial failed and is tried again: the next attempt, of how many, when (epoch ms), and the failure's code",
    }),
  })
  .openapi('SessionServer');

const extensionStateSchema = z
  .object({
    chosen: z.boolean().nullable().openapi({ description: "the session's own choice; null: none, the settings decide" }),
    effective: z.boolean().openapi({ description: 'whether the extension is in force now' }),
  })
  .openapi('SessionExtension');

export const sessionExtensionsSchema = z
  .object({
    mcp: extensionStateSchema,
    'editor-mcp': extensionStateSchema.openapi({ description: "the session's overlay shown; in force only while mcp is" }),
  })
  .openapi('SessionExtensions');

/** A change of a session's own choice: a boolean chooses, null goes back to the settings' default, absent leaves it. */
export const patchBodySchema = z
  .strictObject({
    extensions: z
      .strictObject({
        mcp: z.boolean().nullable().optional().openapi({ description: 'false: no MCP for the session (its connections close)' }),
        'editor-mcp': z.boolean().nullable().optional().openapi({ description: "false: its overlay's servers close and their tools go" }),
      })
      .openapi({ description: "true or false chooses; null: the settings' default again; absent: unchanged" }),
  })
  .openapi('SessionPatch');

export const sessionSchema = z
  .object({
    id: z.string(),
    profile: z.string(),
    generation: z.number().int().openapi({ description: '1 after open, one more each time what the model sees changes' }),
    tools: z.number().int().openapi({ description: 'how many tools the current generation advertises' }),
    servers: z.array(serverStatusSchema),
    warnings: z.array(z.string()),
    toolsOption: z.enum(TOOLS_MODES).openapi({ description: 'the tools option it was opened with' }),
    deferred: z.boolean().openapi({ description: 'whether the current generation defers its definitions' }),
    label: z.string().optional().openapi({ description: "the session's owner mark: `gateway:NAME#…` behind a gateway" }),
    cwd: z.string().optional().openapi({ description: "the session's working directory, where read_resource's exports go" }),
    extensions: sessionExtensionsSchema,
    lease: leaseSchema.nullable().openapi({ description: "opened over HTTP: its lease; null for a gateway's or an ACP session" }),
  })
  .openapi('Session');

export const sessionListSchema = z.object({ sessions: z.array(sessionSchema) }).openapi('SessionList');

export const modelToolSchema = z
  .object({
    name: z.string().openapi({ description: 'mcp_<server>_<operation>_<hash>, matching ^[a-zA-Z][a-zA-Z0-9_]{0,63}$' }),
    description: z.string(),
    inputSchema: z.record(z.string(), z.unknown()),
  })
  .openapi('ModelTool');

const costSchema = z
  .object({
    definitions: z.number().int().openapi({ description: 'every definition of the generation, estimated tokens (characters / 4)' }),
    context: z.number().int().openapi({ description: 'the MCP context text the model has (the one kept since the last compaction)' }),
    advertised: z
      .number()
      .int()
      .openapi({ description: 'the definitions this answer gives (deferred: the fixed set and the loaded ones)' }),
    servers: z.array(z.object({ name: z.string(), tools: z.number().int(), definitions: z.number().int(), context: z.number().int() })),
  })
  .openapi('ContextCost');

/** A definition as the tools route lists it: the model's fields, then where it comes from (so no client parses descriptions). */
export const listedToolSchema = modelToolSchema
  .extend({
    server: z
      .string()
      .nullable()
      .openapi({ description: "the server it calls; null for Albedo's own (mcp_read_result, mcp_search_tools, mcp_call_tool)" }),
    tool: z.string().openapi({
      description: "the raw tool name; read_resource or get_prompt for those pseudo-operations; the name itself for Albedo's own",
    }),
    kind: z
      .enum(['tool', 'read_resource', 'get_prompt', 'albedo'])
      .openapi({ description: "a server's tool, one of its pseudo-operations (told apart from a tool of that name), or Albedo's own" }),
  })
  .openapi('ListedTool');

export const toolsSchema = z
  .object({
    generation: z.number().int(),
    profile: z.string(),
    deferred: z.boolean(),
    tools: z.array(listedToolSchema),
    loaded: z.array(z.string()).openapi({
      description: 'deferred: the alwaysLoad names and those searches found, in order (only grows within a generation); else every name',
    }),
    cost: costSchema,
  })
  .openapi('SessionTools');

export const searchBodySchema = z
  .strictObject({
    query: z
      .string()
      .min(1)
      .max(1_000)
      .openapi({ description: 'a tool name, a server name, or words of what the tool does', example: 'read a file' }),
    limit: z.number().int().min(1).max(20).optional().openapi({ description: 'how many matches (default 5)' }),
  })
  .openapi('Search');

export const resultParamSchema = z.object({
  id: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: 'id', in: 'path' }, description: 'the session id' }),
  result: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'result', in: 'path' }, description: 'the kept result\'s id (from _meta["albedo/cut"])' }),
});

export const resultQuerySchema = z.object({
  offset: z
    .string()
    .regex(/^\d{1,15}$/)
    .optional()
    .openapi({ description: 'where to start, in characters (default 0)' }),
  limit: z
    .string()
    .regex(/^\d{1,15}$/)
    .optional()
    .openapi({
      description: 'about this many characters, at least 1,000, ending at a clean boundary (default: the budget the cut was made under)',
    }),
});

export const resultPageSchema = z
  .object({
    id: z.string(),
    kind: z.enum(['text', 'base64', 'json']),
    what: z.string().openapi({ description: 'text, image, audio, resource, structuredContent' }),
    mimeType: z.string().optional(),
    offset: z.number().int(),
    data: z.string().openapi({ description: 'the characters from offset (base64 for images and blobs, JSON text for structured content)' }),
    next: z.number().int().nullable().openapi({ description: 'where the next page starts; null at the end' }),
    total: z.number().int(),
  })
  .openapi('ResultPage');

export const searchResultSchema = z
  .object({
    tools: z.array(modelToolSchema.extend({ server: z.string(), score: z.number() })),
    loaded: z.array(z.string()),
  })
  .openapi('SearchResult');
export const contextSchema = z
  .object({
    generation: z.number().int().openapi({ description: "the session's generation now" }),
    context: z.string().openapi({
      description:
        'the MCP context text for the system prompt ("" when there is nothing to say), kept as of the last compaction (at open, the ' +
        "first generation's) so a prompt cache holds; capabilities_changed events say what changed meanwhile",
    }),
    contextGeneration: z.number().int().openapi({ description: 'the generation whose text `context` is (at most `generation`)' }),
  })
  .openapi('SessionContext');
/** POST /v1/sessions/{id}/compacted: nothing to say (no body, or `{}`). */
export const compactedBodySchema = z.strictObject({}).openapi('Compacted');

export const idParamSchema = z.object({
  id: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: 'id', in: 'path' }, description: 'the session id' }),
});

export const toolsQuerySchema = z.object({
  profile: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .openapi({ description: "must be the session's own profile (the schemas are normalised for it)" }),
  all: z
    .enum(['true', 'false'])
    .optional()
    .openapi({ description: 'true: every definition of the generation, even in a deferred session' }),
});

export const callBodySchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(4_096)
      .openapi({
        description:
          'an advertised name; server/tool with the raw names (server/read_resource, server/get_prompt too); a raw tool name only one ' +
          'server has; or an advertised name without its hash (mcp_docs_search)',
        example: 'docs/search',
      }),
    arguments: z.record(z.string(), z.unknown()).optional().openapi({
      description:
        "the arguments, by the advertised schema's property names; checked against the server's input schema before the call is sent",
    }),
    timeoutMs: z.number().int().positive().max(3_600_000).optional().openapi({ description: "overrides the server's callTimeoutMs" }),
  })
  .openapi('Call');

export const callResultSchema = z
  .object({
    result: z.unknown().openapi({ description: "the MCP result as the server sent it (a tool's isError is a result)" }),
  })
  .openapi('CallResult');

export const activityBodySchema = z.strictObject({ kind: z.enum(['submit', 'turn_end']) }).openapi('Activity');
export const generationSchema = z.object({ generation: z.number().int() }).openapi('Generation');

/** A call's error: the API's error, with `data` saying more (the argument at fault, the names meant). */
export const callErrorSchema = z
  .object({
    error: errorSchema.shape.error.extend({
      data: z
        .object({
          name: z.string().optional().openapi({ description: 'the name called' }),
          server: z.string().optional(),
          tool: z.string().optional().openapi({ description: 'the raw tool name (or read_resource, get_prompt)' }),
          state: z.string().optional().openapi({ description: 'not found: the state of the server the name named' }),
          suggestions: z
            .array(z.string())
            .optional()
            .openapi({ description: 'not found: the nearest advertised names, nearest first (maybe none)' }),
          ambiguous: z.boolean().optional().openapi({ description: 'not found: the name fits several definitions, listed in candidates' }),
          candidates: z.array(z.string()).optional().openapi({ description: 'the advertised names an ambiguous name fits' }),
          argument: z.string().optional().openapi({
            description: 'invalid arguments: the first argument at fault, as a person reads it (options.count)',
            example: 'message',
          }),
          path: z
            .array(z.union([z.string(), z.number()]))
            .optional()
            .openapi({ description: 'its path inside arguments' }),
          pointer: z.string().optional().openapi({ description: 'its JSON Pointer inside arguments', example: '/message' }),
          keyword: z.string().optional().openapi({ description: 'the JSON Schema keyword it failed', example: 'required' }),
          problems: z
            .array(z.object({ argument: z.string(), pointer: z.string(), keyword: z.string(), message: z.string() }))
            .optional()
            .openapi({ description: 'every problem found (at most 10)' }),
          export: z
            .string()
            .optional()
            .openapi({
              description:
                "a read_resource's export that failed: no_working_directory, working_directory_missing, inside_home, " +
                'absolute, outside, hidden, bad_file, no_such_directory, exists, bad_argument (not read); exists, ' +
                'invalid_base64, write_failed, aborted (read, its files removed)',
              example: 'exists',
            }),
          file: z.string().optional().openapi({ description: 'the export: the file it could not create' }),
          errno: z.string().optional().openapi({ description: 'the export: the system error (ENOSPC, EACCES…)', example: 'ENOSPC' }),
          read: z.boolean().optional().openapi({ description: 'the export: whether the resource was read before it failed' }),
          leftover: z.string().optional().openapi({ description: 'the export: a file it could not remove (outcome unknown)' }),
        })
        .optional(),
    }),
  })
  .openapi('CallError');
