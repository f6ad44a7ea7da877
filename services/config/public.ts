/**
 * What the layers above (api/) may use of server configuration: parsing a
 * config and resolving it to what the transport receives (api/resolve.ts).
 * Everything else in this folder is its own (test/architecture/imports).
 */
export { parseServerConfig, resolveServer, resolveOAuth, INHERITED_ENV, type AuthBinding } from './resolve.ts';
