/**
 * Deferred tools (issue 13): a session whose `tools` option defers (or
 * `auto`, over its budget) gives the model a small fixed set —
 * `mcp_search_tools`, `mcp_call_tool` and the definitions the settings mark
 * `alwaysLoad` — plus the definitions its searches found, kept in a
 * `loaded` list that only grows (so the prefix of what the harness sends
 * stays the same and a provider's prompt cache stays valid). Works with any
 * model: a harness that cannot add tools mid-conversation calls through
 * `mcp_call_tool`; one that can adds the loaded definitions natively.
 *
 * The two fixed definitions go through the profile's normaliser like every
 * other schema. A profile that cannot describe a free-form object (portable
 * and gemini, and openai-strict, say it as JSON text) gets `arguments_json`,
 * the arguments as JSON text, instead of `arguments`.
 */
import { AlbedoError } from '../protocol/errors.ts';
import type { ModelTool } from '../protocol/catalogue.ts';
import { DEFER_SHARE, DEFER_TOOLS, type ToolsMode } from '../protocol/composer.ts';
import type { SessionView } from '../protocol/services/composer.ts';
import { normalise, ToolSearch, type Profile, type SearchHit } from '../services/catalogue/public.ts';

export const SEARCH_TOOL = 'mcp_search_tools';
export const CALL_TOOL = 'mcp_call_tool';
/** Reads on in a result cut to its budget (api/results.ts); advertised in every session. */
export const READ_TOOL = 'mcp_read_result';
/** The most matches one search returns. */
export const MAX_SEARCH_LIMIT = 20;
export const DEFAULT_SEARCH_LIMIT = 5;
/** The longest query (characters): a search's cost grows with its words. */
export const MAX_QUERY = 1_000;

const SEARCH_DESCRIPTION =
  "Find tools of this session's MCP servers that are not loaded yet. The query is a tool name, a server name, " +
  'or words of what the tool does. Returns the best matches with their names, descriptions and input schemas; call one with ' +
  `${CALL_TOOL} (or directly by its name, once it is in your tool list).`;
const CALL_DESCRIPTION = `Call a tool that ${SEARCH_TOOL} found, by its name, with arguments as its input schema describes them.`;
const READ_DESCRIPTION =
  'Read on in a tool result that Albedo cut to fit the context: the note in the result gives the id and the offset ' +
  'to start from. Returns the next page and the offset after it.';

const readSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: "The kept result's id, from the note in the cut result." },
    offset: { type: 'integer', minimum: 0, description: 'Where to start, in characters (the note says where the shown part ended).' },
  },
  required: ['id', 'offset'],
  additionalProperties: false,
};

const searchSchema = {
  type: 'object',
  properties: {
    query: { type: 'string', maxLength: MAX_QUERY, description: 'A tool name, a server name, or words of what the tool should do.' },
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_SEARCH_LIMIT,
      description: `How many matches to return (default ${DEFAULT_SEARCH_LIMIT}).`,
    },
  },
  required: ['query'],
  additionalProperties: false,
};
const callSchema = (json: boolean): Record<string, unknown> => ({
  type: 'object',
  properties: {
    name: { type: 'string', description: `The tool's name, as ${SEARCH_TOOL} returned it.` },
    ...(json
      ? { arguments_json: { type: 'string', description: 'The arguments as a JSON object, written out as text ("{}" for none).' } }
      : { arguments: { type: 'object', description: "The arguments, as the tool's input schema describes them." } }),
  },
  required: json ? ['name', 'arguments_json'] : ['name'],
  additionalProperties: false,
});

const fixedByProfile = new Map<string, Promise<ModelTool[]>>();

async function normalised(name: string, description: string, schema: Record<string, unknown>, profile: string): Promise<ModelTool | null> {
  const r = await normalise(schema, profile as Profile);
  if (!r.ok || r.notes.some((n) => n.startsWith('property_dropped') || n.startsWith('json_text'))) return null;
  return { name, description, inputSchema: r.schema };
}

/** The fixed definitions for `profile`, normalised (cached per profile): search, call, read. */
export function fixedTools(profile: string): Promise<ModelTool[]> {
  let p = fixedByProfile.get(profile);
  if (!p) {
    p = (async () => {
      const search = await normalised(SEARCH_TOOL, SEARCH_DESCRIPTION, searchSchema, profile);
      const call =
        (await normalised(CALL_TOOL, CALL_DESCRIPTION, callSchema(false), profile)) ??
        (await normalised(CALL_TOOL, CALL_DESCRIPTION, callSchema(true), profile));
      const read = await normalised(READ_TOOL, READ_DESCRIPTION, readSchema, profile);
      if (!search || !call || !read) throw new AlbedoError('ALBEDO_INTERNAL', `the ${profile} profile refused the deferred tools' schemas`);
      return [search, call, read];
    })();
    fixedByProfile.set(profile, p);
    p.catch(() => fixedByProfile.delete(profile));
  }
  return p;
}

/** Whether a session with `mode` and `budget` defers the definitions of `view`. */
export function defers(mode: ToolsMode, budget: number, view: Pick<SessionView, 'tools' | 'cost'>): boolean {
  if (mode !== 'auto') return mode === 'deferred';
  return view.tools.length > DEFER_TOOLS || view.cost.definitions > budget * DEFER_SHARE;
}

const invalid = (message: string): AlbedoError => new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, { outcome: 'not_run' });
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** mcp_search_tools' arguments: `query` (a non-empty string), `limit` (1–20; null or absent: the default). */
export function searchArgs(args: unknown): { query: string; limit: number } {
  if (!isObject(args) || typeof args.query !== 'string' || !args.query.trim())
    throw invalid(`${SEARCH_TOOL} needs a query (a non-empty string)`);
  if (args.query.length > MAX_QUERY) throw invalid(`the query is at most ${MAX_QUERY} characters`);
  const l = args.limit ?? DEFAULT_SEARCH_LIMIT;
  if (!(typeof l === 'number' && Number.isInteger(l) && l >= 1 && l <= MAX_SEARCH_LIMIT))
    throw invalid(`limit must be an integer from 1 to ${MAX_SEARCH_LIMIT}`);
  return { query: args.query, limit: l };
}

/** mcp_read_result's arguments: the id and the offset (0 when null or absent). */
export function readArgs(args: unknown): { id: string; offset: number } {
  if (!isObject(args) || typeof args.id !== 'string' || !args.id) throw invalid(`${READ_TOOL} needs the id of a kept result`);
  const offset = args.offset ?? 0;
  if (!(typeof offset === 'number' && Number.isSafeInteger(offset) && offset >= 0)) throw invalid('offset must be a non-negative integer');
  return { id: args.id, offset };
}

/** mcp_call_tool's arguments: the name and the tool's own arguments (`arguments`, or `arguments_json` parsed). */
export function callArgs(args: unknown): { name: string; args: unknown } {
  if (!isObject(args) || typeof args.name !== 'string' || !args.name) throw invalid(`${CALL_TOOL} needs the name of the tool to call`);
  if (args.arguments !== undefined && args.arguments !== null && args.arguments_json !== undefined && args.arguments_json !== null) {
    throw invalid('give arguments or arguments_json, not both');
  }
  if (args.arguments_json !== undefined && args.arguments_json !== null) {
    if (typeof args.arguments_json !== 'string') throw invalid('arguments_json must be a JSON object written as text');
    let parsed: unknown;
    try {
      parsed = JSON.parse(args.arguments_json || '{}');
    } catch {
      throw invalid('arguments_json is not valid JSON');
    }
    if (!isObject(parsed)) throw invalid('arguments_json must be a JSON object');
    return { name: args.name, args: parsed };
  }
  const a = args.arguments ?? {};
  if (!isObject(a)) throw invalid('arguments must be an object');
  return { name: args.name, args: a };
}

export interface FoundTool extends ModelTool {
  server: string;
  score: number;
}

/**
 * One session's deferred state over its mirrored views: the search index of
 * the current generation (built on first use), and the loaded names.
 */
export class Deferred {
  readonly #fixed: ModelTool[];
  #view: SessionView | null = null;
  #search: ToolSearch | null = null;
  #byName = new Map<string, ModelTool>();
  /** Loaded advertised names, in the order they were found. */
  #loaded: string[] = [];

  /** `loaded`: the names a restored session had loaded (its record's), kept in front. */
  constructor(fixed: ModelTool[], loaded: readonly string[] = []) {
    this.#fixed = fixed;
    this.#loaded = [...loaded];
  }

  /** A new generation: the index is rebuilt when next searched; loaded tools that are gone leave the list. */
  setView(view: SessionView): void {
    if (this.#view === view) return;
    this.#view = view;
    this.#search = null;
    this.#byName = new Map(view.tools.map((t) => [t.name, t]));
    this.#loaded = this.#loaded.filter((n) => this.#byName.has(n));
  }

  /** The fixed definitions (search, call, read). */
  get fixed(): ModelTool[] {
    return this.#fixed;
  }

  /** The definitions the model is given: the fixed three, the alwaysLoad ones, then the loaded ones in the order found. */
  tools(): ModelTool[] {
    const view = this.#view!;
    const always = new Set(view.alwaysLoad);
    const out = [...this.#fixed, ...view.tools.filter((t) => always.has(t.name))];
    for (const n of this.#loaded) if (!always.has(n)) out.push(this.#byName.get(n)!);
    return out;
  }

  /** The loaded names (alwaysLoad ones first), which only grow within a generation. */
  loaded(): string[] {
    const always = this.#view!.alwaysLoad;
    const set = new Set(always);
    return [...always, ...this.#loaded.filter((n) => !set.has(n))];
  }

  /** Searches the generation's definitions; what it finds is loaded (`grew` says whether the list did). */
  search(query: string, limit = DEFAULT_SEARCH_LIMIT, grew?: (loaded: string[]) => void): FoundTool[] {
    const view = this.#view!;
    this.#search ??= new ToolSearch(view.routes.map(([name, route]) => ({ tool: this.#byName.get(name)!, route })));
    const hits: SearchHit[] = this.#search.search(query, limit);
    const known = new Set(this.#loaded);
    const before = this.#loaded.length;
    for (const h of hits) {
      if (!known.has(h.name)) {
        this.#loaded.push(h.name);
        known.add(h.name);
      }
    }
    if (this.#loaded.length > before) grew?.([...this.#loaded]);
    return hits.map((h) => ({
      ...this.#byName.get(h.name)!,
      server: h.server,
      score: h.match === 'text' ? Math.round(h.score * 1000) / 1000 : h.score,
    }));
  }
}

/** A description's first line (its first sentence when that is shorter), at most 300 characters. */
export function oneLine(text: string): string {
  const line =
    text
      .split('\n')
      .find((l) => l.trim())
      ?.trim() ?? '';
  const sentence = /^(.{20,}?[.!?])\s/.exec(line)?.[1] ?? line;
  return sentence.length > 300 ? `${sentence.slice(0, 299)}…` : sentence;
}

/** mcp_search_tools' result as a tool result: the matches as JSON text and as structured content. */
export function searchResult(found: FoundTool[]): {
  content: Array<{ type: 'text'; text: string }>;
  structuredContent: Record<string, unknown>;
} {
  const tools = found.map((t) => ({ name: t.name, server: t.server, description: oneLine(t.description), inputSchema: t.inputSchema }));
  const text = tools.length
    ? JSON.stringify(tools)
    : 'No tool matched. Try a tool or server name, or other words for what the tool should do.';
  return { content: [{ type: 'text', text }], structuredContent: { tools } };
}
