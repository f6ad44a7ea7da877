/**
 * A call's arguments checked against the input schema Albedo holds for the
 * tool before the call is sent (the server's own schema, not the profile's
 * cut-down copy), so a missing or mistyped argument is refused here, as not
 * run, naming the argument. Ajv does the checking, loaded at the first call
 * that needs it: the draft by the schema's `$schema` (draft-07 when absent,
 * draft-06, 2019-09, 2020-12), formats not enforced, one compiled validator
 * per schema content (each session's copy of a schema is not compiled
 * again; the instances are renewed after MAX_COMPILATIONS, since Ajv keeps
 * all it compiled). Nothing the server might
 * accept is refused for Albedo's sake: a schema that does not compile
 * (another draft, a remote `$ref`, nonsense, `$async`) or is too big is not
 * checked, and neither is one with a pattern that could take too long
 * (risky-pattern.ts).
 *
 * The schema is the server's and the check runs on the daemon's own thread,
 * so what a hostile schema can make it cost is bounded: patterns run only on
 * text up to MAX_PATTERN_INPUT characters, MAX_PATTERN_TEXT in all per
 * check; arguments too big for the schema (their size times its, or
 * squared with `uniqueItems`, past MAX_WORK) are not checked; every compiled
 * part of the schema (each `$ref` is one: none is inlined) costs its size in
 * steps as it is entered, and a check that would take more than MAX_STEPS
 * (a `$ref` graph that branches exponentially, a recursion through the
 * arguments' depth) stops and lets the call through unchecked, as does any
 * other failure of the check itself.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { riskyPattern } from './risky-pattern.ts';

export { riskyPattern };

/** One thing wrong with the arguments. */
export interface ArgumentProblem {
  /** The argument as a person reads it: `message`, `options.count`, `items[0]`; `` for the arguments as a whole. */
  argument: string;
  /** JSON Pointer of the argument into the arguments object. */
  pointer: string;
  /** Its path, names and array indexes. */
  path: Array<string | number>;
  /** The JSON Schema keyword it failed: `required`, `type`, `enum`, … */
  keyword: string;
  /** One sentence: `message is required`, `count must be an integer`. */
  message: string;
}

/** A schema whose JSON is longer than this is not checked (compiling it would cost more than the check is worth). */
export const MAX_CHECKED_SCHEMA = 128 * 1024;
/** A string longer than this passes every pattern: a pattern's cost grows with the text. */
export const MAX_PATTERN_INPUT = 1_000;
/** Characters tested against patterns per check; past it, every pattern passes. */
export const MAX_PATTERN_TEXT = 10_000;
/** Steps per check (see the file's comment); past it, the arguments are not checked. */
export const MAX_STEPS = 200_000;
/** Problems reported per call. */
const MAX_PROBLEMS = 10;

type Draft = 'draft-07' | '2019-09' | '2020-12';
interface Checker {
  compile(schema: object): ValidateFunction;
  removeSchema(schema: object): unknown;
}

const load = createRequire(import.meta.url);
const checkers = new Map<Draft, Checker>();
/** Compiled validators by schema object; null: not checked. */
const compiled = new WeakMap<object, Checked | null>();
/** The same, by the schema's content (SHA-256 of its JSON): each session holds its own copy of a tool's schema. */
const byContent = new Map<string, Checked | null>();
/**
 * Compilations before the Ajv instances and `byContent` are dropped: an
 * instance keeps whatever it compiled (its code's scope) for its whole
 * life, so the daemon's memory would grow with every schema ever checked.
 */
const MAX_COMPILATIONS = 128;
let compilations = 0;

/** The draft a `$schema` names, or null for one not checked (draft-04, anything unknown). */
function draftOf(schema: Record<string, unknown>): Draft | null {
  const s = schema.$schema;
  if (s === undefined) return 'draft-07';
  if (typeof s !== 'string') return null;
  if (/^https?:\/\/json-schema\.org\/draft-0[67]\/schema#?$/.test(s)) return 'draft-07';
  if (/^https?:\/\/json-schema\.org\/draft\/2019-09\/schema#?$/.test(s)) return '2019-09';
  if (/^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/.test(s)) return '2020-12';
  return null;
}

/**
 * What the check under way has left: steps, and characters to test against
 * patterns. Set before each check (all of it synchronous); `armed` only
 * then, so a meta-schema's validation as a schema compiles is not counted.
 */
const budget = { armed: false, steps: 0, text: 0 };

/** A check that ran out of steps. */
class OutOfSteps extends Error {}

/** Ajv's regular expressions: refused at compile time when risky, and not run on long text or past the check's budget. */
const regExp = Object.assign(
  (pattern: string, flags: string) => {
    if (riskyPattern(pattern)) throw new Error('a pattern that could take too long');
    const re = new RegExp(pattern, flags);
    const test = (s: string): boolean => {
      if (s.length > MAX_PATTERN_INPUT || (budget.armed && (budget.text -= s.length) < 0)) return true;
      return re.test(s);
    };
    // Ajv keys its compiled patterns by toString(): the expression's own text keeps them apart.
    return { test, toString: () => re.toString() };
  },
  { code: 'new RegExp' },
);

/**
 * The count of objects and arrays in `value` (with `all`, of every value:
 * an enum's entries too), at most `cap`: what entering a schema's compiled
 * code costs in steps; what a check over arguments of that size may cost.
 */
function sizeOf(value: unknown, cap = MAX_STEPS, all = false): number {
  let n = 0;
  const stack = [value];
  while (stack.length && n < cap) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') {
      if (all) n++;
      continue;
    }
    n++;
    // One at a time: spreading an array of a hundred thousand items would overflow the call stack.
    for (const x of Array.isArray(v) ? v : Object.values(v)) stack.push(x);
  }
  return Math.max(1, n);
}

// A compiled part's code starts `return function validate12(data, {…}={}){`: its first statement takes the steps.
const HEAD = /return (?:async )?function [\w$]+\([^)]*\)\{/;
const STEP_HOOK = Symbol.for('albedo.check-args.step');

/** Ajv's code for one compiled part of a schema, made to take its steps first (no head found: not compiled, so not checked). */
function stepped(code: string, env?: { schema?: unknown }): string {
  const m = HEAD.exec(code);
  if (!m) throw new Error('validator code of an unexpected shape');
  const cost = sizeOf(env?.schema);
  const at = m.index + m[0].length;
  return `${code.slice(0, at)}self[Symbol.for(${JSON.stringify(STEP_HOOK.description)})](${cost});${code.slice(at)}`;
}

function step(cost: number): void {
  if (budget.armed && (budget.steps -= cost) < 0) throw new OutOfSteps();
}

function checker(draft: Draft): Checker {
  let c = checkers.get(draft);
  if (!c) {
    const mod = load(draft === '2020-12' ? 'ajv/dist/2020' : draft === '2019-09' ? 'ajv/dist/2019' : 'ajv');
    const Ajv = mod.default ?? mod;
    c = new Ajv({
      strict: false,
      allErrors: true,
      validateFormats: false,
      addUsedSchema: false,
      ownProperties: true,
      inlineRefs: false,
      logger: false,
      code: { regExp, process: stepped },
    }) as Checker;
    Object.defineProperty(c, STEP_HOOK, { value: step });
    checkers.set(draft, c);
  }
  return c;
}

/**
 * A compiled schema: its validator, its size (every value in it, an enum's
 * entries too) and whether it has `uniqueItems` — what a check's cost grows
 * with besides the arguments' size (checkable).
 */
interface Checked {
  validate: ValidateFunction;
  size: number;
  unique: boolean;
}

/** A check costs at most about this much (the arguments' values times the schema's; their square with `uniqueItems`). */
export const MAX_WORK = 30_000_000;

/** Whether arguments this big can be checked against `c` at a bounded cost (else they go unchecked). */
function checkable(c: Checked, args: unknown): boolean {
  const n = sizeOf(args, Math.ceil(MAX_WORK / c.size) + 1, true);
  // A cost the compiled code does not count in steps: each value against the schema's (an enum's entries), and for
  // `uniqueItems` every pair of items (its loop compares each with each).
  return n * c.size <= MAX_WORK && (!c.unique || n * n <= MAX_WORK);
}

/** The validator for `schema`, compiled once per content; null when it is not checked. */
function validatorOf(schema: object): Checked | null {
  if (compiled.has(schema)) return compiled.get(schema)!;
  let v: Checked | null = null;
  try {
    const text = JSON.stringify(schema);
    const draft = Array.isArray(schema) ? null : draftOf(schema as Record<string, unknown>);
    if (draft && text.length <= MAX_CHECKED_SCHEMA) {
      const key = createHash('sha256').update(text).digest('base64');
      if (byContent.has(key)) v = byContent.get(key)!;
      else {
        const validate = compile(draft, schema as Record<string, unknown>);
        v = validate && { validate, size: sizeOf(schema, MAX_WORK, true), unique: text.includes('"uniqueItems"') };
        byContent.set(key, v);
      }
    }
  } catch {
    v = null;
  }
  compiled.set(schema, v);
  return v;
}

function compile(draft: Draft, schema: Record<string, unknown>): ValidateFunction | null {
  if (++compilations > MAX_COMPILATIONS) {
    checkers.clear();
    byContent.clear();
    compilations = 1;
  }
  const c = checker(draft);
  // The draft is the checker's: `$schema` spelt another way (https, no `#`) or draft-06 must not stop the compile.
  const { $schema: _, ...root } = schema;
  try {
    const v = c.compile(root);
    // An async validator answers with a promise (and one that rejects, unhandled, for bad arguments): not checked.
    return (v as { $async?: unknown }).$async ? null : v;
  } catch {
    return null;
  } finally {
    c.removeSchema(root);
  }
}

const isPlain = (s: string): boolean => /^[A-Za-z_$][\w$-]{0,63}$/.test(s);

/** An argument's path as a person reads it: `options.count`, `items[0]`, `["odd key"]`. */
export function argumentText(path: ReadonlyArray<string | number>): string {
  let out = '';
  for (const s of path) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (isPlain(s)) out += out ? `.${s}` : s;
    else out += `[${JSON.stringify(s.length > 64 ? `${s.slice(0, 63)}…` : s)}]`;
  }
  return out;
}

/** The path of a JSON Pointer into `value`: array indexes as numbers. */
function pathOf(pointer: string, value: unknown): Array<string | number> {
  if (!pointer) return [];
  const out: Array<string | number> = [];
  let at: unknown = value;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    const index = Array.isArray(at) && /^\d+$/.test(key) ? Number(key) : key;
    out.push(index);
    at = at !== null && typeof at === 'object' && Object.hasOwn(at, key) ? (at as Record<string, unknown>)[key] : undefined;
  }
  return out;
}

/** One JSON Pointer segment (RFC 6901: `~` and `/` escaped). */
const segment = (s: string | number): string => `/${String(s).replace(/~/g, '~0').replace(/\//g, '~1')}`;
const pointerOf = (path: ReadonlyArray<string | number>): string => path.map(segment).join('');

const json = (v: unknown): string => {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 64 ? `${s.slice(0, 63)}…` : s;
};

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'an integer',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

/** One Ajv error as a problem, its sentence naming the argument. */
/** A path in the server's property names as the caller's arguments name it (a profile may have renamed some). */
export type CallerPath = (path: Array<string | number>) => Array<string | number>;

function problemOf(e: ErrorObject, args: unknown, caller?: CallerPath): ArgumentProblem {
  const p = e.params as Record<string, unknown>;
  // A missing or an unexpected property is named by its own pointer, not its parent's.
  const named = [p.missingProperty, p.additionalProperty, p.unevaluatedProperty].find((k): k is string => typeof k === 'string') ?? null;
  const pointer = named === null ? e.instancePath : e.instancePath + segment(named);
  const path = caller ? caller(pathOf(pointer, args)) : pathOf(pointer, args);
  const argument = argumentText(path);
  const who = argument || 'the arguments';
  let sentence: string;
  switch (e.keyword) {
    case 'required':
      sentence = `${who} is required`;
      break;
    case 'dependencies':
    case 'dependentRequired':
      sentence = `${who} is required when ${json(p.property)} is given`;
      break;
    case 'type':
      sentence = `${who} must be ${String(p.type)
        .split(',')
        .map((t) => TYPE_WORDS[t] ?? t)
        .join(' or ')}`;
      break;
    case 'enum': {
      const values = Array.isArray(p.allowedValues) ? p.allowedValues : [];
      sentence = `${who} must be one of ${values.slice(0, 10).map(json).join(', ')}${values.length > 10 ? ', …' : ''}`;
      break;
    }
    case 'const':
      sentence = `${who} must be ${json(p.allowedValue)}`;
      break;
    case 'additionalProperties':
    case 'unevaluatedProperties':
      sentence = path.length > 1 ? `${who} is not allowed` : `${who} is not an argument this tool takes`;
      break;
    default:
      sentence = `${who} ${String(e.message ?? `fails ${e.keyword}`).slice(0, 200)}`;
  }
  return { argument, pointer: pointerOf(path), path, keyword: e.keyword, message: sentence };
}

/**
 * What is wrong with `args` under `schema`: none when they match, or when
 * the schema is not checked (see the file's comment). `args` are in the
 * server's names; `caller` gives a problem's path in the caller's.
 */
export function argumentProblems(schema: unknown, args: unknown, caller?: CallerPath): ArgumentProblem[] {
  if (schema === null || typeof schema !== 'object') return [];
  const c = validatorOf(schema);
  if (!c || !checkable(c, args)) return [];
  const v = c.validate;
  Object.assign(budget, { armed: true, steps: MAX_STEPS, text: MAX_PATTERN_TEXT });
  try {
    if (v(args)) return [];
  } catch {
    // Out of steps, or the check itself failed (a stack too deep): the call goes through unchecked.
    return [];
  } finally {
    budget.armed = false;
  }
  const out: ArgumentProblem[] = [];
  const seen = new Set<string>();
  for (const e of v.errors ?? []) {
    // A branch's own failures say more than "must match a schema in anyOf".
    if ((e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if') && (v.errors?.length ?? 0) > 1) continue;
    const problem = problemOf(e, args, caller);
    if (seen.has(problem.message)) continue;
    seen.add(problem.message);
    out.push(problem);
    if (out.length >= MAX_PROBLEMS) break;
  }
  return out.length ? out : [problemOf(v.errors![0]!, args, caller)];
}
