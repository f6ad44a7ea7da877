/**
 * What the layers above (api/) may use of OAuth besides the oauth service's
 * messages: the credentials store of a home, and a server's sign-in status
 * and sign-out, read and done on the embedder's thread (api/albedo.ts).
 * Loaded only on the first such call (by `import()`): a stdio-only use never
 * loads OAuth (test/api/startup-lazy). Everything else in this folder is the
 * service's own (test/architecture/imports).
 */
export { credsStore, FileCredsStore } from './store.ts';
export { statusOf, signOut } from './sign-in.ts';
export type { AuthStatus } from '../../protocol/oauth.ts';
