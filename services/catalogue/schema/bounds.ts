/**
 * Whole-schema bounds checked after shaping: the JSON size (BOUNDS.maxBytes)
 * and, for `openai-strict`, Structured Outputs' published totals (5,000 object
 * properties, 1,000 enum values, 120,000 characters of property names, enum
 * and const values, and 15,000 characters for an enum of more than 250 string
 * values). A schema over a bound is shaped again with tighter limits
 * (profiles.ts FIT_STEPS) until it fits or is refused.
 */
import { BOUNDS } from './profiles.ts';

/** Structured Outputs' limits per schema (OpenAI, "Supported schemas" → limitations). */
export const OPENAI_STRICT_LIMITS = {
  properties: 5_000,
  enumValues: 1_000,
  stringChars: 120_000,
  bigEnum: 250,
  bigEnumChars: 15_000,
} as const;

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** UTF-8 bytes of the schema as JSON. */
export function jsonSize(schema: unknown): number {
  return Buffer.byteLength(JSON.stringify(schema), 'utf8');
}

/** Why a shaped strict schema breaks Structured Outputs' totals, or undefined. */
export function strictTotals(schema: Record<string, unknown>): string | undefined {
  let properties = 0;
  let enumValues = 0;
  let chars = 0;
  let bigEnum: string | undefined;
  const stack: unknown[] = [schema];
  while (stack.length) {
    const n = stack.pop();
    if (Array.isArray(n)) {
      stack.push(...n);
      continue;
    }
    if (!isObj(n)) continue;
    if (isObj(n.properties)) {
      const names = Object.keys(n.properties);
      properties += names.length;
      chars += names.reduce((a, k) => a + k.length, 0);
      stack.push(...Object.values(n.properties));
    }
    if (Array.isArray(n.enum)) {
      enumValues += n.enum.length;
      const len = n.enum.reduce<number>((a, v) => a + (typeof v === 'string' ? v.length : 0), 0);
      chars += len;
      if (n.enum.length > OPENAI_STRICT_LIMITS.bigEnum && len > OPENAI_STRICT_LIMITS.bigEnumChars) {
        bigEnum ??= `an enum of ${n.enum.length} values has ${len} characters`;
      }
    }
    if (typeof n.const === 'string') chars += n.const.length;
    for (const k of ['items', 'anyOf', 'additionalProperties']) if (n[k] !== undefined) stack.push(n[k]);
  }
  if (properties > OPENAI_STRICT_LIMITS.properties)
    return `${properties} properties (strict mode allows ${OPENAI_STRICT_LIMITS.properties})`;
  if (enumValues > OPENAI_STRICT_LIMITS.enumValues)
    return `${enumValues} enum values (strict mode allows ${OPENAI_STRICT_LIMITS.enumValues})`;
  if (chars > OPENAI_STRICT_LIMITS.stringChars)
    return `${chars} characters of names and values (strict mode allows ${OPENAI_STRICT_LIMITS.stringChars})`;
  return bigEnum;
}

/** Why the shaped schema is over a bound, or undefined when it fits. */
export function overBound(schema: Record<string, unknown>, strict: boolean): string | undefined {
  const size = jsonSize(schema);
  if (size > BOUNDS.maxBytes) return `${size} bytes of JSON (bound ${BOUNDS.maxBytes})`;
  return strict ? strictTotals(schema) : undefined;
}
