/**
 * Arguments back from the model's form to the server's. A profile may rename
 * a property the provider rejects (`filter[id]` → `filter_id_` for Anthropic)
 * and, in OpenAI strict mode, make an optional property required but nullable;
 * a free-form object it cannot describe is said as JSON text (`json`). The
 * normaliser then returns an ArgPlan, and the caller passes the model's
 * arguments through `restoreArguments` before calling the server. Plain JSON
 * in and out, so the plan can be stored with the catalogue.
 */

import { AlbedoError } from '../../../protocol/errors.ts';
import type { ArgPlan, JsonKind, PropPlan } from '../../../protocol/catalogue.ts';
import { seg } from './text.ts';

export type { ArgPlan, JsonKind, PropPlan } from '../../../protocol/catalogue.ts';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether a plan changes anything. */
export function planNeeded(plan: ArgPlan | undefined): plan is ArgPlan {
  return !!plan && (!!plan.items || !!plan.json || (!!plan.props && Object.keys(plan.props).length > 0));
}

/** Merges two plans of the same value (variants of a union); the first wins on a conflict. */
export function mergePlans(a: ArgPlan | undefined, b: ArgPlan | undefined): ArgPlan | undefined {
  if (!planNeeded(a)) return planNeeded(b) ? b : undefined;
  if (!planNeeded(b)) return a;
  const props: Record<string, PropPlan> = {};
  const set = (k: string, p: PropPlan): void => {
    Object.defineProperty(props, k, { value: p, enumerable: true, writable: true, configurable: true });
  };
  for (const [k, p] of Object.entries(a.props ?? {})) set(k, p);
  for (const [k, p] of Object.entries(b.props ?? {})) {
    const cur = Object.hasOwn(props, k) ? props[k] : undefined;
    set(k, cur ? { ...cur, plan: mergePlans(cur.plan, p.plan) } : p);
  }
  const items = mergePlans(a.items, b.items);
  const json = a.json ?? b.json;
  return { ...(Object.keys(props).length ? { props } : {}), ...(items ? { items } : {}), ...(json ? { json } : {}) };
}

/**
 * The model's `args` as the server expects them: renamed properties get their
 * names back, nulls of originally optional properties are dropped, JSON text
 * where the plan says so is parsed (a value that is not a string is taken as
 * the real thing and passes as it is). Values the plan does not describe pass
 * through unchanged; `args` is not modified. JSON text that does not parse, or
 * holds another kind of value than declared, throws ALBEDO_INVALID_ARGUMENT
 * (not run) with `data`: the argument as a person reads it (`argument`), its
 * path in the caller's names (`path`), `pointer` and `keyword: 'json'`.
 */
export function restoreArguments(args: unknown, plan: ArgPlan | undefined, at: Array<string | number> = []): unknown {
  if (!planNeeded(plan)) return args;
  if (plan.json && typeof args === 'string') return parseText(args, plan.json, at);
  if (Array.isArray(args)) return plan.items ? args.map((v, i) => restoreArguments(v, plan.items, [...at, i])) : args;
  if (!isObj(args) || !plan.props) return args;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(args)) {
    const p = Object.hasOwn(plan.props, k) ? plan.props[k] : undefined;
    if (p?.dropNull && v === null) continue;
    const name = p?.from ?? k;
    Object.defineProperty(out, name, {
      value: p?.plan ? restoreArguments(v, p.plan, [...at, k]) : v,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

const KIND_TEXT: Record<JsonKind, string> = { object: 'a JSON object', array: 'a JSON array', any: 'JSON' };

function parseText(text: string, kind: JsonKind, at: Array<string | number>): unknown {
  let value: unknown;
  let ok = true;
  try {
    value = JSON.parse(text);
  } catch {
    ok = false;
  }
  const fits = ok && (kind === 'any' || (kind === 'array' ? Array.isArray(value) : isObj(value)));
  if (fits) return value;
  const argument = argumentText(at);
  const what = ok ? `holds ${Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`}` : 'is not valid JSON';
  const message = `${argument || 'the arguments'} must be ${KIND_TEXT[kind]} written as text, and ${what}`;
  throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, {
    outcome: 'not_run',
    data: { argument, path: at, pointer: at.map(seg).join(''), keyword: 'json' },
  });
}

/** An argument's path as a person reads it: `options.count`, `items[0]`, `["odd key"]` (as the composer's check-args.ts). */
function argumentText(path: ReadonlyArray<string | number>): string {
  let out = '';
  for (const s of path) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (/^[A-Za-z_$][\w$-]{0,63}$/.test(s)) out += out ? `.${s}` : s;
    else out += `[${JSON.stringify(s.length > 64 ? `${s.slice(0, 63)}…` : s)}]`;
  }
  return out;
}
