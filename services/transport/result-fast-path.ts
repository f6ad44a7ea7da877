/**
 * The verdict protocol/mcp.ts's `callToolResultSchema` gives a plain
 * `tools/call` result, without running zod: every call's result was parsed
 * by it, and zod's bookkeeping and copies were the largest share of a call's
 * allocations. Only what is certainly valid takes this path, and it returns
 * what zod would (the same keys in the same order, `content` defaulted to
 * `[]`); anything else returns undefined, and zod judges and explains it
 * exactly as before. test/transport/result-fast-path.test.ts holds the two
 * side by side.
 */
import { isPlainData } from '../../protocol/jsonrpc.ts';
import type { CallToolResult } from '../../protocol/mcp.ts';

/** The keys callToolResultSchema declares, in its order (zod puts them first in its output). */
const DECLARED = new Set(['content', 'structuredContent', 'isError']);

/** `raw` as callToolResultSchema would parse it, or undefined when this path cannot be sure it is valid. */
export function callToolResultFast(raw: Record<string, unknown>): CallToolResult | undefined {
  if (!isPlainData(raw)) return undefined;
  const content = contentFast(raw.content);
  if (content === undefined) return undefined;
  const out: Record<string, unknown> = { content };
  if ('structuredContent' in raw) {
    // z.record copies the object (a copy we skip: nothing else holds it); a __proto__ key it would drop.
    const sc = raw.structuredContent;
    if (!isPlainData(sc) || Object.hasOwn(sc, '__proto__')) return undefined;
    out.structuredContent = sc;
  }
  if ('isError' in raw) {
    if (typeof raw.isError !== 'boolean') return undefined;
    out.isError = raw.isError;
  }
  for (const k in raw) {
    if (DECLARED.has(k)) continue;
    // zod leaves an own __proto__ out of its copy; assigning one here would set the prototype instead.
    if (k === '__proto__') return undefined;
    out[k] = raw[k];
  }
  return out as CallToolResult;
}

/** `content` as z.array(z.looseObject({ type: z.string() })).default([]) parses it, or undefined. */
function contentFast(content: unknown): Array<{ type: string }> | undefined {
  if (content === undefined) return [];
  if (!Array.isArray(content)) return undefined;
  const out: Array<{ type: string }> = [];
  for (let i = 0; i < content.length; i++) {
    const item: unknown = content[i];
    if (!isPlainData(item) || typeof item.type !== 'string' || Object.hasOwn(item, '__proto__')) return undefined;
    // zod's copy of an item puts `type` first; an item that already has it first is that copy, as it is.
    let first: string | undefined;
    for (const k in item) {
      first = k;
      break;
    }
    let parsed = item as { type: string };
    if (first !== 'type') {
      const copy: Record<string, unknown> = { type: item.type };
      for (const k in item) if (k !== 'type') copy[k] = item[k];
      parsed = copy as { type: string };
    }
    out.push(parsed);
  }
  return out;
}
