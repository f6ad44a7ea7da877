/**
 * get_prompt's `arguments`: named properties made from the arguments the
 * server's prompts declare (MCP `Prompt.arguments`), so every profile can
 * offer them — a free-form map of strings is dropped by Gemini's subset (and
 * so by `portable`) and refused by OpenAI strict mode. The property names are
 * made valid under the strictest provider rule (Gemini's, which Anthropic's
 * and OpenAI's also accept) before the normaliser sees them, so the schema is
 * the same for every profile and the normaliser renames nothing further; the
 * server's names come back through the usual ArgPlan (restoreArguments).
 * Argument names are untrusted server data: any Unicode, colliding after
 * sanitising, `__proto__`, huge, thousands of them; what is offered is
 * bounded, and the cut is said. Pure functions, deterministic.
 */
import type { ArgPlan, PropPlan } from '../../protocol/catalogue.ts';
import type { Prompt } from '../../protocol/mcp.ts';
import { planNeeded } from './schema/args.ts';
import { renameKeys } from './schema/keys.ts';
import { KEY_RULES } from './schema/profiles.ts';
import { oneLine } from './definitions-text.ts';

/** At most this many argument names become properties of `arguments` (the normaliser keeps 100 per object). */
export const MAX_PROMPT_ARGS = 64;
/** Prompts named in one property's description; the rest are counted. */
const NAMED_PROMPTS = 3;
/** Characters of one property's description. */
const MAX_PROP_DESCRIPTION = 300;

function define<T>(obj: Record<string, T>, k: string, v: T): void {
  Object.defineProperty(obj, k, { value: v, enumerable: true, writable: true, configurable: true });
}

/** A name as a quoted label: whole when short, else its head and tail (names that differ only at the end stay apart). */
function nameLabel(name: string, max = 80): string {
  const huge = name.length > 4 * max;
  const one = oneLine(huge ? `${name.slice(0, 2 * max)} ${name.slice(-2 * max)}` : name, Infinity);
  if (!huge && one.length <= max) return JSON.stringify(one);
  let tail = one.slice(-24);
  if (/^[\udc00-\udfff]/.test(tail)) tail = tail.slice(1);
  let head = one.slice(0, max - tail.length - 1);
  if (/[\ud800-\udbff]$/.test(head)) head = head.slice(0, -1);
  return JSON.stringify(`${head}…${tail}`);
}

/** One declared argument name over all prompts: who declares it, whether any requires it, its first description. */
interface Declared {
  name: string;
  order: number;
  prompts: string[];
  promptCount: number;
  requiredBy: number;
  description?: string;
}

/** Every distinct declared argument name, in first-declaration order (the first declaration of a name in one prompt counts). */
function declared(prompts: readonly Prompt[]): Declared[] {
  const byName = new Map<string, Declared>();
  for (const p of prompts) {
    const seen = new Set<string>();
    for (const a of Array.isArray(p.arguments) ? p.arguments : []) {
      if (typeof a?.name !== 'string' || !a.name || seen.has(a.name)) continue;
      seen.add(a.name);
      let d = byName.get(a.name);
      if (!d) byName.set(a.name, (d = { name: a.name, order: byName.size, prompts: [], promptCount: 0, requiredBy: 0 }));
      d.promptCount++;
      if (d.prompts.length < NAMED_PROMPTS) d.prompts.push(p.name);
      if (a.required === true) d.requiredBy++;
      if (d.description === undefined && typeof a.description === 'string' && a.description.trim()) d.description = a.description;
    }
  }
  return [...byName.values()];
}

/** get_prompt's `arguments` property, whether the root requires it, and the plan back to the server's names. */
export interface PromptArguments {
  /** The `arguments` property's schema; absent when no prompt declares an argument. */
  schema?: Record<string, unknown>;
  /** Some property is required by every prompt, so `arguments` itself is required. */
  required: boolean;
  /** Model name → server name for the renamed ones, as a plan of the whole get_prompt input; absent when none was renamed. */
  plan?: ArgPlan;
}

/**
 * The `arguments` property for these prompts: one optional string property
 * per distinct declared argument name, in declaration order. A property is
 * required only when every prompt requires it (which prompt the model picks
 * decides the rest; each description says which prompts take it). Over
 * MAX_PROMPT_ARGS names, those required by the most prompts, then declared by
 * the most, then declared first are offered, the description says how many
 * were not, and extra properties are allowed (where a profile keeps that,
 * the others can still be given under the server's exact names).
 */
export function promptArguments(prompts: readonly Prompt[]): PromptArguments {
  const all = declared(prompts);
  if (!all.length) return { required: false };
  const chosen =
    all.length <= MAX_PROMPT_ARGS
      ? all
      : [...all]
          .sort((a, b) => b.requiredBy - a.requiredBy || b.promptCount - a.promptCount || a.order - b.order)
          .slice(0, MAX_PROMPT_ARGS)
          .sort((a, b) => a.order - b.order);
  const names = renameKeys(
    chosen.map((d) => d.name),
    KEY_RULES.gemini,
  );
  const properties: Record<string, unknown> = {};
  const renamed: Record<string, PropPlan> = {};
  const required: string[] = [];
  for (const d of chosen) {
    const key = names.get(d.name)!;
    if (key !== d.name) define(renamed, key, { from: d.name });
    if (d.requiredBy === prompts.length) required.push(key);
    define(properties, key, { type: 'string', description: propDescription(d, key !== d.name) });
  }
  const cut = all.length - chosen.length;
  const text =
    "The chosen prompt's arguments, by name, each a string: give those the prompt takes (each property says which prompts" +
    ' take it and whether they require it), leave out the others.' +
    (Object.keys(renamed).length
      ? " A name the providers' rules do not allow is shown renamed; its description gives the server's name."
      : '') +
    (cut
      ? ` ${cut} more argument name(s) the prompts declare are not listed (at most ${MAX_PROMPT_ARGS} are): give them by the server's` +
        ' exact name where extra properties are accepted.'
      : '');
  const schema: Record<string, unknown> = { type: 'object', description: text, properties, ...(required.length ? { required } : {}) };
  if (cut) schema.additionalProperties = { type: 'string' };
  const plan: ArgPlan | undefined = Object.keys(renamed).length ? { props: { arguments: { plan: { props: renamed } } } } : undefined;
  return { schema, required: required.length > 0, ...(plan ? { plan } : {}) };
}

function propDescription(d: Declared, renamed: boolean): string {
  const who =
    d.prompts.map((p) => nameLabel(p, 64)).join(', ') +
    (d.promptCount > d.prompts.length ? ` and ${d.promptCount - d.prompts.length} more` : '');
  const need = d.requiredBy === d.promptCount ? 'required' : d.requiredBy ? `required by ${d.requiredBy} of them` : 'optional';
  const head = `${renamed ? `The server's argument ${nameLabel(d.name)}. ` : ''}For prompt(s) ${who} (${need}).`;
  return d.description ? oneLine(`${head} ${d.description}`, MAX_PROP_DESCRIPTION) : oneLine(head, MAX_PROP_DESCRIPTION);
}

/**
 * One plan after another, as one: `outer` takes the model's arguments to the
 * names `inner` was written for (the normaliser's plan over our schema), then
 * `inner` takes those to the server's. Null-dropping comes from either.
 */
export function composePlans(outer: ArgPlan | undefined, inner: ArgPlan | undefined): ArgPlan | undefined {
  if (!planNeeded(inner)) return planNeeded(outer) ? outer : undefined;
  if (!planNeeded(outer)) return inner;
  const innerProps = inner.props ?? {};
  const props: Record<string, PropPlan> = {};
  for (const [k, p] of Object.entries(outer.props ?? {})) {
    const mid = p.from ?? k;
    const q = Object.hasOwn(innerProps, mid) ? innerProps[mid] : undefined;
    const from = q?.from ?? p.from;
    const plan = composePlans(p.plan, q?.plan);
    const dropNull = p.dropNull || q?.dropNull;
    define(props, k, {
      ...(from !== undefined && from !== k ? { from } : {}),
      ...(dropNull ? { dropNull: true as const } : {}),
      ...(plan ? { plan } : {}),
    });
  }
  // A name the outer plan does not list passes it unchanged, so the inner entry for that name applies as it is.
  for (const [k, q] of Object.entries(innerProps)) if (!Object.hasOwn(props, k)) define(props, k, q);
  const items = composePlans(outer.items, inner.items);
  return { ...(Object.keys(props).length ? { props } : {}), ...(items ? { items } : {}) };
}
