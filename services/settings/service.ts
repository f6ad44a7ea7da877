/**
 * The settings service over $ALBEDO_HOME/extensions.json (definition.ts
 * has the service, store.ts the logic; toml-service.ts is the same service
 * over extensions.toml). Started with `options: { home, at?, env?, watch?,
 * debounceMs? }`; one instance, since it is the one writer of the files in
 * this process.
 */
import { defineService } from '../../kernel/service.ts';
import { jsonCodec } from './codec.ts';
import { settingsDefinition } from './definition.ts';

export type { SettingsServiceOptions } from './definition.ts';

export default defineService('settings', settingsDefinition(jsonCodec));
