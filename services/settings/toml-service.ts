/**
 * A settings service an embedder can swap in: the built-in one (the same
 * store, the same messages of protocol/services/settings.ts, the same
 * events, creds.json beside it) over $ALBEDO_HOME/extensions.toml instead
 * of extensions.json — the same document spelled in TOML (toml-codec.ts):
 *
 *   [mcp.servers.docs]
 *   command = "docs-mcp"
 *   env = { DOCS_TOKEN = { env = "DOCS_TOKEN" } }
 *
 * Use it as any replacement (docs/services.md):
 *
 *   createAlbedo({ services: { settings: { module: new URL('./services/settings/toml-service.ts', import.meta.url) } } })
 *
 * It takes the built-in service's options. extensions.json is not read.
 */
import { defineService } from '../../kernel/service.ts';
import { settingsDefinition } from './definition.ts';
import { tomlCodec } from './toml-codec.ts';

export default defineService('settings', settingsDefinition(tomlCodec));
