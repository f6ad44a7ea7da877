/**
 * Albedo's public embedding API: `import { createAlbedo } from 'albedo'`.
 *
 * The API's modules are imported dynamically, after the compile caches are
 * on (kernel/compile-cache.ts): a static import would load and type-strip
 * them all before this module's first line runs.
 */
import { enableCompileCaches } from './kernel/compile-cache.ts';

enableCompileCaches();
const [albedo, connection, sessions, errors, versions] = await Promise.all([
  import('./api/albedo.ts'),
  import('./api/connection.ts'),
  import('./api/sessions.ts'),
  import('./protocol/errors.ts'),
  import('./protocol/versions.ts'),
]);

export const { createAlbedo, Albedo, defaultHome } = albedo;
export type Albedo = import('./api/albedo.ts').Albedo;
export type { AlbedoOptions, AlbedoWithFaults, ConnectOptions, Faults, ServiceOverride, ServiceOverrides } from './api/albedo.ts';
export const { Connection } = connection;
export type Connection = import('./api/connection.ts').Connection;
export type { OpOptions } from './api/connection.ts';
export const { Sessions, AlbedoSession } = sessions;
export type Sessions = import('./api/sessions.ts').Sessions;
export type AlbedoSession = import('./api/sessions.ts').AlbedoSession;
export type { Activity, ModelTool, ServerStatus, SessionCallOptions, SessionEvent, SessionOptions } from './api/sessions.ts';
export const { AlbedoError } = errors;
export type AlbedoError = import('./protocol/errors.ts').AlbedoError;
export type { AlbedoErrorCode, Outcome } from './protocol/errors.ts';
export type { ServerConfigInput } from './protocol/config.ts';
export type {
  Catalogue,
  Tool,
  Resource,
  ResourceTemplate,
  Prompt,
  CallToolResult,
  ReadResourceResult,
  GetPromptResult,
  Implementation,
} from './protocol/mcp.ts';
export type { ConnectionInfo } from './protocol/services/transport.ts';
export const { MODERN_VERSION, LEGACY_ACCEPTED, LEGACY_OFFERED } = versions;
export type { Era } from './protocol/versions.ts';
