/**
 * The modern era's request headers over HTTP (2026-07-28): `Mcp-Method`,
 * `Mcp-Name`, and a tool call's `Mcp-Param-*` headers from the arguments its
 * x-mcp-header annotations name (protocol/rev2026-07-28/headers.ts encodes
 * each value). No state: the link adds them to every modern request.
 */
import { encodeHeaderValue, nameHeaderFor, type HeaderParam } from '../../protocol/rev2026-07-28/headers.ts';
import { valueAt } from './http-util.ts';

/** Where a tool's `Mcp-Param-*` headers come from (its x-mcp-header annotations, tool-headers.ts). */
export interface HeaderParamSource {
  headerParams?(toolName: string): HeaderParam[] | undefined;
}

/** Adds the modern headers of `message` (a request or notification with a method) to `h`. */
export function addModernHeaders(h: Record<string, string>, message: Record<string, unknown>, source: HeaderParamSource): void {
  if (typeof message.method !== 'string') return;
  h['mcp-method'] = encodeHeaderValue(message.method);
  const params = message.params as Record<string, unknown> | undefined;
  const name = nameHeaderFor(message.method, params);
  if (name !== undefined) h['mcp-name'] = encodeHeaderValue(name);
  if (message.method === 'tools/call' && typeof params?.name === 'string') {
    const args = (params.arguments ?? {}) as Record<string, unknown>;
    for (const p of source.headerParams?.(params.name) ?? []) {
      const v = valueAt(args, p.path);
      if (v === undefined || v === null) continue;
      const text =
        typeof v === 'string' ? v : typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)) ? String(v) : undefined;
      if (text !== undefined) h[`mcp-param-${p.header.toLowerCase()}`] = encodeHeaderValue(text);
    }
  }
}
