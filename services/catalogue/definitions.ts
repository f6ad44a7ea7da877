/**
 * Model-facing tool definitions from saved catalogues (docs/design.md, "Names
 * and schemas"): one definition per tool the server's filters allow, one
 * read_resource per server with resources or templates, one get_prompt per
 * server with prompts, each with a routing entry from its name back to the
 * raw (server, operation). Every input schema — the server's and our own —
 * goes through the profile's normaliser; a schema it refuses leaves that
 * definition out with a warning, never sent broken. Pure functions, no I/O.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import type { Catalogue, Tool } from '../../protocol/mcp.ts';
import type { ArgPlan, Identity, InputCheck, LeftOut, ModelTool, Normalise, RouteEntry, ToolFilters } from '../../protocol/catalogue.ts';
import { assignNames, identityKey, type Digest } from './names.ts';
import { boundText, label, promptsDescription, resourcesDescription } from './definitions-text.ts';
import { composePlans, promptArguments } from './prompt-args.ts';
import { planNeeded } from './schema/args.ts';

/** Prompt names become an enum of get_prompt's `name` when there are at most this many, none longer than MAX_ENUM_NAME. */
export const MAX_PROMPT_ENUM = 100;
const MAX_ENUM_NAME = 256;

/** One server's saved catalogue and the tool filters of its config. */
export interface ServerCatalogue {
  server: string;
  catalogue: Catalogue;
  filters?: ToolFilters;
}

export interface DefinitionOptions {
  /** The schema normaliser (services/catalogue/schema/). */
  normalise: Normalise;
  /** The provider profile handed to the normaliser; `portable` when absent. */
  profile?: string;
  /** The digest behind the names (tests force collisions with it); sha-256 when absent. */
  digest?: Digest;
  /**
   * The session has a working directory (SessionOptions.cwd): read_resource takes `export` and `file`, which write the
   * read's blobs to new files there instead of returning their base64 (api/resource-export.ts).
   */
  exports?: boolean;
}

export interface Definitions {
  /** What the model is given, in catalogue order: per server its tools, then read_resource, then get_prompt. */
  tools: ModelTool[];
  /** Advertised name → where a call goes (with the argument plan, when the schema renamed properties). Exactly the names in `tools`. */
  routes: Map<string, RouteEntry>;
  /**
   * Advertised name → the schema a call's arguments are checked against before it is sent (the
   * server's own). Exactly the names in `routes`.
   */
  inputs: Map<string, InputCheck>;
  /** One line per thing left out (naming the server and the tool) and per filter entry that matched nothing. */
  warnings: string[];
  /** The same left-out items, structured (for the session's server states and the MCP context text). */
  leftOut: LeftOut[];
  /** What the normaliser changed, one line per note, prefixed with the server and tool. */
  notes: string[];
}

/** The server's tools its filters allow: `enabledTools` as an allow-list when given, minus `disabledTools`; exact names. */
export function filterTools(tools: readonly Tool[], filters: ToolFilters = {}): Tool[] {
  const allow = filters.enabledTools ? new Set(filters.enabledTools) : null;
  const deny = new Set(filters.disabledTools ?? []);
  return tools.filter((t) => (allow === null || allow.has(t.name)) && !deny.has(t.name));
}

/** The identities a server's catalogue advertises under its filters (before schemas are normalised). */
export function identitiesOf(entry: ServerCatalogue): Identity[] {
  const { server, catalogue } = entry;
  const ids: Identity[] = filterTools(catalogue.tools, entry.filters).map((t) => ({ server, kind: 'tool', tool: t.name }));
  if (catalogue.resources.length || catalogue.resourceTemplates.length) ids.push({ server, kind: 'read_resource' });
  if (catalogue.prompts.length) ids.push({ server, kind: 'get_prompt' });
  return ids;
}

const frameOf = (server: string, tool?: string): string =>
  tool === undefined ? `[server ${label(server)}] ` : `[server ${label(server)}, tool ${label(tool, 128)}] `;

/**
 * get_prompt's input schema: `name` (an enum when small enough) and, when
 * its prompts declare arguments, `arguments` with one string property per
 * declared name (prompt-args.ts), with the plan back to the server's names.
 */
function promptSchema(catalogue: Catalogue): { schema: Record<string, unknown>; plan?: ArgPlan } {
  const names = [...new Set(catalogue.prompts.map((p) => p.name))];
  const name =
    names.length <= MAX_PROMPT_ENUM && names.every((n) => n.length <= MAX_ENUM_NAME)
      ? { type: 'string', description: 'The prompt to get.', enum: names }
      : { type: 'string', description: 'The prompt to get: one of the names listed in the tool description.' };
  const args = promptArguments(catalogue.prompts);
  const schema = {
    type: 'object',
    properties: { name, ...(args.schema ? { arguments: args.schema } : {}) },
    required: args.required ? ['name', 'arguments'] : ['name'],
  };
  return { schema, ...(args.plan ? { plan: args.plan } : {}) };
}

const URI_PROPERTY = {
  type: 'string',
  description: 'The URI of the resource to read: one listed in the tool description, or one made from a listed URI template.',
} as const;

const RESOURCE_SCHEMA = { type: 'object', properties: { uri: URI_PROPERTY }, required: ['uri'] } as const;

/** read_resource in a session with a working directory: its blobs may be written to files there (routing.ts exportOf). */
const EXPORT_RESOURCE_SCHEMA = {
  type: 'object',
  properties: {
    uri: URI_PROPERTY,
    export: {
      type: 'boolean',
      description:
        "true: write the resource's binary (blob) contents to new files in the working directory and return each file's " +
        'path, size and type instead of the base64 data; text contents are returned as usual.',
    },
    file: {
      type: 'string',
      description:
        'With export: the new file, relative to the working directory (an existing file is never replaced; a second ' +
        'blob gets -2 before the extension). Absent: a name made from the URI.',
    },
  },
  required: ['uri'],
} as const;

/** One definition before its schema is normalised and its name assigned. */
interface Candidate {
  id: Identity;
  description: string;
  schema: unknown;
  /** Our own renames in `schema` (get_prompt's arguments), applied after the normaliser's plan. */
  plan?: ArgPlan;
  /** The tool's own result-size hint (`_meta["anthropic/maxResultSizeChars"]`), when it gives a positive integer. */
  maxResultChars?: number;
}

/** The result-size hint a tool declares in its `_meta`, if a positive integer. */
function resultHint(tool: Tool): number | undefined {
  const meta = (tool as { _meta?: unknown })._meta;
  const v = meta && typeof meta === 'object' ? (meta as Record<string, unknown>)['anthropic/maxResultSizeChars'] : undefined;
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : undefined;
}

/**
 * What a server's catalogue offers under its filters, in order: its tools
 * (the first of a name listed twice), then read_resource, then get_prompt.
 * With `out`, filter entries that match nothing and duplicates are reported there.
 */
function candidatesOf(entry: ServerCatalogue, out?: Definitions, exports = false): Candidate[] {
  const { server, catalogue } = entry;
  const list: Candidate[] = [];
  if (out) {
    const offered = new Set(catalogue.tools.map((t) => t.name));
    const f = entry.filters;
    for (const [field, names] of [
      ['enabledTools', f?.enabledTools],
      ['disabledTools', f?.disabledTools],
      ['alwaysLoad', f?.alwaysLoad],
    ] as const) {
      for (const n of names ?? []) {
        if (!offered.has(n)) out.warnings.push(`server ${label(server)}: ${field} names ${label(n, 128)}, which the server does not offer`);
      }
    }
  }
  const seen = new Set<string>();
  for (const tool of filterTools(catalogue.tools, entry.filters)) {
    if (seen.has(tool.name)) {
      // A server that lists one name twice: the first is the tool, as calls by name can reach only one.
      out?.leftOut.push({ server, operation: tool.name, kind: 'tool', reason: 'duplicate', detail: 'listed more than once' });
      out?.warnings.push(`server ${label(server)}: tool ${label(tool.name, 128)} is listed more than once; the first is advertised`);
      continue;
    }
    seen.add(tool.name);
    const text =
      tool.title && tool.description && tool.title !== tool.description
        ? `${tool.title} — ${tool.description}`
        : (tool.description ?? tool.title ?? '');
    const hint = resultHint(tool);
    list.push({
      id: { server, kind: 'tool', tool: tool.name },
      description: frameOf(server, tool.name) + text,
      schema: tool.inputSchema,
      ...(hint ? { maxResultChars: hint } : {}),
    });
  }
  if (catalogue.resources.length || catalogue.resourceTemplates.length) {
    const description = resourcesDescription(frameOf(server), catalogue.resources, catalogue.resourceTemplates, exports);
    list.push({ id: { server, kind: 'read_resource' }, description, schema: exports ? EXPORT_RESOURCE_SCHEMA : RESOURCE_SCHEMA });
  }
  if (catalogue.prompts.length) {
    const { schema, plan } = promptSchema(catalogue);
    list.push({ id: { server, kind: 'get_prompt' }, description: promptsDescription(frameOf(server), catalogue.prompts), schema, plan });
  }
  return list;
}

/**
 * Every input schema catalogueDefinitions would hand the normaliser for these
 * entries, in order: what an asynchronous normaliser must have answered for
 * before the definitions are built (SchemaCache.warm).
 */
export function definitionSchemas(entries: readonly ServerCatalogue[], exports = false): unknown[] {
  return entries.flatMap((e) => candidatesOf(e, undefined, exports).map((c) => c.schema));
}

/** Builds one server's definitions, with names from `nameFor`. */
function build(entry: ServerCatalogue, opts: DefinitionOptions, nameFor: (id: Identity) => string, out: Definitions): void {
  const { server } = entry;
  const profile = opts.profile ?? 'portable';
  for (const { id, description, schema, plan, maxResultChars } of candidatesOf(entry, out, opts.exports)) {
    const operation = id.kind === 'tool' ? id.tool : id.kind;
    const r = opts.normalise(schema, profile);
    const what = id.kind === 'tool' ? `tool ${label(id.tool, 128)}` : id.kind;
    if (!r.ok) {
      out.leftOut.push({ server, operation, kind: id.kind, reason: 'schema_refused', detail: r.reason });
      out.warnings.push(
        `server ${label(server)}: ${what} left out: its input schema cannot be used with the ${profile} profile (${r.reason})`,
      );
      continue;
    }
    const name = nameFor(id);
    if (out.routes.has(name)) throw new AlbedoError('ALBEDO_INTERNAL', `two identities were given the name ${name}`);
    // The argument plan travels with the route: a call restores the server's property names before it is sent.
    const args = composePlans(r.args, plan);
    out.routes.set(name, { ...id, ...(args ? { args } : {}), ...(maxResultChars ? { maxResultChars } : {}) });
    // Calls are checked against the schema as given (not the profile's cut-down copy), once the normaliser's renames are undone.
    out.inputs.set(name, { schema, ...(planNeeded(r.args) ? { args: r.args } : {}) });
    out.tools.push({ name, description: boundText(description), inputSchema: r.schema });
    for (const note of r.notes) out.notes.push(`server ${label(server)}: ${what}: ${note}`);
  }
}

const empty = (): Definitions => ({ tools: [], routes: new Map(), inputs: new Map(), warnings: [], leftOut: [], notes: [] });

/**
 * Definitions for all servers of one session at once. Names are assigned
 * over every server's identities (assignNames), so they are unique in the
 * session; each is the identity's own name (independent of the others)
 * unless a hash collision forced a rehash. Server names must be distinct.
 */
export function catalogueDefinitions(entries: readonly ServerCatalogue[], opts: DefinitionOptions): Definitions {
  const servers = new Set<string>();
  for (const e of entries) {
    if (servers.has(e.server))
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `the server ${label(e.server)} appears twice`, { outcome: 'not_run' });
    servers.add(e.server);
  }
  const names = assignNames(entries.flatMap(identitiesOf), { digest: opts.digest });
  const out = empty();
  for (const e of entries) build(e, opts, (id) => names.get(identityKey(id))!, out);
  return out;
}

/** Definitions for one server alone: catalogueDefinitions of a one-server session. */
export function serverDefinitions(entry: ServerCatalogue, opts: DefinitionOptions): Definitions {
  return catalogueDefinitions([entry], opts);
}

export { resolveCall, type ResolvedCall } from './resolve-call.ts';
