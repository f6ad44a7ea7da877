/**
 * What the layers above may use of the settings besides the settings
 * service's messages: the warnings about a working directory others could
 * write (`albedo probe`, bin/commands/probe.ts). Everything else in this
 * folder is the service's own (test/architecture/imports).
 */
export { exposureWarnings } from './working-dir.ts';
