/**
 * A value a profile cannot describe, said as JSON text: a free-form object
 * (no declared properties, or only a map of extra ones), an array of them, a
 * subtree cut for depth or a cycle. Gemini's schema (so `gemini` and
 * `portable`) has no free-form object, and OpenAI strict mode none either;
 * leaving such a property out would lose the tool when it is required. So it
 * becomes a string whose description says what it holds, and the plan `{
 * json: kind }` has restoreArguments parse it before the call (a caller that
 * passes the real value is not changed; text that does not parse, or holds
 * another kind, is refused naming the argument). Rich profiles say such a
 * value as itself.
 */
import type { Node, TypeName } from './canonical.ts';
import type { JsonKind } from './args.ts';
import type { ShapeCtx, Shaped } from './rich.ts';
import { cut, withConstraints } from './text.ts';

/** Leads the description, so that it survives the cuts the size fitting makes (it is kept even when descriptions go). */
const LEAD: Record<JsonKind, string> = {
  object: 'A JSON object written as text, e.g. {"key": "value"}.',
  array: 'A JSON array written as text, e.g. [{"key": "value"}].',
  any: 'A JSON value written as text, e.g. {"key": "value"} or "text".',
};

/** What JSON text must hold for a node of these types: an object, an array, or (several or unknown types) any value. */
export function jsonKind(types: readonly TypeName[] | undefined): JsonKind {
  const real = (types ?? []).filter((t) => t !== 'null');
  return real.length === 1 && (real[0] === 'object' || real[0] === 'array') ? real[0] : 'any';
}

/** `node` as a JSON-text string (`nullable`: it may also be null, said the profile's way), with the plan that parses it. */
export function jsonText(node: Node, kind: JsonKind, parts: string[], path: string, ctx: ShapeCtx, nullable: boolean): Shaped {
  const rest = withConstraints(node.description, parts, Infinity);
  const max = Math.max(ctx.limits.maxDescription, LEAD[kind].length);
  const description = rest && ctx.limits.maxDescription > 0 ? cut(`${LEAD[kind]} ${rest}`, max) : LEAD[kind];
  const s: Record<string, unknown> = { type: 'string' };
  if (nullable && ctx.rules.kind === 'subset' && ctx.rules.nullable) s.nullable = true;
  if (nullable && ctx.rules.kind === 'rich') s.type = ['string', 'null'];
  s.description = description;
  ctx.notes.add('json_text', path, `said as JSON text (${kind === 'any' ? 'any value' : `an ${kind}`}): the profile cannot describe it`);
  return { s, plan: { json: kind } };
}
