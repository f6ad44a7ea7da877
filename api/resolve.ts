/**
 * Config resolution for the embedding API: the logic lives with the
 * services (services/config/resolve.ts), which the settings service shares;
 * this re-exports it for `connect()` and the CLI.
 */
export { parseServerConfig, resolveServer, resolveOAuth, INHERITED_ENV, type AuthBinding } from '../services/config/public.ts';
