/**
 * The bridge between the asynchronous schema normaliser (schema/normalise.ts:
 * ref-parser is async) and the synchronous definitions (definitions.ts): an
 * async pass (`warm`) normalises every schema a set of definitions needs and
 * keeps the answers, keyed by the profile and the schema's JSON text; a
 * synchronous `Normalise` then answers from what was kept. The same schema
 * under the same profile is normalised once, however many generations and
 * sessions advertise it. Bounded (least recently used out); no I/O.
 */
import type { AsyncNormalise, Normalise, NormaliseResult } from '../../protocol/catalogue.ts';

/** How many answers are kept (a 5,000-tool catalogue in two profiles fits). */
export const SCHEMA_CACHE_MAX = 20_000;

/** The answer for a schema no pass prepared: the definition is left out, never sent unchecked. */
const NOT_PREPARED: NormaliseResult = { ok: false, code: 'not_prepared', reason: 'the schema was not normalised before the definitions were built' };

/** The cache key, or null for a value JSON cannot spell (it then has no stable identity and is normalised per pass). */
function keyOf(schema: unknown, profile: string): string | null {
  try {
    const json = JSON.stringify(schema);
    return json === undefined ? null : `${profile}\n${json}`;
  } catch {
    return null;
  }
}

function deepFreeze(value: unknown): void {
  const stack = [value];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null || Object.isFrozen(v)) continue;
    Object.freeze(v);
    for (const x of Object.values(v)) stack.push(x);
  }
}

export class SchemaCache {
  #normalise: AsyncNormalise;
  #max: number;
  #answers = new Map<string, NormaliseResult>();
  /** Normalisations running now, so two passes that need the same schema share one. */
  #running = new Map<string, Promise<NormaliseResult>>();

  constructor(normalise: AsyncNormalise, max = SCHEMA_CACHE_MAX) {
    this.#normalise = normalise;
    this.#max = max;
  }

  /** Whether every one of `schemas` has an answer for `profile` now. */
  has(schemas: readonly unknown[], profile: string): boolean {
    return schemas.every((s) => {
      const k = keyOf(s, profile);
      return k !== null && this.#answers.has(k);
    });
  }

  /** Normalises the schemas that have no answer yet, one at a time, and keeps the answers. */
  async warm(schemas: readonly unknown[], profile: string): Promise<void> {
    for (const s of schemas) {
      const k = keyOf(s, profile);
      if (k === null || this.#answers.has(k)) continue;
      let run = this.#running.get(k);
      if (!run) {
        run = Promise.resolve()
          .then(() => this.#normalise(s, profile))
          .catch((err: unknown) => ({ ok: false as const, code: 'internal', reason: `the normaliser failed: ${err instanceof Error ? err.message : String(err)}` }))
          .finally(() => this.#running.delete(k!));
        this.#running.set(k, run);
      }
      this.#keep(k, await run);
    }
  }

  #keep(key: string, answer: NormaliseResult): void {
    // Shared by every session that advertises the schema: frozen, so no holder can change it for the others.
    deepFreeze(answer);
    this.#answers.delete(key);
    this.#answers.set(key, answer);
    while (this.#answers.size > this.#max) this.#answers.delete(this.#answers.keys().next().value!);
  }

  /** The synchronous normaliser over what was kept: a schema no pass prepared is refused (`not_prepared`). */
  readonly lookup: Normalise = (schema, profile) => {
    const k = keyOf(schema, profile);
    const answer = k === null ? undefined : this.#answers.get(k);
    if (!answer) return NOT_PREPARED;
    // Recently used: moved to the end, so a pass's own answers are the last to go.
    this.#answers.delete(k!);
    this.#answers.set(k!, answer);
    return answer;
  };
}

/**
 * The async pass and the synchronous normaliser in one: normalises `schemas`
 * for `profile` and returns a `Normalise` that answers for them (and for
 * anything else the cache holds). With no cache given, a private one.
 */
export async function prepareNormaliser(
  normalise: AsyncNormalise, schemas: readonly unknown[], profile: string, cache = new SchemaCache(normalise),
): Promise<Normalise> {
  await cache.warm(schemas, profile);
  return cache.lookup;
}
