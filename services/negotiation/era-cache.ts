/**
 * The era verdict cache: one LMDB row per server configuration fingerprint,
 * so a second connect skips the probe's guesswork. LMDB is safe to open from
 * several threads and processes at once; values are msgpackr-encoded by lmdb.
 *
 * A legacy verdict is a saving, never a pin (docs/design.md, "Protocol eras": Albedo first sends
 * `server/discover`): it is trusted only while it is fresh. A changed
 * configuration has another fingerprint (so another row); a server that
 * declares another `serverInfo.version` than when it was judged marks its row
 * `reprobe`; a verdict older than LEGACY_VERDICT_MAX_AGE_MS is stale. A stale
 * or marked legacy verdict is not used: that dial probes afresh, and a server
 * that moved to 2026-07-28 is found modern.
 */
import { open, type RootDatabase } from 'lmdb';
import type { Era } from '../../protocol/versions.ts';

export interface EraVerdict {
  era: Era;
  protocolVersion: string;
  /** When the era was last judged by a probe (epoch ms). */
  at: number;
  /** The `serverInfo.version` the server declared then (null: none). */
  serverVersion?: string | null;
  /** Set when a later dial saw another serverInfo.version: the next dial probes. */
  reprobe?: boolean;
}

/** A legacy verdict is probed again after a day, whatever else happened. */
export const LEGACY_VERDICT_MAX_AGE_MS = 24 * 60 * 60 * 1000;

const stores = new Map<string, RootDatabase>();

function db(path: string): RootDatabase {
  let d = stores.get(path);
  if (!d) {
    d = open({ path, name: 'era_verdicts', compression: false });
    stores.set(path, d);
  }
  return d;
}

/** Whether a verdict may shorten a dial: modern ones always (they change nothing on the wire), legacy ones while fresh. */
export function usable(v: EraVerdict, now: number): boolean {
  if (v.era === 'modern') return true;
  return v.reprobe !== true && typeof v.at === 'number' && now - v.at >= 0 && now - v.at < LEGACY_VERDICT_MAX_AGE_MS;
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

  /** The verdict a dial may trust now (`usable`), or null: then it probes. */
  trusted(fingerprint: string, now = Date.now()): EraVerdict | null {
    const v = this.get(fingerprint);
    return v && usable(v, now) ? v : null;
  }

  /**
   * Records a dial's outcome. A probe (`judged`) writes the verdict afresh; a
   * dial that trusted a cached legacy verdict only marks the row `reprobe`
   * when the server's declared version changed, and keeps its age.
   */
  async put(fingerprint: string, verdict: EraVerdict, judged = true): Promise<void> {
    const cur = this.get(fingerprint);
    if (!judged) {
      if (!cur || cur.reprobe || (cur.serverVersion ?? null) === (verdict.serverVersion ?? null)) return;
      await db(this.#path).put(fingerprint, { ...cur, reprobe: true });
      return;
    }
    if (
      cur &&
      cur.era === verdict.era &&
      cur.protocolVersion === verdict.protocolVersion &&
      (cur.serverVersion ?? null) === (verdict.serverVersion ?? null) &&
      !cur.reprobe &&
      // A modern verdict's age does not matter; a legacy one's is renewed by each probe.
      (verdict.era === 'modern' || Math.abs(verdict.at - cur.at) < LEGACY_VERDICT_MAX_AGE_MS / 24)
    )
      return;
    await db(this.#path).put(fingerprint, { ...verdict, serverVersion: verdict.serverVersion ?? null });
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
