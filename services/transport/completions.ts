/**
 * `completion/complete`: the caller's request checked before it is sent (a
 * malformed one is ALBEDO_INVALID_ARGUMENT, not run), and the server's answer
 * checked before it is handed back: `completion.values` an array of at most
 * 100 strings (the spec's limit), `total` a non-negative integer, `hasMore` a
 * boolean. Only those fields go back.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import type { ClientOp, CompletionResult } from '../../protocol/services/transport.ts';

/** The most values one answer may carry (the spec's limit). */
export const MAX_COMPLETION_VALUES = 100;

type Complete = Extract<ClientOp, { method: 'completion/complete' }>;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const bad = (why: string): AlbedoError => new AlbedoError('ALBEDO_INVALID_ARGUMENT', `completion/complete: ${why}`, { outcome: 'not_run' });

/** An object of string values, copied key by key (a `__proto__` key stays a plain key). */
function strings(v: unknown, what: string): Record<string, string> {
  if (!isRecord(v)) throw bad(`${what} must be an object of strings`);
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== 'string') throw bad(`${what} values must be strings`);
    Object.defineProperty(out, k, { value: x, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** The request's params, checked; throws ALBEDO_INVALID_ARGUMENT (not run). */
export function completionParams(op: Complete): Record<string, unknown> {
  const ref = op.ref as unknown;
  if (!isRecord(ref)) throw bad('ref must be { type: "ref/prompt", name } or { type: "ref/resource", uri }');
  let r: Record<string, unknown>;
  if (ref.type === 'ref/prompt' && typeof ref.name === 'string' && ref.name) r = { type: 'ref/prompt', name: ref.name };
  else if (ref.type === 'ref/resource' && typeof ref.uri === 'string' && ref.uri) r = { type: 'ref/resource', uri: ref.uri };
  else throw bad('ref must be { type: "ref/prompt", name } or { type: "ref/resource", uri }');
  const a = op.argument as unknown;
  if (!isRecord(a) || typeof a.name !== 'string' || !a.name || typeof a.value !== 'string') {
    throw bad('argument must be { name, value }, both strings');
  }
  const params: Record<string, unknown> = { ref: r, argument: { name: a.name, value: a.value } };
  if (op.context !== undefined) {
    if (!isRecord(op.context)) throw bad('context must be an object');
    params.context = op.context.arguments === undefined ? {} : { arguments: strings(op.context.arguments, 'context.arguments') };
  }
  return params;
}

const malformed = (why: string): AlbedoError =>
  new AlbedoError('ALBEDO_INVALID_RESPONSE', `completion/complete returned a malformed result: ${why}`, { outcome: 'unknown' });

/** The server's answer, checked (ALBEDO_INVALID_RESPONSE otherwise). */
export function checkCompletion(raw: Record<string, unknown>): CompletionResult {
  const c = raw.completion;
  if (!isRecord(c) || !Array.isArray(c.values)) throw malformed('completion.values must be an array');
  if (c.values.length > MAX_COMPLETION_VALUES) throw malformed(`more than ${MAX_COMPLETION_VALUES} values`);
  if (!c.values.every((v) => typeof v === 'string')) throw malformed('completion.values must be strings');
  if (c.total !== undefined && !(typeof c.total === 'number' && Number.isInteger(c.total) && c.total >= 0)) {
    throw malformed('completion.total must be a non-negative integer');
  }
  if (c.hasMore !== undefined && typeof c.hasMore !== 'boolean') throw malformed('completion.hasMore must be a boolean');
  const completion: CompletionResult['completion'] = { values: [...(c.values as string[])] };
  if (c.total !== undefined) completion.total = c.total as number;
  if (c.hasMore !== undefined) completion.hasMore = c.hasMore;
  return { completion };
}
