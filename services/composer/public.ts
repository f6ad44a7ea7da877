/**
 * What the layers above (api/) may use of the composer besides its messages:
 * the topics its workers subscribe to (which the embedding API forwards), and
 * the checks and plan of a direct call, made on the owner's thread exactly as
 * the composer makes them (api/session.ts). Everything else in this folder is
 * the service's own (test/architecture/imports).
 */
export { COMPOSER_TOPICS } from './transport-port.ts';
export { checkCall, checkRequest, heldBy, planCall } from './plan-call.ts';
