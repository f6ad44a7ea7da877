/**
 * The HTTP API's shapes as zod schemas: they validate requests and generate
 * the OpenAPI document (@hono/zod-openapi), so the two cannot drift. A
 * server entry is protocol/settings.ts's own schema (the rules of
 * extensions.json), reused, not restated.
 */
import { z } from '@hono/zod-openapi';
import { secretsPatchSchema, sectionsPatchSchema, settingsHttpSchema, settingsStdioSchema } from '../protocol/settings.ts';

export const errorSchema = z
  .object({
    error: z.object({
      code: z.string().openapi({ description: 'stable: an ALBEDO_* code', example: 'ALBEDO_INVALID_ARGUMENT' }),
      message: z.string(),
      path: z
        .array(z.union([z.string(), z.number()]))
        .optional()
        .openapi({
          description: 'the field at fault, from the request part: body, params, query or headers',
          example: ['body', 'command'],
        }),
      outcome: z.enum(['not_run', 'unknown']).optional(),
    }),
  })
  .openapi('Error');

const patchShape = secretsPatchSchema.shape;
const blank = z.literal('');
const bearerToken = patchShape.bearerToken.unwrap().unwrap();
const header = patchShape.header.unwrap().unwrap();
const envRecord = patchShape.env.unwrap().unwrap();

/**
 * Typed secrets in a write, stored in creds.json (never in extensions.json).
 * Left out or blank (`""`): the stored one is kept; `null`: removed.
 */
export const secretsInputSchema = z
  .strictObject({
    bearer: z.union([blank, bearerToken]).nullable().optional().openapi({ description: 'http: sent as Authorization: Bearer <token>' }),
    header: z
      .strictObject({ name: header.shape.name, value: z.union([blank, header.shape.value]) })
      .nullable()
      .optional()
      .openapi({ description: 'http: one custom header; a blank value keeps the stored value of the header of that name' }),
    env: z
      .record(envRecord.keyType, z.union([blank, envRecord.valueType.unwrap()]).nullable())
      .nullable()
      .optional()
      .openapi({ description: 'stdio: environment entries; an entry null removes it, blank keeps it' }),
    oauth_client: z
      .strictObject({ client_id: z.string(), client_secret: z.string().min(1).optional() })
      .nullable()
      .optional()
      .openapi({ description: 'http: a client registered beforehand; a blank client_id keeps the stored client' }),
    oauth: z.null().optional().openapi({
      description: 'http: null signs out (the OAuth tokens go; the client registration stays); a sign-in is PUT /v1/auth/logins/mcp:{name}',
    }),
  })
  .openapi('SecretsInput');
export type SecretsInput = z.output<typeof secretsInputSchema>;

export const stdioBodySchema = settingsStdioSchema.extend({ secrets: secretsInputSchema.optional() });
export const httpBodySchema = settingsHttpSchema.safeExtend({ secrets: secretsInputSchema.optional() });

/** PUT: the whole entry as extensions.json has it (written as given), plus `secrets`. */
export const putBodySchema = z.union([stdioBodySchema, httpBodySchema]).openapi('ServerPut', {
  description: 'A server entry of extensions.json (`type` absent: http when there is a `url`, else stdio), plus `secrets`.',
});

/** PATCH: a JSON merge patch (RFC 7396) of the entry (null removes a field), plus `secrets` as in a PUT. */
export const patchBodySchema = z.object({ secrets: secretsInputSchema.optional() }).catchall(z.unknown()).openapi('ServerPatch', {
  description: 'A JSON merge patch (RFC 7396) of the server entry as saved; the result must be a valid entry. `secrets` as in a PUT.',
});

export const entrySchema = z.union([settingsStdioSchema, settingsHttpSchema]).openapi('ServerEntry');

export const secretsSummarySchema = z
  .object({
    bearer: z.boolean(),
    header: z.string().nullable().openapi({ description: "the custom header's name" }),
    env: z.array(z.string()),
    oauth_client: z.boolean(),
  })
  .openapi('SecretsSet', { description: 'Which typed secrets are stored; never a value.' });

export const lastErrorSchema = z
  .object({
    code: z.string(),
    message: z.string(),
    path: z.array(z.union([z.string(), z.number()])).optional(),
    reason: z.string().optional(),
  })
  .openapi('ServerError', {
    description: 'Why the server cannot be prepared as saved (a missing variable or file, a conflict), if it cannot.',
  });

/** A server's state as the daemon knows it without dialling it. */
export const SERVER_DTO_STATES = ['disabled', 'error', 'needs_sign_in', 'discovered', 'configured'] as const;

export const authSchema = z
  .object({
    state: z
      .enum(['none', 'needs_sign_in', 'signed_in', 'signed_out'])
      .openapi({ description: 'none: no sign-in recorded (the server may not need one); signed_out: the user signed out' }),
    account: z.string().optional().openapi({ description: "the access token's subject (email or sub), when it names one" }),
    expires_at: z.string().optional().openapi({ description: 'ISO 8601: when the access token expires (it is refreshed before)' }),
    scope: z.string().optional(),
    step_up: z.string().optional().openapi({ description: 'the scope a 403 insufficient_scope asked for: the next sign-in asks for it' }),
    reason: z
      .string()
      .optional()
      .openapi({ description: 'why a sign-in is needed: not_signed_in, token_rejected, refresh_refused, signed_out, …' }),
    issuer: z.string().optional(),
    client: z.object({ id: z.string(), kind: z.string(), issuer: z.string() }).optional(),
    token_type: z.string().optional(),
    refreshable: z.boolean().optional(),
  })
  .openapi('Auth', { description: "A server's OAuth state as creds.json records it; never a token or secret." });
export type AuthDto = z.output<typeof authSchema>;

export const serverSchema = z
  .object({
    name: z.string(),
    enabled: z.boolean(),
    state: z.enum(SERVER_DTO_STATES).openapi({
      description:
        'as far as the daemon knows without dialling: disabled; error (lastError says why it cannot be prepared); needs_sign_in ' +
        '(auth says so); discovered (a catalogue is saved for the server as configured now: it answered, this config); ' +
        'configured (nothing known yet)',
    }),
    auth: authSchema.nullable().openapi({
      description: 'the OAuth state; null for a stdio server, an http server with a fixed Authorization, or when creds.json cannot be read',
    }),
    config: entrySchema,
    secrets: secretsSummarySchema,
    tools: z.number().int().nullable().openapi({
      description:
        'the tools in the catalogue saved for the server as configured now; null when none is saved (never connected, or changed)',
    }),
    description: z.string().max(2_048).openapi({
      description:
        'the server\'s own description (serverInfo.description), else its instructions, at most 2,048 characters; "" when unknown',
    }),
    lastError: lastErrorSchema.nullable(),
    warnings: z.array(z.object({ path: z.array(z.union([z.string(), z.number()])), message: z.string() })).openapi({
      description:
        'what the entry exposes, kept as saved: a working directory or an argument in $ALBEDO_HOME or above it ' +
        '(a server serving it would hand out daemon.json and creds.json); [] when none, or when the server cannot be prepared',
    }),
  })
  .openapi('Server');
export type ServerDto = z.output<typeof serverSchema>;

export const issueSchema = z
  .object({
    server: z.string().nullable(),
    path: z.array(z.union([z.string(), z.number()])),
    message: z.string(),
  })
  .openapi('SettingsIssue');

export const serverListSchema = z
  .object({
    servers: z.array(serverSchema),
    invalid: z
      .array(issueSchema)
      .nullable()
      .openapi({ description: 'extensions.json on disk is broken: its issues (the settings shown are the last valid ones)' }),
  })
  .openapi('ServerList');

export const mcpSectionSchema = z
  .object({
    retryMs: z.number().int(),
    enabled: z.object({ mcp: z.boolean(), 'editor-mcp': z.boolean() }),
    path: z.string().nullable(),
    invalid: z.array(issueSchema).nullable(),
  })
  .openapi('McpSettings');

export const checkSchema = z
  .union([
    z.object({ tried: z.literal(true), result: z.enum(['connected', 'needs_sign_in']) }),
    z.object({ tried: z.literal(false), reason: z.literal('disabled') }),
  ])
  .openapi('SaveCheck', {
    description: 'What the strict save found: connected, or needs a sign-in (kept); a disabled server is not tried.',
  });

export const saveResultSchema = z
  .object({
    saved: z.boolean().openapi({ description: 'false for ?dry_run=true' }),
    created: z.boolean(),
    check: checkSchema,
    server: serverSchema.nullable().openapi({ description: 'the server as saved (null for a dry run of a new server)' }),
  })
  .openapi('SaveResult');

export const nameParamSchema = z.object({
  name: z
    .string()
    .min(1)
    .openapi({ param: { name: 'name', in: 'path' }, description: "the server's name (URL-encoded)", example: 'docs' }),
});

export const dryRunQuerySchema = z.object({
  dry_run: z.enum(['true', 'false']).optional().openapi({ description: 'true: try the server and report, without saving' }),
});

export const preconditionHeadersSchema = z.object({
  'if-match': z.string().optional().openapi({ description: 'an ETag of a read: the write is refused (412) if the server changed since' }),
  'if-none-match': z.literal('*').optional().openapi({ description: '*: create only (412 if the server exists)' }),
});

/** PATCH /v1/mcp: a merge patch of the mcp section's retryMs and the extensions' defaults; null restores a default. */
export const mcpPatchSchema = z.strictObject(sectionsPatchSchema.omit({ gateways: true }).shape).openapi('McpSettingsPatch', {
  description:
    'retryMs (ms before the first come-back probe) and the extensions\' defaults (enabled.mcp, enabled["editor-mcp"]); ' +
    'null restores the default',
});

export const loginParamSchema = z.object({
  login: z
    .string()
    .regex(/^mcp:[\s\S]/, 'a login is mcp:<server name>')
    .openapi({
      param: { name: 'login', in: 'path' },
      description: "mcp: and the server's name (the name URL-encoded)",
      example: 'mcp:docs',
    }),
});

export const loginSchema = z
  .object({
    login: z.string().openapi({ example: 'mcp:docs' }),
    server: z.string(),
    state: z.enum(['pending', 'completed', 'failed']),
    authorizationUrl: z
      .string()
      .nullable()
      .openapi({ description: 'pending: the URL to open in a browser (null for a grant that needs no user)' }),
    startedAt: z.string(),
    expiresAt: z.string().nullable().openapi({ description: 'pending: when the sign-in expires (ten minutes after its URL was issued)' }),
    auth: authSchema.nullable().openapi({ description: "completed: the server's OAuth state" }),
    error: z
      .object({ code: z.string(), message: z.string(), reason: z.string().optional() })
      .nullable()
      .openapi({ description: 'failed: why (reason: expired, state_mismatch, denied, iss_mismatch, token_refused, cancelled, …)' }),
  })
  .openapi('Login');
export type LoginDto = z.output<typeof loginSchema>;

export const callbackBodySchema = z
  .strictObject({
    url: z
      .string()
      .min(1)
      .max(16_384)
      .openapi({ description: 'the callback URL the browser was sent to (http://127.0.0.1:PORT/callback?code=…&state=…)' }),
  })
  .openapi('LoginCallback');

export const healthSchema = z
  .object({
    ok: z.literal(true),
    version: z.string(),
    proof: z
      .string()
      .optional()
      .openapi({
        description:
          'with ?nonce=N only: base64url(HMAC-SHA256(key: the UTF-8 bytes of the token of daemon.json, message: N as sent)), ' +
          'so a client can tell this is the daemon of that daemon.json before it sends the token',
      }),
  })
  .openapi('Health');

/** GET /v1/health?nonce=: 16 to 128 hex characters, a fresh one per check. */
export const healthQuerySchema = z.object({
  nonce: z
    .string()
    .regex(/^[0-9a-fA-F]{16,128}$/, 'expected 16 to 128 hex characters')
    .optional()
    .openapi({ description: 'a fresh random challenge (16 to 128 hex characters): the answer carries `proof`' }),
});

const slotSchema = z
  .object({
    instance: z.number().int(),
    state: z.string().openapi({ description: 'starting, ready, backoff, failed, stopped' }),
    healthy: z.boolean(),
    incarnation: z.number().int(),
    inflight: z.number().int(),
    keys: z.number().int().openapi({ description: 'how many keys (connections, sessions) the slot holds' }),
  })
  .openapi('ServiceSlot');

export const statusSchema = z
  .object({
    pid: z.number().int(),
    version: z.string(),
    port: z.number().int(),
    home: z.string(),
    startedAt: z.string(),
    uptimeMs: z.number().int(),
    sessions: z.number().int().openapi({ description: 'open sessions' }),
    servers: z.object({ total: z.number().int(), enabled: z.number().int() }),
    signIns: z.number().int().openapi({ description: 'sign-ins waiting for the user' }),
    services: z
      .record(z.string(), z.array(slotSchema))
      .openapi({ description: "each service's worker slots (a service not started has none)" }),
  })
  .openapi('Status');

/** One tool of a saved catalogue, as the server listed it (its text is the server's: data, shown escaped). */
export const catalogueToolSchema = z
  .object({
    name: z.string(),
    title: z.string().optional(),
    description: z.string().optional(),
    inputSchema: z.record(z.string(), z.unknown()).openapi({ description: 'the JSON Schema of its arguments, as the server gave it' }),
    enabled: z.boolean().openapi({ description: "false when the entry's enabledTools / disabledTools keep it from the model" }),
  })
  .openapi('CatalogueTool');

/** GET /v1/mcp/servers/{name}/tools: what the saved catalogue holds; every field but `server` is null when none is saved. */
export const serverToolsSchema = z
  .object({
    server: z.string(),
    tools: z
      .array(catalogueToolSchema)
      .nullable()
      .openapi({ description: 'in the order the server listed them; null when no catalogue is saved for the server as configured now' }),
    resources: z.number().int().nullable().openapi({ description: 'how many resources it listed' }),
    resourceTemplates: z.number().int().nullable().openapi({ description: 'how many resource templates it listed' }),
    prompts: z.number().int().nullable().openapi({ description: 'how many prompts it listed' }),
    instructions: z.string().nullable().openapi({
      description: "the server's instructions for the model (often markdown), whole and as sent: data, never markup to render",
    }),
    serverInfo: z
      .object({ name: z.string(), version: z.string(), title: z.string().optional(), description: z.string().optional() })
      .nullable()
      .openapi({ description: 'the name, version, title and description the server gave (title and description only when it gave them)' }),
    discoveredAt: z.string().nullable().openapi({ description: 'ISO 8601: when the catalogue was discovered' }),
  })
  .openapi('ServerTools');
export type ServerToolsDto = z.output<typeof serverToolsSchema>;
