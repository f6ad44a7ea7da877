/**
 * The HTTP API's shapes as zod schemas: they validate requests and generate
 * the OpenAPI document (@hono/zod-openapi), so the two cannot drift. A
 * server entry is protocol/settings.ts's own schema (the rules of
 * extensions.json), reused, not restated.
 */
import { z } from '@hono/zod-openapi';
import { secretsPatchSchema, settingsHttpSchema, settingsStdioSchema } from '../protocol/settings.ts';

export const errorSchema = z.object({
  error: z.object({
    code: z.string().openapi({ description: 'stable: an ALBEDO_* code', example: 'ALBEDO_INVALID_ARGUMENT' }),
    message: z.string(),
    path: z.array(z.union([z.string(), z.number()])).optional()
      .openapi({ description: 'the field at fault, from the request part: body, params, query or headers', example: ['body', 'command'] }),
    outcome: z.enum(['not_run', 'unknown']).optional(),
  }),
}).openapi('Error');

const patchShape = secretsPatchSchema.shape;
const blank = z.literal('');
const bearerToken = patchShape.bearerToken.unwrap().unwrap();
const header = patchShape.header.unwrap().unwrap();
const envRecord = patchShape.env.unwrap().unwrap();

/**
 * Typed secrets in a write, stored in creds.json (never in extensions.json).
 * Left out or blank (`""`): the stored one is kept; `null`: removed.
 */
export const secretsInputSchema = z.strictObject({
  bearer: z.union([blank, bearerToken]).nullable().optional().openapi({ description: 'http: sent as Authorization: Bearer <token>' }),
  header: z.strictObject({ name: header.shape.name, value: z.union([blank, header.shape.value]) }).nullable().optional()
    .openapi({ description: 'http: one custom header; a blank value keeps the stored value of the header of that name' }),
  env: z.record(envRecord.keyType, z.union([blank, envRecord.valueType.unwrap()]).nullable()).nullable().optional()
    .openapi({ description: 'stdio: environment entries; an entry null removes it, blank keeps it' }),
  oauth_client: z.strictObject({ client_id: z.string(), client_secret: z.string().min(1).optional() }).nullable().optional()
    .openapi({ description: 'http: a client registered beforehand; a blank client_id keeps the stored client' }),
}).openapi('SecretsInput');
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

export const secretsSummarySchema = z.object({
  bearer: z.boolean(),
  header: z.string().nullable().openapi({ description: 'the custom header\'s name' }),
  env: z.array(z.string()),
  oauth_client: z.boolean(),
}).openapi('SecretsSet', { description: 'Which typed secrets are stored; never a value.' });

export const lastErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  path: z.array(z.union([z.string(), z.number()])).optional(),
  reason: z.string().optional(),
}).openapi('ServerError', { description: 'Why the server cannot be prepared as saved (a missing variable or file, a conflict), if it cannot.' });

export const serverSchema = z.object({
  name: z.string(),
  enabled: z.boolean(),
  config: entrySchema,
  secrets: secretsSummarySchema,
  tools: z.number().int().nullable()
    .openapi({ description: 'the tools in the catalogue saved for the server as configured now; null when none is saved (never connected, or changed)' }),
  description: z.string().max(2_048)
    .openapi({ description: 'the server\'s own description (serverInfo.description), else its instructions, at most 2,048 characters; "" when unknown' }),
  lastError: lastErrorSchema.nullable(),
}).openapi('Server');
export type ServerDto = z.output<typeof serverSchema>;

export const issueSchema = z.object({
  server: z.string().nullable(),
  path: z.array(z.union([z.string(), z.number()])),
  message: z.string(),
}).openapi('SettingsIssue');

export const serverListSchema = z.object({
  servers: z.array(serverSchema),
  invalid: z.array(issueSchema).nullable()
    .openapi({ description: 'extensions.json on disk is broken: its issues (the settings shown are the last valid ones)' }),
}).openapi('ServerList');

export const mcpSectionSchema = z.object({
  retryMs: z.number().int(),
  enabled: z.object({ mcp: z.boolean(), 'editor-mcp': z.boolean() }),
  path: z.string().nullable(),
  invalid: z.array(issueSchema).nullable(),
}).openapi('McpSettings');

export const checkSchema = z.union([
  z.object({ tried: z.literal(true), result: z.enum(['connected', 'needs_sign_in']) }),
  z.object({ tried: z.literal(false), reason: z.literal('disabled') }),
]).openapi('SaveCheck', { description: 'What the strict save found: connected, or needs a sign-in (kept); a disabled server is not tried.' });

export const saveResultSchema = z.object({
  saved: z.boolean().openapi({ description: 'false for ?dry_run=true' }),
  created: z.boolean(),
  check: checkSchema,
  server: serverSchema.nullable().openapi({ description: 'the server as saved (null for a dry run of a new server)' }),
}).openapi('SaveResult');

export const nameParamSchema = z.object({
  name: z.string().min(1).openapi({ param: { name: 'name', in: 'path' }, description: 'the server\'s name (URL-encoded)', example: 'docs' }),
});

export const dryRunQuerySchema = z.object({
  dry_run: z.enum(['true', 'false']).optional().openapi({ description: 'true: try the server and report, without saving' }),
});

export const preconditionHeadersSchema = z.object({
  'if-match': z.string().optional().openapi({ description: 'an ETag of a read: the write is refused (412) if the server changed since' }),
  'if-none-match': z.literal('*').optional().openapi({ description: '*: create only (412 if the server exists)' }),
});
