/**
 * The normaliser's pool task as it would be with msgpackr instead of
 * structured clone, for bench/encoding.ts only: the chunk arrives as one
 * msgpackr buffer (transferred, not copied), and the answers go back the same
 * way. Everything else is services/catalogue/normalise-task.ts's work.
 */
import { Packr } from 'msgpackr';
import { Piscina } from 'piscina';
import { normaliseAll, type Profile } from '../services/catalogue/schema/normalise.ts';

export interface PackedTask {
  packed: Uint8Array;
  profile: Profile;
}

const packr = new Packr();

export default async function normalisePacked(task: PackedTask): Promise<Uint8Array> {
  const results = await normaliseAll(packr.unpack(task.packed) as unknown[], task.profile);
  // pack() answers a view of the Packr's own buffer, reused by the next pack: a copy of its own is what can be transferred.
  const out = new Uint8Array(packr.pack(results));
  return Piscina.move(out) as Uint8Array;
}
