/**
 * What a caller named, resolved to one advertised definition through the
 * routing table (never by parsing an advertised name): the advertised name
 * itself; `server/tool` with the raw names (`server/read_resource` and
 * `server/get_prompt` reach the pseudo-operations when the server has no
 * tool of that name); a raw tool name only one server of the session has;
 * the advertised name without its hash (`mcp_everything_echo`) when only one
 * definition has it. A name several definitions answer to is refused with
 * the candidates; one that answers to nothing, with the nearest names.
 * Pure functions, no I/O.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import type { RouteEntry } from '../../protocol/catalogue.ts';
import { label } from './definitions-text.ts';
import { HASH_CHARS } from './names.ts';
import { nearest, rank } from './nearest.ts';

/** What a call name resolved to: the advertised name and where it goes. */
export interface ResolvedCall {
  name: string;
  route: RouteEntry;
}

/** Candidates named in a refusal's message (`data.candidates` lists them all, up to MAX_CANDIDATES). */
const NAMED = 5;
const MAX_CANDIDATES = 50;

/** The raw operation a route stands for: the tool's name, or `read_resource` / `get_prompt`. */
export const operationOf = (r: RouteEntry): string => (r.kind === 'tool' ? r.tool : r.kind);

const HASH_TAIL = new RegExp(`_[a-z2-7]{${HASH_CHARS}}(?:_\\d+)?$`);

/** An advertised name without its hash (and the counter a collision may have added): `mcp_everything_echo`. */
export const withoutHash = (name: string): string => name.replace(HASH_TAIL, '');

/** A raw name as a message shows it: bare when plain, else quoted (server text is data). */
const shown = (s: string): string => (/^[\w.@:-]{1,64}$/.test(s) ? s : label(s));

/** `mcp_… (server/tool)`: an advertised name and what it stands for. */
export const describe = ([name, r]: [string, RouteEntry]): string => `${name} (${shown(r.server)}/${shown(operationOf(r))})`;

const listed = (all: Array<[string, RouteEntry]>, last: string): string => {
  const named = all.slice(0, NAMED).map(describe);
  if (all.length > NAMED) return `${named.join(', ')} ${last} ${all.length - NAMED} more`;
  return named.length > 1 ? `${named.slice(0, -1).join(', ')} ${last} ${named.at(-1)}` : named.join('');
};

/** The one route of `found`; several: refused, listing them. */
function one(name: string, found: Array<[string, RouteEntry]>): ResolvedCall | undefined {
  if (found.length === 1) return { name: found[0]![0], route: found[0]![1] };
  if (!found.length) return undefined;
  const message =
    `${label(name, 128)} names more than one tool: ${listed(found, 'and')}; ` + 'call one by its advertised name or as server/tool';
  const candidates = found.slice(0, MAX_CANDIDATES).map(([n]) => n);
  throw new AlbedoError('ALBEDO_NOT_FOUND', message, { outcome: 'not_run', data: { name, ambiguous: true, candidates } });
}

function matching(routes: ReadonlyMap<string, RouteEntry>, test: (name: string, r: RouteEntry) => boolean): Array<[string, RouteEntry]> {
  const out: Array<[string, RouteEntry]> = [];
  for (const e of routes) if (test(e[0], e[1])) out.push(e);
  return out;
}

/**
 * How near a definition is to a name that missed, by the form the caller
 * used: `server/tool` by the tool when the server is the one named (else
 * the whole), an advertised name without the hashes, else the raw name
 * (or the server and the raw name, for "everything echo").
 */
function rankFor(name: string, first: { server: string; tool: string } | undefined): (e: [string, RouteEntry]) => number {
  if (first) return ([, r]) => (r.server === first.server ? rank(first.tool, operationOf(r)) : rank(name, `${r.server}/${operationOf(r)}`));
  if (name.includes('/')) return ([, r]) => rank(name, `${r.server}/${operationOf(r)}`);
  if (name.startsWith('mcp_')) {
    const typed = withoutHash(name);
    return ([n]) => rank(typed, withoutHash(n));
  }
  return ([, r]) => Math.min(rank(name, operationOf(r)), rank(name, `${r.server} ${operationOf(r)}`));
}

/**
 * Resolves what a caller named (see the file's comment). `server/tool`
 * splits at a `/` whose left side is a configured server (`servers`); tool names may contain `/` and `_`, and when server names
 * themselves contain `/` (`host/path`) every split is tried: one that names
 * a routed definition wins, two make the name ambiguous. A raw name and a
 * name without its hash are taken together: a name that is one server's
 * raw tool name and another's advertised name without its hash is
 * ambiguous (a server cannot take another's calls by naming a tool
 * `mcp_<server>_<tool>`). O(routes) for every
 * form but the advertised name. Throws ALBEDO_NOT_FOUND (`not_run`): for a
 * name several definitions answer to, `data` is `{ name, ambiguous: true,
 * candidates }` (advertised names); for a miss, `{ name, suggestions }`
 * (the nearest advertised names, maybe none) plus `{ server, tool }` of the
 * first split that named a configured server, so the caller can say why
 * that server has no such tool (left out, needs a sign-in, filtered).
 */
export function resolveCall(routes: ReadonlyMap<string, RouteEntry>, name: string, servers: Iterable<string>): ResolvedCall {
  const route = routes.get(name);
  if (route) return { name, route };
  const configured = servers instanceof Set ? (servers as ReadonlySet<string>) : new Set(servers);
  let first: { server: string; tool: string } | undefined;
  // Every split that names a routed definition: two (servers `a` and `a/b`, tools `b/c` and `c`) make the name ambiguous.
  const split = new Map<string, RouteEntry>();
  for (let i = name.indexOf('/'); i >= 0; i = name.indexOf('/', i + 1)) {
    const server = name.slice(0, i);
    if (!configured.has(server)) continue;
    const tool = name.slice(i + 1);
    first ??= { server, tool };
    let pseudo: [string, RouteEntry] | undefined;
    let hit: [string, RouteEntry] | undefined;
    for (const [advertised, r] of routes) {
      if (r.server !== server) continue;
      if (r.kind === 'tool' && r.tool === tool) {
        hit = [advertised, r];
        break;
      }
      if (r.kind !== 'tool' && r.kind === tool) pseudo ??= [advertised, r];
    }
    hit ??= pseudo;
    if (hit) split.set(hit[0], hit[1]);
  }
  const bySplit = one(name, [...split]);
  if (bySplit) return bySplit;
  // A raw name (a tool of that name, else a pseudo-operation of that name) and an advertised name without its hash, together:
  // another server's tool named `mcp_docs_search` must not take the calls meant for docs' `search` (a name both answer to is ambiguous).
  const raw = matching(routes, (_, r) => r.kind === 'tool' && r.tool === name);
  const found = new Map(raw.length ? raw : matching(routes, (_, r) => r.kind !== 'tool' && r.kind === name));
  if (name.startsWith('mcp_')) for (const [n, r] of routes) if (withoutHash(n) === name) found.set(n, r);
  const resolved = one(name, [...found]);
  if (resolved) return resolved;
  const near = nearest(routes, rankFor(name, first));
  const what = first
    ? `server ${label(first.server)} has no advertised tool ${label(first.tool, 128)}`
    : `no advertised tool is named ${label(name, 128)}`;
  const hint = near.length ? `; did you mean ${listed(near, 'or')}?` : '';
  throw new AlbedoError('ALBEDO_NOT_FOUND', what + hint, {
    outcome: 'not_run',
    data: { name, ...first, suggestions: near.map(([n]) => n) },
  });
}
