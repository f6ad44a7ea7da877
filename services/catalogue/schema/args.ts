/**
 * Arguments back from the model's form to the server's. A profile may rename
 * a property the provider rejects (`filter[id]` → `filter_id_` for Anthropic)
 * and, in OpenAI strict mode, make an optional property required but nullable;
 * the normaliser then returns an ArgPlan, and the caller passes the model's
 * arguments through `restoreArguments` before calling the server. Plain JSON
 * in and out, so the plan can be stored with the catalogue.
 */

import type { ArgPlan, PropPlan } from '../../../protocol/catalogue.ts';

export type { ArgPlan, PropPlan } from '../../../protocol/catalogue.ts';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether a plan changes anything. */
export function planNeeded(plan: ArgPlan | undefined): plan is ArgPlan {
  return !!plan && (!!plan.items || (!!plan.props && Object.keys(plan.props).length > 0));
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
  return { ...(Object.keys(props).length ? { props } : {}), ...(items ? { items } : {}) };
}

/**
 * The model's `args` as the server expects them: renamed properties get their
 * names back, nulls of originally optional properties are dropped. Values the
 * plan does not describe pass through unchanged; `args` is not modified.
 */
export function restoreArguments(args: unknown, plan: ArgPlan | undefined): unknown {
  if (!planNeeded(plan)) return args;
  if (Array.isArray(args)) return plan.items ? args.map((v) => restoreArguments(v, plan.items)) : args;
  if (!isObj(args) || !plan.props) return args;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(args)) {
    const p = Object.hasOwn(plan.props, k) ? plan.props[k] : undefined;
    if (p?.dropNull && v === null) continue;
    const name = p?.from ?? k;
    Object.defineProperty(out, name, {
      value: p?.plan ? restoreArguments(v, p.plan) : v,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}
