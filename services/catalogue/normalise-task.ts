/**
 * The function a piscina pool thread runs (normalise-pool.ts names this file
 * as the pool's `filename`; Node's type stripping loads it as it is): one
 * chunk of a `catalogue/normalise` batch through the schema normaliser, in
 * order. It also says which OS thread ran it, so the catalogue service can
 * show (and its tests check) that no pool thread outlives it.
 */
import { readlinkSync } from 'node:fs';
import { normaliseAll, type NormaliseResult, type Profile } from './schema/normalise.ts';

export interface NormaliseTask {
  schemas: unknown[];
  profile: Profile;
}

export interface NormaliseTaskResult {
  results: NormaliseResult[];
  /** The Linux thread id that ran the chunk (`/proc/thread-self`), or null elsewhere. */
  tid: number | null;
}

/** The calling thread's Linux thread id (`/proc/thread-self`), or null where there is none. */
export function linuxThreadId(): number | null {
  try {
    const m = /\/task\/(\d+)$/.exec(readlinkSync('/proc/thread-self'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

const TID = linuxThreadId();

/** Normalises one chunk; never throws for bad schemas (the normaliser answers with refusals). */
export default async function normaliseTask(task: NormaliseTask): Promise<NormaliseTaskResult> {
  return { results: await normaliseAll(task.schemas, task.profile), tid: TID };
}
