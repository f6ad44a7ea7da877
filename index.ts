/**
 * Albedo's public embedding API: `import { createAlbedo } from 'albedo'`.
 */
export { createAlbedo, Albedo, defaultHome, type AlbedoOptions, type ConnectOptions } from './api/albedo.ts';
export { Connection, type OpOptions } from './api/connection.ts';
export {
  Sessions, AlbedoSession,
  type Activity, type ModelTool, type ServerStatus, type SessionCallOptions, type SessionEvent, type SessionOptions,
} from './api/sessions.ts';
export { AlbedoError, type AlbedoErrorCode, type Outcome } from './protocol/errors.ts';
export type { ServerConfigInput } from './protocol/config.ts';
export type {
  Catalogue, Tool, Resource, ResourceTemplate, Prompt, CallToolResult, ReadResourceResult, GetPromptResult, Implementation,
} from './protocol/mcp.ts';
export type { ConnectionInfo } from './protocol/services/transport.ts';
export { MODERN_VERSION, LEGACY_ACCEPTED, LEGACY_OFFERED, type Era } from './protocol/versions.ts';
