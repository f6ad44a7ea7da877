/**
 * Session records: the LMDB table `mcp_sessions` in `$ALBEDO_HOME/store`,
 * one row per open session, keyed by its owner (an embedder's instance) and
 * id. A composer restarted after a crash restores its owner's sessions from
 * them: the options they were opened with, the generation they showed, the
 * context text kept for the model since the last compaction and the
 * connections they held, so calls keep going to the same servers.
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import { z } from 'zod';
import type { SessionOptions } from '../../protocol/composer.ts';
import type { KeptContext } from '../../protocol/services/composer.ts';
import type { ShownRecord } from './snapshot.ts';

/** The most loaded names a record keeps (a session has at most this many definitions worth loading). */
export const MAX_LOADED = 100_000;

/** Bumped when the row's shape changes; rows of another version are dropped. */
const ROW_VERSION = 1;

export interface SessionRecord {
  owner: string;
  id: string;
  options: SessionOptions;
  generation: number;
  digest: string;
  shown: ShownRecord[];
  /** Per server: the connection id and the fingerprint it was opened under. */
  connections: Array<[string, { id: string; fingerprint: string }]>;
  /** A deferred session's loaded names (the owner's list, which must not shrink across a restart). */
  loaded?: string[];
  /** The context text kept since the last compaction (a record without it, an older one's: the restored generation's). */
  kept?: KeptContext;
  /** Its overlay's names and digest (an HMAC under a key its composer held in memory only); never a command or a value. */
  overlay?: { servers: string[]; digest: string };
  savedAt: number;
}

interface Row extends SessionRecord {
  v: number;
}

/**
 * A row as it must be to be restored. Rows come from disk (another version,
 * a bug, a hand): one that does not parse is dropped, never handed to the
 * composer, whose restart would otherwise fail on it every time. The options
 * are checked again when the session opens.
 */
const rowSchema = z.object({
  v: z.literal(ROW_VERSION),
  owner: z.string(),
  id: z.string().min(1),
  options: z.record(z.string(), z.unknown()),
  generation: z.number().int().min(1),
  digest: z.string(),
  shown: z.array(z.object({ server: z.string(), catalogue: z.string().nullable(), shown: z.string() })),
  connections: z.array(z.tuple([z.string(), z.object({ id: z.string().min(1), fingerprint: z.string() })])),
  loaded: z.array(z.string()).max(MAX_LOADED).optional(),
  kept: z
    .strictObject({
      generation: z.number().int().min(1),
      context: z.string(),
      tokens: z.number().int().min(0),
      servers: z.array(z.tuple([z.string(), z.number().int().min(0)])),
    })
    .optional(),
  overlay: z.strictObject({ servers: z.array(z.string()).max(1_000), digest: z.string().max(200) }).optional(),
  savedAt: z.number(),
});

const roots = new Map<string, RootDatabase>();

const keyOf = (owner: string, id: string): string => `${owner}\n${id}`;

export class SessionRecords {
  #db: Database<Row, string>;

  /** `path` is the LMDB environment (`$ALBEDO_HOME/store`). */
  constructor(path: string) {
    let root = roots.get(path);
    if (!root) {
      root = open({ path, compression: false, maxDbs: 16 });
      roots.set(path, root);
    }
    // lmdb's default encoding (msgpackr, records defined in each value): every key of a row is the composer's own, so
    // msgpackr's renaming of a `__proto__` key never applies; shared structures read faster but write slower, and JSON
    // text would drop the rows an older version wrote (docs/architecture.md, "Packages").
    this.#db = root.openDB<Row, string>({ name: 'mcp_sessions' });
  }

  async put(record: SessionRecord): Promise<void> {
    await this.#db.put(keyOf(record.owner, record.id), { ...record, v: ROW_VERSION });
  }

  async remove(owner: string, id: string): Promise<void> {
    await this.#db.remove(keyOf(owner, id));
  }

  /**
   * The ledger of `owner`: every connection id its composer may hold in the
   * transport (written before a dial is sent), so a composer restarted after
   * a crash closes the ones no restored session took back.
   */
  ledger(owner: string): string[] {
    const row = this.#db.get(`${owner}\n~ledger`) as unknown as { v: number; ids: unknown } | undefined;
    return row?.v === ROW_VERSION && Array.isArray(row.ids) ? row.ids.filter((x): x is string => typeof x === 'string') : [];
  }

  /** Writes the ledger; an empty one is removed (an instance that closed everything leaves no row). */
  async setLedger(owner: string, ids: string[]): Promise<void> {
    const key = `${owner}\n~ledger`;
    if (ids.length) await this.#db.put(key, { v: ROW_VERSION, ids } as unknown as Row);
    else await this.#db.remove(key);
  }

  /**
   * Removes the rows (records and ledger) of every `pid:<pid>:…` owner whose
   * process is gone: an embedder killed before it closed its sessions. A
   * stable owner (the daemon's) is never pruned: its next start restores them.
   */
  async pruneDead(alive: (pid: number) => boolean): Promise<number> {
    const dead: string[] = [];
    for (const key of this.#db.getKeys()) {
      const m = /^pid:(\d+):/.exec(String(key));
      if (m && !alive(Number(m[1]))) dead.push(String(key));
    }
    await Promise.all(dead.map((k) => this.#db.remove(k)));
    return dead.length;
  }

  /** The records of `owner`; a row that does not parse is removed (the ledger row is not a record). */
  list(owner: string): SessionRecord[] {
    const out: SessionRecord[] = [];
    const bad: string[] = [];
    for (const { key, value } of this.#db.getRange({ start: `${owner}\n`, end: `${owner}\u000b` })) {
      if (String(key) === `${owner}\n~ledger`) continue;
      const parsed = rowSchema.safeParse(value);
      if (!parsed.success || parsed.data.owner !== owner || String(key) !== keyOf(owner, parsed.data.id)) {
        bad.push(String(key));
        continue;
      }
      const { v: _v, ...record } = parsed.data;
      out.push(record as SessionRecord);
    }
    for (const key of bad) void this.#db.remove(key).catch(() => {});
    return out;
  }
}

/** Closes every environment this module opened (a worker's stop). */
export async function closeSessionRecords(): Promise<void> {
  const all = [...roots.values()];
  roots.clear();
  await Promise.all(all.map((r) => r.close()));
}
