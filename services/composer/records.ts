/**
 * Session records: the LMDB table `mcp_sessions` in `$ALBEDO_HOME/store`,
 * one row per open session, keyed by its owner (an embedder's instance) and
 * id. A composer restarted after a crash restores its owner's sessions from
 * them: the options they were opened with, the generation they showed and
 * the connections they held, so calls keep going to the same servers.
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import type { SessionOptions } from '../../protocol/composer.ts';
import type { ShownRecord } from './snapshot.ts';

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
  savedAt: number;
}

interface Row extends SessionRecord {
  v: number;
}

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

  async setLedger(owner: string, ids: string[]): Promise<void> {
    await this.#db.put(`${owner}\n~ledger`, { v: ROW_VERSION, ids } as unknown as Row);
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

  /** The records of `owner`; rows of another shape are skipped. */
  list(owner: string): SessionRecord[] {
    const out: SessionRecord[] = [];
    for (const { value } of this.#db.getRange({ start: `${owner}\n`, end: `${owner}\u000b` })) {
      if (!value || value.v !== ROW_VERSION || value.owner !== owner || !Array.isArray(value.connections)) continue; // the ledger too
      const { v: _v, ...record } = value;
      out.push(record);
    }
    return out;
  }
}

/** Closes every environment this module opened (a worker's stop). */
export async function closeSessionRecords(): Promise<void> {
  const all = [...roots.values()];
  roots.clear();
  await Promise.all(all.map((r) => r.close()));
}
