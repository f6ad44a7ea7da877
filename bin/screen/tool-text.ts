/**
 * A saved catalogue's words as the tools view shows them: a text's first
 * line, a tool's parameters (from its input schema's `properties` and
 * `required`), and the whole of a tool as lines for the pager. Pure
 * functions of the server's data; the text stays raw here (markdown is
 * text, never markup) and is made safe where it is drawn (wrapLines, cell).
 */
import { toJson } from '../client/output.ts';
import type { Tool } from './api.ts';

/** The first line of `text` that is not blank, trimmed; '' when there is none. */
export function firstLine(text: string | null | undefined): string {
  return (
    (text ?? '')
      .split(/\r\n|\r|\n/)
      .find((l) => l.trim() !== '')
      ?.trim() ?? ''
  );
}

/** Whether `text` holds more than its first line. */
export function hasMore(text: string | null | undefined): boolean {
  return (text ?? '').trim() !== firstLine(text);
}

/** A schema's kind in a few words: `string`, `array of number`, `one of "a", "b"`. */
export function kindOf(schema: unknown): string {
  if (!schema || typeof schema !== 'object') return 'any';
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s.enum))
    return `one of ${s.enum
      .slice(0, 8)
      .map((v) => JSON.stringify(v))
      .join(', ')}${s.enum.length > 8 ? ', …' : ''}`;
  if ('const' in s) return `exactly ${JSON.stringify(s.const)}`;
  const union = Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : null;
  if (union) return union.slice(0, 4).map(kindOf).join(' | ') + (union.length > 4 ? ' | …' : '');
  const type = Array.isArray(s.type) ? s.type.map(String).join(' | ') : typeof s.type === 'string' ? s.type : null;
  if (type === 'array' && s.items && typeof s.items === 'object') return `array of ${kindOf(s.items)}`;
  return type ?? (s.properties ? 'object' : 'any');
}

export interface Param {
  name: string;
  kind: string;
  required: boolean;
  description: string;
  /** The default, as JSON, when the schema gives one. */
  default?: string;
}

/** The tool's parameters, in the schema's order (required ones are not moved: the server's order is its own). */
export function paramsOf(tool: Tool): Param[] {
  const schema = tool.inputSchema ?? {};
  const props = schema.properties && typeof schema.properties === 'object' ? (schema.properties as Record<string, unknown>) : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
  return Object.entries(props).map(([name, p]) => {
    const o = (p && typeof p === 'object' ? p : {}) as Record<string, unknown>;
    return {
      name,
      kind: kindOf(o),
      required: required.has(name),
      description: typeof o.description === 'string' ? o.description : '',
      ...('default' in o ? { default: JSON.stringify(o.default) ?? 'null' } : {}),
    };
  });
}

/** One parameter on one line: `message (string, required) — Message to echo`. */
export function paramLine(p: Param): string {
  const what = [p.kind, p.required ? 'required' : null, p.default !== undefined ? `default ${p.default}` : null].filter(Boolean).join(', ');
  const about = firstLine(p.description);
  return `${p.name} (${what})${about ? ` — ${about}` : ''}`;
}

/** The whole tool, as lines (raw text: the pager wraps and escapes them). */
export function toolPage(tool: Tool): string[] {
  const lines: string[] = [];
  if (tool.title && tool.title !== tool.name) lines.push(`title: ${tool.title}`);
  if (!tool.enabled) lines.push("○ kept from the model by this server's enabledTools / disabledTools");
  if (lines.length) lines.push('');
  lines.push(...(tool.description?.trim() ? tool.description.trim().split(/\r\n|\r|\n/) : ['(no description)']), '');
  const params = paramsOf(tool);
  lines.push(params.length ? `parameters (${params.length}):` : 'no parameters');
  for (const p of params) {
    lines.push(`  ${paramLine({ ...p, description: '' })}`);
    for (const l of p.description.trim() ? p.description.trim().split(/\r\n|\r|\n/) : []) lines.push(`      ${l}`);
  }
  lines.push('', 'input schema:', ...toJson(tool.inputSchema, 2).split('\n'));
  return lines;
}
