/**
 * Input an upstream server needs during a 2026-07-28 host's request, relayed
 * as that revision's multi-round-trip: the host cannot be sent a request of
 * its own (that revision has none), so the gateway answers the host's request
 * with `input_required` — the questions the upstream asked meanwhile, under
 * keys of the gateway's own, and a `requestState` naming this relay — while
 * the upstream call waits. The host sends the request again with its
 * `inputResponses` and that state; the waiting questions are answered and the
 * upstream call goes on, to its result or to more questions (another round).
 *
 * The state is a random 128-bit name, never the upstream's: a state that names
 * no open relay (tampered, expired, another gateway's) is refused, and a
 * relay not taken up again within RELAY_TTL_MS is given up (its upstream call
 * cancelled). A question the host leaves unanswered is asked again.
 */
import { randomBytes } from 'node:crypto';
import { AlbedoError } from '../../protocol/errors.ts';
import type { Json, OpContext } from './backend.ts';

/** How long a relay waits for the host's next round. */
const RELAY_TTL_MS = 10 * 60_000;
/** Open relays per gateway; past this the oldest is given up. */
const MAX_RELAYS = 256;

interface Question {
  method: string;
  params: Json;
  resolve(answer: Json): void;
  reject(err: unknown): void;
}

export type Step = { done: true; result: Json } | { done: false; inputRequests: Record<string, Json>; missing?: string[] };

const newState = (): string => randomBytes(16).toString('base64url');

export class Relay {
  /** The state the host is given for its next round: a new one each round, so an old round's cannot be replayed. */
  state = newState();
  #questions = new Map<string, Question>();
  #n = 0;
  #result: Promise<Json>;
  #wake: (() => void) | undefined;
  #abort = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  /** The methods of questions the host did not declare a capability for. */
  readonly missing = new Set<string>();
  #onEnd: (r: Relay) => void;
  #onRound: (r: Relay) => void;

  constructor(
    run: (ctx: OpContext) => Promise<Json>,
    capabilities: Json,
    declared: (method: string) => boolean,
    hooks: { round(r: Relay): void; end(r: Relay): void },
    preset: Record<string, unknown> = {},
  ) {
    this.#onEnd = hooks.end;
    this.#onRound = hooks.round;
    const ctx: OpContext = {
      signal: this.#abort.signal,
      capabilities,
      progress: (p) => this.#out.progress?.(p),
      log: (m) => this.#out.log?.(m),
      input: (method, params, signal, asked) => {
        // A question the host cannot be asked (it did not declare the capability in this request): the host's request
        // fails with the spec's -32021 naming what is missing, and the upstream call is given up.
        if (!declared(method)) {
          this.missing.add(method);
          this.#wake?.();
          return Promise.reject(new AlbedoError('ALBEDO_INPUT_REQUIRED', `the host did not declare ${method}`, { outcome: 'not_run' }));
        }
        // Answers the host sent ahead, with its first request, under the upstream's own names: used once each.
        const given = asked !== undefined && Object.hasOwn(preset, asked) ? preset[asked] : undefined;
        if (given && typeof given === 'object' && !Array.isArray(given)) {
          delete preset[asked!];
          return Promise.resolve(given as Json);
        }
        return new Promise<Json>((resolve, reject) => {
          // The upstream's own name for the question when it has one (a host may expect it), unless taken.
          const key = asked !== undefined && !this.#questions.has(asked) ? asked : `q${++this.#n}`;
          this.#questions.set(key, { method, params, resolve, reject });
          signal.addEventListener('abort', () => {
            this.#questions.delete(key);
            reject(signal.reason);
          });
          this.#wake?.();
        });
      },
    };
    this.#result = run(ctx);
    this.#result.catch(() => {});
  }

  /** The host's answers of this round, by key: each resolves its question. */
  answer(responses: Record<string, unknown>): void {
    for (const [key, q] of this.#questions) {
      const a = Object.hasOwn(responses, key) ? responses[key] : undefined;
      if (!a || typeof a !== 'object' || Array.isArray(a)) continue;
      this.#questions.delete(key);
      q.resolve(a as Json);
    }
  }

  /** Where the upstream's progress and log messages go: the host request of the round now waiting. */
  #out: Pick<OpContext, 'progress' | 'log'> = {};

  /** The upstream call's result, or the questions it is waiting on (collected for one turn, as a round asks them together). */
  async next(signal: AbortSignal, out: Pick<OpContext, 'progress' | 'log'> = {}): Promise<Step> {
    this.#out = out;
    if (this.#timer) clearTimeout(this.#timer);
    const asked = new Promise<void>((resolve) => {
      if (this.#questions.size || this.missing.size) return resolve();
      this.#wake = () => setImmediate(resolve);
    });
    // The host gave up on this round (while it waits, not after: a finished request's signal may abort too):
    // the upstream call is cancelled with it.
    let onAbort: (() => void) | undefined;
    const stop = new Promise<never>((_, reject) => {
      onAbort = () => {
        reject(signal.reason);
        this.cancel();
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    stop.catch(() => {});
    try {
      const first = await Promise.race([this.#result.then((result) => ({ result })), asked.then(() => null), stop]);
      if (first) {
        this.end();
        return { done: true, result: first.result };
      }
    } catch (err) {
      this.end();
      throw err;
    } finally {
      this.#out = {};
      this.#wake = undefined;
      signal.removeEventListener('abort', onAbort!);
    }
    if (this.missing.size) {
      const methods = [...this.missing];
      this.cancel();
      return { done: false, inputRequests: {}, missing: methods };
    }
    this.state = newState();
    this.#onRound(this);
    this.#timer = setTimeout(() => this.cancel(), RELAY_TTL_MS);
    this.#timer.unref();
    const inputRequests: Record<string, Json> = {};
    for (const [key, q] of this.#questions) inputRequests[key] = { method: q.method, params: q.params };
    return { done: false, inputRequests };
  }

  /** Gives the relay up: its questions fail and the upstream call is cancelled. */
  cancel(): void {
    const why = new AlbedoError('ALBEDO_TIMEOUT', 'the host did not come back with its answers', { outcome: 'unknown' });
    for (const q of this.#questions.values()) q.reject(why);
    this.#questions.clear();
    this.#abort.abort(why);
    this.end();
  }

  end(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#onEnd(this);
  }
}

/** A gateway's open relays, by their state. */
export class Relays {
  #open = new Map<string, Relay>();

  #by = new Map<Relay, string>();

  /** `preset`: the inputResponses a host sent with its first request (answers it gave before being asked). */
  start(
    run: (ctx: OpContext) => Promise<Json>,
    capabilities: Json,
    declared: (method: string) => boolean,
    preset?: Record<string, unknown>,
  ): Relay {
    const relay: Relay = new Relay(
      run,
      capabilities,
      declared,
      {
        // Each round's state names the relay; the last round's no longer does.
        round: (r) => {
          const old = this.#by.get(r);
          if (old !== undefined) this.#open.delete(old);
          this.#open.set(r.state, r);
          this.#by.set(r, r.state);
          if (this.#open.size > MAX_RELAYS) this.#open.values().next().value!.cancel();
        },
        end: (r) => {
          const old = this.#by.get(r);
          if (old !== undefined) this.#open.delete(old);
          this.#by.delete(r);
        },
      },
      { ...preset },
    );
    return relay;
  }

  /** The relay a host's `requestState` names, taken (a state is good for one round), or undefined (tampered, expired, used). */
  take(state: unknown): Relay | undefined {
    if (typeof state !== 'string') return undefined;
    const r = this.#open.get(state);
    if (r) this.#open.delete(state);
    return r;
  }

  close(): void {
    for (const r of [...this.#open.values()]) r.cancel();
  }
}
