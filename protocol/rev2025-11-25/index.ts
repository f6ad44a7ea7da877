/**
 * The legacy era (2024-11-05 … 2025-11-25): the `initialize` handshake.
 * One module for the era, so no `if (era)` branches elsewhere build its messages.
 */
import { z } from 'zod';
import { LEGACY_OFFERED } from '../versions.ts';
import { implementationSchema, serverCapabilitiesSchema } from '../mcp.ts';
import type { Implementation } from '../mcp.ts';

export const initializeResultSchema = z.looseObject({
  protocolVersion: z.string(),
  capabilities: serverCapabilitiesSchema,
  serverInfo: implementationSchema,
  instructions: z.string().optional(),
});
export type InitializeResult = z.infer<typeof initializeResultSchema>;

/** `initialize` params: Albedo offers 2025-11-25 and declares no client capabilities. */
export function initializeParams(clientInfo: Implementation, capabilities: Record<string, unknown> = {}): Record<string, unknown> {
  return { protocolVersion: LEGACY_OFFERED, capabilities, clientInfo };
}

export const INITIALIZED_NOTIFICATION = 'notifications/initialized';

/** Legacy requests carry their params as given; nothing is added per request. */
export function legacyParams(params: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  return params;
}
