/**
 * The ACP routes' shapes (`/v1/acp/*`) as zod schemas: validation and the
 * OpenAPI document. `mcpServers` is taken as the editor sent it (ACP v1's
 * McpServer: a stdio entry without `type`, an `http` or `sse` one with it);
 * the stdio entries become the session's overlay (routes.ts), the others are
 * refused there with ALBEDO_OVERLAY_FAILED rather than here, so the editor
 * hears which entry and why. An entry (and an env or header pair) holds the
 * keys ACP v1 gives it and `_meta`, nothing else: an unknown key is refused
 * at its path (400), as unknown top-level fields are.
 */
import { z } from '@hono/zod-openapi';

const meta = z.record(z.string(), z.unknown()).nullish();
const pair = z.strictObject({ name: z.string().max(4_096), value: z.string().max(65_536), _meta: meta });

/** ACP v1's stdio McpServer (`args` / `env` null read as empty, as the schema says). */
const stdioServer = z.strictObject({
  name: z.string().max(200),
  command: z.string().max(4_096),
  args: z.array(z.string().max(65_536)).max(1_000).nullish(),
  env: z.array(pair).max(1_000).nullish(),
  _meta: meta,
});
const remoteServer = z.strictObject({
  type: z.enum(['http', 'sse']),
  name: z.string().max(200),
  url: z.string().max(8_192),
  headers: z.array(pair).max(1_000).nullish(),
  _meta: meta,
});

export const mcpServerSchema = z
  .union([remoteServer, stdioServer.extend({ type: z.literal('stdio').optional() })])
  .openapi('AcpMcpServer', { description: 'an ACP v1 McpServer as the editor sent it; only stdio ones are taken' });
export type AcpMcpServer = z.infer<typeof mcpServerSchema>;

const agentSchema = z.strictObject({
  command: z.string().min(1).max(4_096),
  args: z.array(z.string().max(65_536)).max(1_000),
});
const extensionsSchema = z
  .strictObject({ 'editor-mcp': z.boolean().optional() })
  .optional()
  .openapi({ description: "editor-mcp: false keeps the editor's servers out of the session's tools (absent: the settings' default)" });

const absolute = z
  .string()
  .min(1)
  .max(4_096)
  .refine((p) => p.startsWith('/'), 'must be an absolute path');

export const createBodySchema = z
  .strictObject({
    cwd: absolute.openapi({ description: "the ACP session's workspace: the editor's servers run there" }),
    mcpServers: z.array(mcpServerSchema).max(1_000),
    agent: agentSchema,
    http: z.boolean().optional().openapi({ description: 'the agent declared mcpCapabilities.http: the gateway is given in its HTTP form' }),
    extensions: extensionsSchema,
  })
  .openapi('AcpCreate');
export type CreateBody = z.infer<typeof createBodySchema>;

export const attachBodySchema = createBodySchema
  .extend({ acpSessionId: z.string().min(1).max(1_024).openapi({ description: "the agent's session id (session/load, session/resume)" }) })
  .openapi('AcpAttach');
export type AttachBody = z.infer<typeof attachBodySchema>;

export const bindBodySchema = z.strictObject({ acpSessionId: z.string().min(1).max(1_024) }).openapi('AcpBind');
export const overlayBodySchema = z
  .strictObject({ cwd: absolute.optional(), mcpServers: z.array(mcpServerSchema).max(1_000) })
  .openapi('AcpOverlay');

export const STATES = ['ready', 'reload_pending', 'reattach_required'] as const;
export type AcpState = (typeof STATES)[number];

const pairOut = z.object({ name: z.string(), value: z.string() });
const gatewaySchema = z
  .union([
    z.object({ name: z.literal('albedo'), command: z.string(), args: z.array(z.string()), env: z.array(pairOut) }),
    z.object({ type: z.literal('http'), name: z.literal('albedo'), url: z.string(), headers: z.array(pairOut) }),
  ])
  .openapi({ description: "the one mcpServers entry the agent is given: the session's gateway (stdio, or HTTP with its own token)" });

export const attachmentSchema = z
  .object({
    id: z.string().openapi({ description: 'the Albedo session id' }),
    token: z.string().openapi({ description: 'the attachment token (Albedo-Attachment-Token), shown once' }),
    leaseMs: z.number(),
    renewMs: z.number(),
    state: z.enum(STATES),
    overlay: z.object({ servers: z.array(z.string()) }),
    gateway: gatewaySchema,
    created: z.boolean().optional(),
  })
  .openapi('AcpAttachment');

export const leaseSchema = z.object({ leaseMs: z.number(), renewMs: z.number(), state: z.enum(STATES) }).openapi('AcpLease');

const overlayInfo = z.object({ servers: z.array(z.object({ name: z.string(), state: z.string() })) });
export const overlayResultSchema = z.object({ state: z.enum(STATES), overlay: overlayInfo }).openapi('AcpOverlayResult');

export const infoSchema = z
  .object({
    id: z.string(),
    acpSessionId: z.string().optional(),
    cwd: z.string(),
    agent: z.object({ command: z.string(), args: z.array(z.string()) }),
    attached: z.boolean(),
    state: z.enum(STATES),
    editorMcp: z.boolean(),
    overlay: overlayInfo,
  })
  .openapi('AcpSessionInfo');
export const infoListSchema = z.object({ sessions: z.array(infoSchema) });

export const idParam = z.object({ id: z.string().min(1).max(200) });
export const tokenHeader = z.object({
  // Optional here so an unknown session is a 404 first; without it a route that acts for the attachment answers 400 here.
  'albedo-attachment-token': z
    .string()
    .max(200)
    .optional()
    .openapi({ description: 'the token POST /v1/acp/sessions or /v1/acp/attach gave (required)' }),
});
