/**
 * The bridge between the asynchronous schema normaliser (schema/normalise.ts:
 * ref-parser is async) and the synchronous definitions (definitions.ts): an
 * async pass (`warm`) normalises every schema a set of definitions needs and
 * keeps the answers, keyed by the profile and the schema's JSON text; a
 * synchronous `Normalise` then answers from what was kept. The same schema
 * under the same profile is normalised once, however many generations and
 * sessions advertise it. Bounded (least recently used out); no I/O of its
 * own. The normaliser is either one schema at a time, or a batch (the
 * catalogue service's `catalogue/normalise`): then a pass sends everything it
 * is missing in one call.
 */
import type { AsyncNormalise, Normalise, NormaliseResult } from '../../protocol/catalogue.ts';
import { AlbedoError } from '../../protocol/errors.ts';

/**
 * Normalises many schemas for one profile, one answer per schema, in order
 * (the catalogue service's `catalogue/normalise` behind a kernel call). A
 * rejection means no answer at all (the worker was lost, the deadline
 * passed); a refusal of one schema is an answer (`ok: false`).
 */
export type BatchNormalise = (schemas: unknown[], profile: string) => Promise<NormaliseResult[]>;

/** How many answers are kept (a 5,000-tool catalogue in two profiles fits). */
export const SCHEMA_CACHE_MAX = 20_000;

/** The answer for a schema no pass prepared: the definition is left out, never sent unchecked. */
const NOT_PREPARED: NormaliseResult = {
  ok: false,
  code: 'not_prepared',
  reason: 'the schema was not normalised before the definitions were built',
};

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

/** A batch whose answers do not match its schemas one to one: nothing of it is kept. */
function badBatch(sent: number, got: unknown): AlbedoError {
  const n = Array.isArray(got) ? `${got.length} answers` : typeof got;
  return new AlbedoError('ALBEDO_INVALID_RESPONSE', `the batch normaliser answered ${n} for ${sent} schemas`, { outcome: 'unknown' });
}

export class SchemaCache {
  #normalise: AsyncNormalise | null;
  #batch: BatchNormalise | null;
  #max: number;
  #answers = new Map<string, NormaliseResult>();
  /** Normalisations running now, so two passes that need the same schema share one. */
  #running = new Map<string, Promise<NormaliseResult>>();

  /**
   * `normalise` is the single-schema normaliser (an error it throws is kept
   * as the refusal `internal`), or `{ batch }`: each `warm` then sends the
   * schemas it is missing in one batch call, and a batch that rejects keeps
   * nothing (see warm).
   */
  constructor(normalise: AsyncNormalise | { batch: BatchNormalise }, max = SCHEMA_CACHE_MAX) {
    this.#normalise = typeof normalise === 'function' ? normalise : null;
    this.#batch = typeof normalise === 'function' ? null : normalise.batch;
    this.#max = max;
  }

  /** Whether every one of `schemas` has an answer for `profile` now. */
  has(schemas: readonly unknown[], profile: string): boolean {
    return schemas.every((s) => {
      const k = keyOf(s, profile);
      return k !== null && this.#answers.has(k);
    });
  }

  /**
   * Normalises the schemas that have no answer yet and keeps the answers;
   * a schema another pass is normalising now is waited for, not sent again.
   * Single-schema normaliser: one at a time. Batch normaliser: the missing
   * schemas, each once (equal JSON, equal key), in one call; when that call
   * rejects, nothing is kept for its schemas (a later pass sends them
   * again), and warm rejects with its error, as does every concurrent warm
   * that was waiting for one of them: the caller decides (the composer
   * leaves those tools unprepared, or retries). Schemas JSON cannot spell
   * are skipped (lookup refuses them as `not_prepared`).
   */
  async warm(schemas: readonly unknown[], profile: string): Promise<void> {
    if (this.#batch) return this.#warmBatch(this.#batch, schemas, profile);
    for (const s of schemas) {
      const k = keyOf(s, profile);
      if (k === null || this.#answers.has(k)) continue;
      let run = this.#running.get(k);
      if (!run) {
        run = Promise.resolve()
          .then(() => this.#normalise!(s, profile))
          .catch((err: unknown) => ({
            ok: false as const,
            code: 'internal',
            reason: `the normaliser failed: ${err instanceof Error ? err.message : String(err)}`,
          }))
          .finally(() => this.#running.delete(k!));
        this.#running.set(k, run);
      }
      this.#keep(k, await run);
    }
  }

  async #warmBatch(batch: BatchNormalise, schemas: readonly unknown[], profile: string): Promise<void> {
    const needed = new Map<string, Promise<NormaliseResult>>();
    const send: unknown[] = [];
    const sendKeys: string[] = [];
    const seen = new Set<string>();
    for (const s of schemas) {
      const k = keyOf(s, profile);
      if (k === null || this.#answers.has(k) || seen.has(k)) continue;
      seen.add(k);
      const run = this.#running.get(k);
      if (run) {
        needed.set(k, run);
      } else {
        send.push(s);
        sendKeys.push(k);
      }
    }
    if (send.length) {
      const all = Promise.resolve()
        .then(() => batch(send, profile))
        .then((answers) => {
          if (!Array.isArray(answers) || answers.length !== send.length) throw badBatch(send.length, answers);
          return answers;
        });
      // Settled, the schemas are no longer running: answers are kept at once (even if this pass fails on another's batch);
      // on a rejection nothing is kept, so the next pass sends them again.
      const done = (): void => {
        for (const k of sendKeys) this.#running.delete(k);
      };
      all.then((answers) => {
        done();
        sendKeys.forEach((k, i) => this.#keep(k, answers[i]!));
      }, done);
      sendKeys.forEach((k, i) => {
        const one = all.then((answers) => answers[i]!);
        // A concurrent pass may never await this one (it failed first on another): its rejection is handled here too.
        one.catch(() => {});
        this.#running.set(k, one);
        needed.set(k, one);
      });
    }
    const keys = [...needed.keys()];
    const answers = await Promise.all(needed.values());
    // Kept again in this pass's order: recently used, so a pass's own answers are the last to go.
    keys.forEach((k, i) => this.#keep(k, answers[i]!));
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
  normalise: AsyncNormalise,
  schemas: readonly unknown[],
  profile: string,
  cache = new SchemaCache(normalise),
): Promise<Normalise> {
  await cache.warm(schemas, profile);
  return cache.lookup;
}
