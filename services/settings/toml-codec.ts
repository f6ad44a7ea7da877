/**
 * extensions.toml: the same document as extensions.json (codec.ts), spelled
 * in TOML (smol-toml). A server is a table (`[mcp.servers.docs]`), a named
 * secret an inline table (`TOKEN = { env = "DOCS_TOKEN" }`). TOML has no
 * null, and a document never holds one: a merge patch's null removes a key.
 * A save writes the document anew: comments in the file are not kept.
 */
import { parse, stringify, TomlError } from 'smol-toml';
import type { SettingsCodec } from './codec.ts';

export const tomlCodec: SettingsCodec = {
  file: 'extensions.toml',
  parse(text) {
    try {
      // A key that would reach a prototype is refused by the document's validation, by name, as in JSON.
      return parse(text, { unsafeKeyBehaviour: 'keep' });
    } catch (err) {
      // TomlError's message quotes the line at fault: only where it is is said.
      if (err instanceof TomlError) throw new Error(`not valid TOML (line ${err.line}, column ${err.column})`);
      throw new Error('not valid TOML');
    }
  },
  format(doc) {
    const text = stringify(doc);
    return text.endsWith('\n') || text === '' ? text : `${text}\n`;
  },
};
