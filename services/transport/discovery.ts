/**
 * Discovery of a server's four lists: paging through `nextCursor` (at most
 * MAX_LIST_PAGES, a repeated cursor stops it), and the bounds every
 * catalogue must keep (protocol/bounds.ts) checked page by page, before a
 * page is even parsed, so a hostile server costs what one page costs.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import { ErrorCode } from '../../protocol/jsonrpc.ts';
import { describeZodError } from '../../protocol/config.ts';
import { listSchemas, LIST_FIELD, MAX_LIST_PAGES, type Catalogue, type ListMethod } from '../../protocol/mcp.ts';
import { MAX_DEPTH, MAX_LIST_ITEMS, MAX_CATALOGUE_BYTES, depthOf, type BoundKind } from '../../protocol/bounds.ts';
import type { ConnectionInfo } from '../../protocol/services/transport.ts';
import { wireSizeOf } from './rpc-peer.ts';
import { redactThenCut, type Secrets } from '../../protocol/redact.ts';
import type { z } from 'zod';

export type ListField = (typeof LIST_FIELD)[ListMethod];

/** What discovery needs of its connection. */
export interface Lister {
  /** The server's name, for errors. */
  readonly server: string;
  /** The connection's secrets: cut out of the server's text before it is cut short into a warning. */
  readonly redactor?: Secrets;
  request(
    method: string,
    params: Record<string, unknown> | undefined,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>>;
  /** Filters one page of tools (modern HTTP checks their x-mcp-header annotations). */
  acceptTools(tools: unknown[], warnings: string[]): unknown[];
}

/** One list as discovered, and the JSON text it took on the wire. */
export interface Listed {
  items: unknown[];
  bytes: number;
}

/** ALBEDO_CATALOGUE_TOO_LARGE naming the server, the bound and the list. */
export function catalogueTooLarge(server: string, limit: BoundKind, what: string): AlbedoError {
  return new AlbedoError('ALBEDO_CATALOGUE_TOO_LARGE', `the catalogue of ${server} was refused: ${what}`, { data: { server, limit } });
}

/** Every page of one list. Throws ALBEDO_CATALOGUE_TOO_LARGE past a bound, ALBEDO_INVALID_RESPONSE for a malformed page. */
export async function listAll(l: Lister, method: ListMethod, timeoutMs: number, warnings: string[], signal?: AbortSignal): Promise<Listed> {
  const field = LIST_FIELD[method];
  const schema = listSchemas[method] as z.ZodType<Record<string, unknown>>;
  const items: unknown[] = [];
  let bytes = 0;
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const raw = await l.request(method, cursor === undefined ? undefined : { cursor }, timeoutMs, signal);
    const got = raw[field];
    if (Array.isArray(got) && items.length + got.length > MAX_LIST_ITEMS) {
      throw catalogueTooLarge(l.server, 'items', `${method} holds more than ${MAX_LIST_ITEMS} items`);
    }
    bytes += wireSizeOf(raw) ?? 0;
    if (bytes > MAX_CATALOGUE_BYTES) throw catalogueTooLarge(l.server, 'bytes', `${method} is larger than ${MAX_CATALOGUE_BYTES} bytes`);
    // The list array is one level; its items may nest MAX_DEPTH levels below it.
    if (depthOf(got, MAX_DEPTH + 1) > MAX_DEPTH + 1) {
      throw catalogueTooLarge(l.server, 'depth', `${method} holds a value nested deeper than ${MAX_DEPTH} levels`);
    }
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      throw new AlbedoError('ALBEDO_INVALID_RESPONSE', `${method} returned a malformed page: ${describeZodError(parsed.error)}`);
    }
    const pageItems = parsed.data[field] as unknown[];
    const accepted = method === 'tools/list' ? l.acceptTools(pageItems, warnings) : pageItems;
    // One at a time: spreading a page of thousands of items onto the stack can overflow it.
    for (const item of accepted) items.push(item);
    const next = parsed.data.nextCursor as string | undefined;
    if (next === undefined) return { items, bytes };
    if (seen.has(next)) {
      warnings.push(
        `${method}: the server repeated cursor ${JSON.stringify(redactThenCut(next, l.redactor ?? [], { keep: 'head', max: 200 }))}; ` +
          `stopped after ${page + 1} pages`,
      );
      return { items, bytes };
    }
    seen.add(next);
    cursor = next;
  }
  warnings.push(`${method}: stopped after ${MAX_LIST_PAGES} pages; the list may be incomplete`);
  return { items, bytes };
}

/** The lists a server's capabilities announce. */
export function listsFor(info: ConnectionInfo): ListMethod[] {
  const c = info.capabilities;
  const out: ListMethod[] = [];
  if (c.tools) out.push('tools/list');
  if (c.resources) out.push('resources/list', 'resources/templates/list');
  if (c.prompts) out.push('prompts/list');
  return out;
}

/** The JSON text each list of a catalogue took, for the whole-catalogue bound. */
export type ListBytes = Partial<Record<ListField, number>>;

/** Throws ALBEDO_CATALOGUE_TOO_LARGE when the lists together pass MAX_CATALOGUE_BYTES. */
export function checkTotal(server: string, sizes: ListBytes): void {
  let total = 0;
  for (const n of Object.values(sizes)) total += n ?? 0;
  if (total > MAX_CATALOGUE_BYTES)
    throw catalogueTooLarge(server, 'bytes', `its lists together are larger than ${MAX_CATALOGUE_BYTES} bytes`);
}

/**
 * The whole catalogue, the lists fetched at once, all within `deadline`. A
 * list the server declares but does not implement (-32601) is noted and
 * left empty, as is common.
 */
export async function discoverAll(
  l: Lister,
  lists: ListMethod[],
  deadline: number,
  warnings: string[],
  signal?: AbortSignal,
): Promise<{ catalogue: Catalogue; sizes: ListBytes }> {
  const catalogue: Catalogue = { tools: [], resources: [], resourceTemplates: [], prompts: [] };
  const sizes: ListBytes = {};
  const results = await Promise.all(
    lists.map(async (m) => {
      try {
        return [m, await listAll(l, m, Math.max(1, deadline - Date.now()), warnings, signal)] as const;
      } catch (err) {
        if (AlbedoError.is(err) && (err.data as { code?: number } | undefined)?.code === ErrorCode.MethodNotFound) {
          warnings.push(`${m}: the server does not implement it`);
          return [m, { items: [] as unknown[], bytes: 0 }] as const;
        }
        throw err;
      }
    }),
  );
  for (const [m, listed] of results) {
    (catalogue as unknown as Record<string, unknown[]>)[LIST_FIELD[m]] = listed.items;
    sizes[LIST_FIELD[m]] = listed.bytes;
  }
  checkTotal(l.server, sizes);
  return { catalogue, sizes };
}
