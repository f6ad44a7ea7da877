/**
 * How the settings file is spelled: its name in the home, and how its text
 * becomes a document (plain objects) and back. The store reads, validates,
 * merges, journals and writes documents; only the codec knows the format,
 * so a settings service in another format is the same store with another
 * codec (toml-codec.ts, toml-service.ts), not a copy of it.
 */

export interface SettingsCodec {
  /** The file's name in the home. */
  readonly file: string;
  /**
   * The document the text holds (the store checks it is an object and
   * validates it). Bad syntax throws an Error whose message says where
   * (line and column) and never quotes the text: a secret inlined by hand
   * could be in it.
   */
  parse(text: string): unknown;
  /** The text of a document, as written: the file is replaced by it. */
  format(doc: Record<string, unknown>): string;
}

/** JSON.parse's complaint without the excerpt of the file it quotes. */
function jsonProblem(err: unknown): string {
  const msg = (err as Error).message;
  const where = /line (\d+) column (\d+)/.exec(msg);
  if (where) return `not valid JSON (line ${where[1]}, column ${where[2]})`;
  if (/Unexpected end/.test(msg)) return 'not valid JSON (it ends too early)';
  return 'not valid JSON';
}

/** extensions.json: two-space JSON with a final newline, as written. */
export const jsonCodec: SettingsCodec = {
  file: 'extensions.json',
  parse(text) {
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw new Error(jsonProblem(err));
    }
  },
  format: (doc) => `${JSON.stringify(doc, null, 2)}\n`,
};
