/**
 * Saved catalogues (docs/design.md, "Saved catalogues"): the LMDB table
 * `mcp_catalogues` in `$ALBEDO_HOME/store`, one row per server name, holding
 * the fingerprint of the configuration and credentials it was discovered
 * under. A row is used only for the current fingerprint: a changed config
 * or secret means the server is dialled during preparation again. LMDB is
 * safe from several threads and processes at once. Values are JSON text, not
 * lmdb's default msgpackr: msgpackr decodes a key `__proto__` as `__proto_`
 * (its guard against prototype pollution), and a schema may name a property
 * `__proto__`; JSON.parse keeps it an own key. JSON is also the cheaper here
 * (docs/architecture.md, "Packages": bench `--only lmdb`).
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import type { SavedCatalogue } from '../../protocol/catalogue.ts';
import { savedCatalogueSchema } from '../../protocol/services/catalogue.ts';

export type { SavedCatalogue } from '../../protocol/catalogue.ts';

/**
 * Bumped when the row's shape changes; rows of another version are ignored (dialled afresh). 2: JSON text (a row of 1, msgpackr,
 * does not parse as JSON, so it is ignored too).
 */
const ROW_VERSION = 2;

interface Row extends SavedCatalogue {
  v: number;
}

const roots = new Map<string, RootDatabase>();

function table(path: string): Database<string, string> {
  let root = roots.get(path);
  if (!root) {
    root = open({ path, compression: false, maxDbs: 16 });
    roots.set(path, root);
  }
  return root.openDB<string, string>({ name: 'mcp_catalogues', compression: true, encoding: 'string' });
}

/** A row as stored, or undefined when it is missing, is not JSON text (another encoding), or is not of this version's shape. */
function checked(text: unknown): SavedCatalogue | undefined {
  let r: Row | undefined;
  try {
    r = typeof text === 'string' ? (JSON.parse(text) as Row) : undefined;
  } catch {
    return undefined;
  }
  if (!r || typeof r !== 'object' || r.v !== ROW_VERSION) return undefined;
  const { v: _v, ...saved } = r;
  // Checked as `catalogue/put` checked it before writing: a row damaged on disk can still parse, and its items are
  // what every session over the server builds its definitions from (a null tool threw from each session's open).
  return savedCatalogueSchema.safeParse(saved).success ? saved : undefined;
}

export class CatalogueStore {
  #db: Database<string, string>;

  /** `path` is the LMDB environment (`$ALBEDO_HOME/store`). */
  constructor(path: string) {
    this.#db = table(path);
  }

  /** The saved row of `server`, whatever its fingerprint. */
  get(server: string): SavedCatalogue | undefined {
    return checked(this.#db.get(server));
  }

  /** The saved row of `server` when it was discovered under `fingerprint`; else undefined. */
  current(server: string, fingerprint: string): SavedCatalogue | undefined {
    const row = this.get(server);
    return row && row.fingerprint === fingerprint ? row : undefined;
  }

  /**
   * Saves a discovery. Resolves true when the row changed, false when the
   * same catalogue was already saved under the same fingerprint (nothing is
   * written then: a background discovery that matches changes nothing).
   */
  async put(row: SavedCatalogue): Promise<boolean> {
    const cur = this.get(row.server);
    if (cur && cur.fingerprint === row.fingerprint && sameDiscovery(cur, row)) return false;
    await this.#db.put(row.server, JSON.stringify({ ...row, v: ROW_VERSION }));
    return true;
  }

  async remove(server: string): Promise<void> {
    await this.#db.remove(server);
  }

  /** Every saved server name. */
  servers(): string[] {
    return [...this.#db.getKeys()] as string[];
  }
}

/** Two discoveries of one server are the same when everything the model could see is. */
export function sameDiscovery(a: SavedCatalogue, b: SavedCatalogue): boolean {
  return (
    a.era === b.era &&
    a.protocolVersion === b.protocolVersion &&
    a.instructions === b.instructions &&
    JSON.stringify(a.serverInfo) === JSON.stringify(b.serverInfo) &&
    JSON.stringify(a.capabilities) === JSON.stringify(b.capabilities) &&
    JSON.stringify(a.catalogue) === JSON.stringify(b.catalogue)
  );
}

/** Closes every environment this module opened (a worker's stop). */
export async function closeCatalogueStores(): Promise<void> {
  const all = [...roots.values()];
  roots.clear();
  await Promise.all(all.map((r) => r.close()));
}
