/**
 * Tool search over a session's advertised definitions (issue 13, deferred
 * tools): a query finds the definitions the model would have seen, ranked.
 *
 * Two passes. First, exact names: a query that is an advertised name, a
 * server's raw tool name, `server/tool` (or `server.tool`, `server:tool`),
 * or a server's name puts those tools first — BM25 alone ranks an exact
 * name below a tool whose description repeats its words (Codex's search
 * misses tools searched by their exact name). Then MiniSearch (BM25+, a
 * maintained, dependency-free full-text index with prefix and fuzzy terms;
 * chosen over FlexSearch for its per-field boosts and over Orama for its
 * size) over the names, titles, descriptions and parameter names, with
 * identifiers split into words (`read_text_file`, `getUserProfile`,
 * `get-sum` → their words) so a natural query meets them.
 *
 * Pure: no I/O; the index is built once per generation of the tools.
 */
import MiniSearch from 'minisearch';
import type { ModelTool, RouteEntry } from '../../protocol/catalogue.ts';

/** One searchable definition: what the model is given, and where it routes. */
export interface SearchEntry {
  tool: ModelTool;
  route: RouteEntry;
  /** The server's `title` of the tool, when it gave one. */
  title?: string;
}

export interface SearchHit {
  /** The advertised name. */
  name: string;
  server: string;
  /** Higher is better; exact-name hits rank above every text hit. */
  score: number;
  /** How it was found. */
  match: 'exact' | 'server' | 'text';
}

/** Words no query is about; dropped from both the index and the query. */
const STOP = new Set(
  (
    'a an and are as at be by can for from has have how i in into is it its of on or that the this to was what when ' +
    'which will with you your do does me my all any'
  ).split(' '),
);

/** `read_text_file` / `getUserProfile` / `get-sum` / `HTTPServer2` → lower-case words. */
export function words(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0 && !STOP.has(w));
}

/** A light stemmer: plural and -ing/-ed endings, so "files" meets "file" and "listing" meets "list". */
function stem(w: string): string {
  if (w.length > 4 && w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.length > 5 && w.endsWith('ing')) return w.slice(0, -3);
  if (w.length > 4 && w.endsWith('ed') && !w.endsWith('eed')) return w.slice(0, -2);
  if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us')) return w.slice(0, -1);
  return w;
}

/** Top-level parameter names of an input schema. */
function paramNames(schema: Record<string, unknown>): string[] {
  const props = schema.properties;
  return props && typeof props === 'object' && !Array.isArray(props) ? Object.keys(props) : [];
}

interface Doc {
  id: number;
  name: string;
  tool: string;
  server: string;
  title: string;
  description: string;
  params: string;
}

const FIELDS = ['name', 'tool', 'server', 'title', 'description', 'params'] as const;
const BOOST = { tool: 4, name: 1, server: 2, title: 3, description: 1, params: 1.5 };

const norm = (s: string): string => s.trim().toLowerCase();

/** A search index over one generation's definitions. */
export class ToolSearch {
  readonly #entries: SearchEntry[];
  readonly #index: MiniSearch<Doc>;
  /** Lower-cased exact spellings → entry positions. */
  readonly #exact = new Map<string, number[]>();
  readonly #byServer = new Map<string, number[]>();

  constructor(entries: readonly SearchEntry[]) {
    this.#entries = [...entries];
    this.#index = new MiniSearch<Doc>({
      fields: [...FIELDS],
      storeFields: [],
      tokenize: (text) => words(text),
      processTerm: (term) => stem(term),
    });
    const docs: Doc[] = this.#entries.map((e, id) => {
      const raw = e.route.kind === 'tool' ? e.route.tool : e.route.kind;
      for (const key of new Set(
        [e.tool.name, raw, `${e.route.server}/${raw}`, `${e.route.server}.${raw}`, `${e.route.server}:${raw}`].map(norm),
      )) {
        const list = this.#exact.get(key) ?? [];
        list.push(id);
        this.#exact.set(key, list);
      }
      const s = norm(e.route.server);
      this.#byServer.set(s, [...(this.#byServer.get(s) ?? []), id]);
      return {
        id,
        name: e.tool.name,
        tool: raw,
        server: e.route.server,
        title: e.title ?? '',
        description: e.tool.description,
        params: paramNames(e.tool.inputSchema).join(' '),
      };
    });
    this.#index.addAll(docs);
  }

  get size(): number {
    return this.#entries.length;
  }

  /** The entry behind an advertised name, if any. */
  entry(name: string): SearchEntry | undefined {
    return this.#entries.find((e) => e.tool.name === name);
  }

  /**
   * The best `limit` definitions for `query`, best first: exact names, then
   * the tools of a server named exactly, then text matches. An empty query
   * finds nothing.
   */
  search(query: string, limit = 5): SearchHit[] {
    const q = norm(query);
    if (!q || limit <= 0) return [];
    const out: SearchHit[] = [];
    const seen = new Set<number>();
    const push = (id: number, score: number, match: SearchHit['match']): void => {
      if (seen.has(id) || out.length >= limit) return;
      seen.add(id);
      const e = this.#entries[id]!;
      out.push({ name: e.tool.name, server: e.route.server, score, match });
    };
    for (const id of this.#exact.get(q) ?? []) push(id, Number.MAX_SAFE_INTEGER, 'exact');
    const server = this.#byServer.get(q);
    // A server's tools come first only when the query names nothing more exact; text order ranks them among themselves.
    const text = this.#index.search(query, {
      boost: BOOST,
      prefix: (term) => term.length >= 3,
      fuzzy: (term) => (term.length >= 5 ? 0.2 : false),
      combineWith: 'OR',
    });
    if (server) {
      const inServer = new Set(server);
      for (const r of text) if (inServer.has(r.id as number)) push(r.id as number, Number.MAX_SAFE_INTEGER / 2, 'server');
      for (const id of server) push(id, Number.MAX_SAFE_INTEGER / 2, 'server');
    }
    for (const r of text) push(r.id as number, r.score, 'text');
    return out;
  }
}
