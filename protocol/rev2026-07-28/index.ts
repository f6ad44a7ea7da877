/**
 * The modern era (2026-07-28): stateless, `server/discover`, and `_meta` on
 * every request instead of a handshake.
 */
import { z } from 'zod';
import { MODERN_VERSION } from '../versions.ts';
import { implementationSchema, serverCapabilitiesSchema } from '../mcp.ts';
import type { Implementation } from '../mcp.ts';

export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo';
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

export const DISCOVER_METHOD = 'server/discover';
export const LISTEN_METHOD = 'subscriptions/listen';
export const LISTEN_ACK = 'notifications/subscriptions/acknowledged';

export const discoverResultSchema = z.looseObject({
  supportedVersions: z.array(z.string()),
  capabilities: serverCapabilitiesSchema.default({}),
  instructions: z.string().optional(),
  serverInfo: implementationSchema.optional(),
  _meta: z.looseObject({ [META_SERVER_INFO]: implementationSchema.optional() }).optional(),
});
export type DiscoverResult = z.infer<typeof discoverResultSchema>;

/** `data` of an UnsupportedProtocolVersionError (-32022). */
export const unsupportedVersionDataSchema = z.looseObject({
  supported: z.array(z.string()),
  requested: z.string().optional(),
});

/** The server's identity from a DiscoverResult, wherever the server put it. */
export function serverInfoOf(r: DiscoverResult): Implementation | undefined {
  return r._meta?.[META_SERVER_INFO] ?? r.serverInfo;
}

/**
 * Params for a modern request: the caller's params plus the `_meta` every
 * 2026-07-28 request carries. Caller `_meta` keys (e.g. progressToken) are kept.
 */
export function modernParams(
  params: Record<string, unknown> | undefined,
  clientInfo: Implementation,
  capabilities: Record<string, unknown> = {},
): Record<string, unknown> {
  const meta = {
    ...(params?._meta as Record<string, unknown> | undefined),
    [META_PROTOCOL_VERSION]: MODERN_VERSION,
    [META_CLIENT_INFO]: clientInfo,
    [META_CLIENT_CAPABILITIES]: capabilities,
  };
  return { ...params, _meta: meta };
}

/** The filter of a `subscriptions/listen` request for the list kinds a server says can change. */
export interface ListenFilter {
  toolsListChanged?: boolean;
  resourcesListChanged?: boolean;
  promptsListChanged?: boolean;
  resourceSubscriptions?: string[];
}
