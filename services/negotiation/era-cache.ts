/**
 * The era verdict cache: one LMDB row per server configuration fingerprint,
 * so a second connect skips the probe's guesswork. LMDB is safe to open from
 * several threads and processes at once; values are msgpackr-encoded by lmdb.
 */
import { open, type RootDatabase } from 'lmdb';
import type { Era } from '../../protocol/versions.ts';

export interface EraVerdict {
  era: Era;
  protocolVersion: string;
  at: number;
}

const stores = new Map<string, RootDatabase>();

function db(path: string): RootDatabase {
  let d = stores.get(path);
  if (!d) {
    d = open({ path, name: 'era_verdicts', compression: false });
    stores.set(path, d);
  }
  return d;
}

export class EraCache {
  #path: string;
  constructor(path: string) {
    this.#path = path;
  }

  get(fingerprint: string): EraVerdict | null {
    const v = db(this.#path).get(fingerprint) as EraVerdict | undefined;
    return v && (v.era === 'modern' || v.era === 'legacy') && typeof v.protocolVersion === 'string' ? v : null;
  }

  async put(fingerprint: string, verdict: EraVerdict): Promise<void> {
    const cur = this.get(fingerprint);
    if (cur && cur.era === verdict.era && cur.protocolVersion === verdict.protocolVersion) return;
    await db(this.#path).put(fingerprint, verdict);
  }

  async forget(fingerprint: string): Promise<void> {
    await db(this.#path).remove(fingerprint);
  }
}

export async function closeEraCaches(): Promise<void> {
  const all = [...stores.values()];
  stores.clear();
  await Promise.all(all.map((d) => d.close()));
}
