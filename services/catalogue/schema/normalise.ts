/**
 * Tool input schemas, normalised and bounded for a provider profile. Pure:
 * plain JSON in, plain JSON out, no state between calls, so the catalogue
 * service can run it inline or in a piscina pool. It never throws.
 *
 * The pipeline: plain-JSON copy and `$ref` sanitising (refs.ts) → local `$ref`
 * inlining with ref-parser → the canonical 2020-12 tree with cycles, depth,
 * node budget and property counts cut (canonical.ts) → the root made an object
 * without combinators (root.ts) → shaping for the profile (rich.ts or
 * subset.ts) → the size and strict-mode totals (bounds.ts), shaping again with
 * tighter limits while over them.
 */
import { planNeeded, type ArgPlan } from './args.ts';
import { overBound } from './bounds.ts';
import { canon, type Ctx } from './canonical.ts';
import { BOUNDS, DEFAULT_LIMITS, FIT_STEPS, RULES, isProfile, type Profile, type Rules } from './profiles.ts';
import { inlineRefs } from './refs.ts';
import { shapeRich, type ShapeCtx } from './rich.ts';
import { coerceRoot } from './root.ts';
import { shapeSubset } from './subset.ts';
import { Notes, quote } from './text.ts';

export type { Profile } from './profiles.ts';
export { PROFILES, BOUNDS, isProfile } from './profiles.ts';
export { restoreArguments, type ArgPlan } from './args.ts';

/** Why a schema was refused. */
export type RefusalCode =
  | 'invalid_profile'
  | 'not_object'
  | 'accepts_nothing'
  | 'root_not_object'
  | 'too_many_properties'
  | 'required_unsupported'
  | 'strict_unsupported'
  | 'too_large'
  | 'internal';

/**
 * The answer: a schema the profile accepts, with one note per change
 * (`<code> at <pointer>: <detail>`), and `args` when the model's arguments
 * must be passed through restoreArguments before the server sees them; or a
 * refusal (the caller leaves the tool out, with a warning naming it and the reason).
 */
export type NormaliseResult =
  { ok: true; schema: Record<string, unknown>; notes: string[]; args?: ArgPlan } | { ok: false; code: RefusalCode; reason: string };

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Normalises one tool input schema (untrusted data) for `profile` (default
 * `portable`). Same input, same output. Never throws: a bug surfaces as a
 * refusal with code `internal`.
 */
export async function normalise(schema: unknown, profile: Profile = 'portable'): Promise<NormaliseResult> {
  try {
    return await run(schema, profile);
  } catch (err) {
    return {
      ok: false,
      code: 'internal',
      reason: `the normaliser failed: ${quote(err instanceof Error ? err.message : String(err), 200)}`,
    };
  }
}

/** normalise() over a list (one message per catalogue when run in a pool), in order. */
export async function normaliseAll(schemas: readonly unknown[], profile: Profile = 'portable'): Promise<NormaliseResult[]> {
  const out: NormaliseResult[] = [];
  for (const s of schemas) out.push(await normalise(s, profile));
  return out;
}

async function run(schema: unknown, profile: Profile): Promise<NormaliseResult> {
  if (!isProfile(profile)) return { ok: false, code: 'invalid_profile', reason: `unknown profile ${quote(profile)}` };
  const rules = RULES[profile];
  const notes = new Notes();
  if (schema === false) return { ok: false, code: 'accepts_nothing', reason: 'the schema is `false`: no arguments are valid' };
  const graph = schema === true ? {} : await inlineRefs(schema, notes);
  if (!isObj(graph)) {
    return {
      ok: false,
      code: 'not_object',
      reason: `the schema is ${quote(graph === undefined ? typeof schema : graph, 60)}, not a JSON object`,
    };
  }
  if (schema === true) notes.add('root_coerced', '', '`true` read as an object schema without declared properties');

  let over = '';
  for (const [step, limits] of [DEFAULT_LIMITS, ...FIT_STEPS].entries()) {
    const n = notes.fork();
    const ctx: Ctx = { notes: n, limits, nodes: 0, totalProps: 0 };
    const tree = canon(graph, '', 0, new Set(), ctx);
    if (ctx.refusal) return { ok: false, ...ctx.refusal };
    const root = coerceRoot(tree, n);
    if (!root.ok) return root;
    const sctx: ShapeCtx = { notes: n, rules, limits };
    const shaped = rules.kind === 'rich' ? shapeRich(root.node, '', sctx, true) : shapeSubset(root.node, '', sctx, true);
    if (sctx.refusal) {
      if (step === 0) return { ok: false, ...sctx.refusal };
      break;
    }
    const s = finishRoot(shaped?.s ?? { type: 'object' }, rules, profile, n);
    const why = overBound(s, rules.strict);
    if (!why) {
      const tighter = `depth ${limits.maxDepth}, descriptions ${limits.maxDescription}, enums ${limits.maxEnum}`;
      if (step > 0) n.lead('size_fitted', `shaped again with tighter limits (${tighter}) to fit: ${over}`);
      const result: NormaliseResult = { ok: true, schema: s, notes: n.finish() };
      if (planNeeded(shaped?.plan)) result.args = shaped.plan;
      return result;
    }
    over ||= why;
  }
  return {
    ok: false,
    code: 'too_large',
    reason: `the schema stays over the bounds even trimmed (${over}; bound ${BOUNDS.maxBytes} bytes)`,
  };
}

/** Root rules the shapers do not know about: Bedrock/portable's minimal root keys, Gemini's parameter-less root, `type` first. */
function finishRoot(s: Record<string, unknown>, rules: Rules, profile: Profile, notes: Notes): Record<string, unknown> {
  s.type = 'object';
  if (rules.rootKeys) {
    for (const k of Object.keys(s)) {
      if (rules.rootKeys.has(k)) continue;
      if (k !== 'additionalProperties' || s[k] !== false)
        notes.add('root_keyword_dropped', `/${k}`, `${k} is not allowed at the root in this profile`);
      delete s[k];
    }
  }
  if (profile !== 'gemini' && !isObj(s.properties)) s.properties = {};
  // Gemini: a declaration without parameters omits `parameters`; a root without properties says so.
  if (profile === 'gemini' && isObj(s.properties) && !Object.keys(s.properties).length) delete s.properties;
  if (Array.isArray(s.required) && !s.required.length && !rules.strict) delete s.required;
  const { type, ...rest } = s;
  return { type, ...rest };
}
