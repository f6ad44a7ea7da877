/**
 * A realistic large catalogue for bench/catalogue.ts: `n` tools whose input
 * schemas follow the shapes real servers list — server-filesystem's
 * (zod-to-json-schema output: draft-07, `additionalProperties: false`),
 * server-everything's (test/fixtures/schemas/everything.json), pydantic-style
 * `$defs`/`$ref` and `anyOf` nullables (FastMCP servers), a GitHub-like
 * issue tracker, the conformance suite's 2020-12 tool and a few of the
 * hand-made hard cases — each varied (property names, descriptions,
 * enums, bounds, extra properties) so that no two schemas are equal and a
 * cache answers none of them. Deterministic for a seed.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Tool } from '../protocol/mcp.ts';

// Not bench/lib.ts's ROOT: importing lib.ts loads the SDK client, which would count in the children's peak RSS.
const ROOT = fileURLToPath(new URL('..', import.meta.url));

type S = Record<string, unknown>;
const fixture = (name: string): S => JSON.parse(readFileSync(path.join(ROOT, 'test', 'fixtures', 'schemas', name), 'utf8'));

/** mulberry32: small, fast, deterministic. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const WORDS = [
  'file',
  'path',
  'project',
  'issue',
  'record',
  'query',
  'entry',
  'branch',
  'item',
  'note',
  'event',
  'user',
  'page',
  'table',
  'ticket',
];
const VERBS = ['read', 'write', 'list', 'search', 'create', 'update', 'delete', 'get', 'move', 'sync', 'export', 'import', 'find', 'check'];
const LOREM =
  'The operation works on the given target and returns a structured summary of what it found, ' +
  'including counts and the first matching lines. ';

interface Gen {
  r: () => number;
  i: number;
  pick<T>(xs: readonly T[]): T;
  word(): string;
  desc(min: number, max: number): string;
}

function gen(seed: number, i: number): Gen {
  const r = rng(seed * 1_000_003 + i);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  return {
    r,
    i,
    pick,
    word: () => pick(WORDS),
    desc: (min, max) => {
      const len = min + Math.floor(r() * (max - min));
      return `(${i}) ${LOREM.repeat(Math.ceil(len / LOREM.length) + 1).slice(0, len)}`;
    },
  };
}

const draft07 = (properties: S, required: string[], g: Gen): S => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
  $schema: 'http://json-schema.org/draft-07/schema#',
  ...(g.r() < 0.3 ? { description: g.desc(20, 120) } : {}),
});

/** A few optional properties real tools add, named and shaped variously. */
function extras(g: Gen): S {
  const out: S = {};
  const n = Math.floor(g.r() * 4);
  for (let k = 0; k < n; k++) {
    const name = `${g.word()}${g.pick(['', 'Id', '_name', 'Count', 's'])}${k}`;
    out[name] = g.pick<() => S>([
      () => ({ type: 'string', description: g.desc(10, 80) }),
      () => ({ type: 'integer', minimum: 0, maximum: 10 + Math.floor(g.r() * 1000), default: 1 }),
      () => ({ type: 'boolean', default: g.r() < 0.5 }),
      () => ({ type: 'array', items: { type: 'string' }, description: g.desc(5, 40) }),
      () => ({ type: 'string', enum: Array.from({ length: 2 + Math.floor(g.r() * 30) }, (_, e) => `${g.word()}_${e}`) }),
    ])();
  }
  return out;
}

const SHAPES: Array<(g: Gen) => S> = [
  // server-filesystem
  (g) =>
    draft07(
      {
        [g.pick(['path', 'filePath', 'target_path'])]: { type: 'string' },
        tail: { type: 'number', description: 'If provided, returns only the last N lines of the file' },
        head: { type: 'number', description: 'If provided, returns only the first N lines of the file' },
        ...extras(g),
      },
      [],
      g,
    ),
  (g) =>
    draft07({ paths: { type: 'array', items: { type: 'string' }, minItems: 1, description: g.desc(10, 60) }, ...extras(g) }, ['paths'], g),
  (g) =>
    draft07({ path: { type: 'string' }, content: { type: 'string', description: g.desc(0, 40) }, ...extras(g) }, ['path', 'content'], g),
  (g) =>
    draft07(
      {
        path: { type: 'string' },
        edits: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['oldText', 'newText'],
            properties: {
              oldText: { type: 'string', description: 'Text to search for - must match exactly' },
              newText: { type: 'string', description: g.desc(10, 50) },
            },
          },
        },
        dryRun: { type: 'boolean', default: false, description: 'Preview changes using git-style diff format' },
        ...extras(g),
      },
      ['path', 'edits'],
      g,
    ),
  (g) =>
    draft07(
      {
        path: { type: 'string' },
        sortBy: { type: 'string', enum: ['name', 'size', ...(g.r() < 0.5 ? ['mtime'] : [])], default: 'name' },
      },
      ['path'],
      g,
    ),
  (g) =>
    draft07(
      { path: { type: 'string' }, excludePatterns: { type: 'array', items: { type: 'string' }, default: [] }, ...extras(g) },
      ['path'],
      g,
    ),
  (g) => draft07({ source: { type: 'string' }, destination: { type: 'string' }, ...extras(g) }, ['source', 'destination'], g),
  (g) =>
    draft07(
      {
        path: { type: 'string' },
        pattern: { type: 'string', description: g.desc(5, 60) },
        excludePatterns: { type: 'array', items: { type: 'string' } },
      },
      ['path', 'pattern'],
      g,
    ),
  // pydantic / FastMCP: titles, $defs and $ref, anyOf nullables
  (g) => {
    const item = `${g.pick(['Item', 'Entry', 'Row', 'Filter'])}${g.i % 7}`;
    return {
      type: 'object',
      title: `${g.pick(VERBS)}Arguments`,
      $defs: {
        [item]: {
          type: 'object',
          title: item,
          required: ['key'],
          properties: {
            key: { type: 'string', title: 'Key' },
            value: { anyOf: [{ type: 'string' }, { type: 'null' }], default: null, title: 'Value' },
            weight: { anyOf: [{ type: 'number', minimum: 0 }, { type: 'null' }], title: 'Weight' },
          },
        },
      },
      properties: {
        items: { type: 'array', items: { $ref: `#/$defs/${item}` }, title: 'Items', description: g.desc(10, 90) },
        limit: { anyOf: [{ type: 'integer', maximum: 500 }, { type: 'null' }], default: 50, title: 'Limit' },
        ...extras(g),
      },
      required: ['items'],
    };
  },
  // issue tracker
  (g) => ({
    type: 'object',
    properties: {
      owner: { type: 'string', description: 'Repository owner' },
      repo: { type: 'string', description: 'Repository name' },
      title: { type: 'string', maxLength: 256 },
      body: { type: 'string', description: g.desc(0, 300) },
      labels: { type: 'array', items: { type: 'string' }, uniqueItems: true },
      state: { type: 'string', enum: ['open', 'closed', ...(g.r() < 0.3 ? ['all'] : [])] },
      milestone: { type: ['integer', 'null'] },
      ...extras(g),
    },
    required: ['owner', 'repo', ...(g.r() < 0.7 ? ['title'] : [])],
  }),
  // a long description (bounded to 1,024 with the cut marked) and a long enum
  (g) => ({
    type: 'object',
    description: g.desc(900, 2_500),
    properties: {
      region: { type: 'string', enum: Array.from({ length: 50 + Math.floor(g.r() * 400) }, (_, e) => `r-${g.i}-${e}`) },
      query: { type: 'string', description: g.desc(100, 1_400) },
    },
    required: ['query'],
  }),
];

/** The corpus of real schemas (server-everything, conformance, a few hard cases), varied per tool. */
function realShapes(): Array<(g: Gen) => S> {
  const everything = (fixture('everything.json').tools as Array<{ inputSchema: S }>).map((x) => x.inputSchema);
  const conformance = (fixture('conformance.json').tools as Array<{ inputSchema: S }>).map((x) => x.inputSchema);
  const hard = Object.entries(fixture('hard.json').cases as Record<string, unknown>)
    .filter(([, v]) => typeof v === 'object' && v !== null && (v as S).type === 'object')
    .map(([, v]) => v as S);
  const vary =
    (base: S) =>
    (g: Gen): S => {
      const s = structuredClone(base);
      s.description = g.desc(10, 200);
      const props = (s.properties ?? {}) as S;
      s.properties = { ...props, ...extras(g) };
      return s;
    };
  // Real catalogues are mostly plain: the hard cases are a few percent of the tools.
  return [...everything.map(vary), ...conformance.map(vary), ...hard.slice(0, 4).map(vary)];
}

/** `n` tools of one server, every schema distinct. */
export function catalogueCorpus(n: number, seed = 1): Tool[] {
  const shapes = [...SHAPES, ...realShapes()];
  return Array.from({ length: n }, (_, i) => {
    const g = gen(seed, i);
    const shape = g.r() < 0.6 ? g.pick(SHAPES) : g.pick(shapes);
    const inputSchema = shape(g);
    // Distinct from every other tool's: a property (else the root) says which tool it is, as real descriptions differ.
    const props = Object.values((inputSchema.properties ?? {}) as Record<string, S>);
    const bare = props.find((x) => typeof x === 'object' && x !== null && !('description' in x) && !('$ref' in x));
    if (bare) bare.description = g.desc(10, 60);
    else inputSchema.description = `${String(inputSchema.description ?? '')} (tool ${i})`;
    return { name: `${g.pick(VERBS)}_${g.word()}_${i}`, description: g.desc(20, g.r() < 0.05 ? 2_000 : 300), inputSchema };
  });
}
