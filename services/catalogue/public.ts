/**
 * What the layers above (api/) may use of the catalogue besides its messages:
 * the token estimate of definitions, the schema normaliser and the tool
 * search, which the embedding API runs on its own thread for a deferred
 * session's search (api/deferred.ts) and its results' budgets (api/results.ts).
 * Everything else in this folder is the service's own (test/architecture/imports).
 */
export { CHARS_PER_TOKEN, definitionsTokens } from './tokens.ts';
export { normalise, type Profile } from './schema/normalise.ts';
export { ToolSearch, type SearchHit } from './search.ts';
