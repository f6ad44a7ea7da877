// Bad input for every route (issue 11, Tests), as a property over the
// daemon's own OpenAPI document: for each operation with a JSON body, a
// valid body is broken by fast-check in the ways its request schema
// forbids — not an object, an unknown field where the schema is strict, a
// field (at any depth the schema describes) of a JSON type it does not
// allow — and for each query parameter with an enum, a value outside it.
// Every such request gets a 4xx with a stable code and a path naming the
// field broken, never a 500 (and a GET or DELETE of any name, id or login
// that is not there: a 400 or 404 at `params`); extensions.json and
// creds.json stay byte for byte as they were, and no session is opened by a
// refused request.
import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { newTag, tempHome } from '../helpers.ts';
import { startDaemon, type Daemon } from './harness.ts';

t.setTimeout(170_000);

type Schema = Record<string, any>;
type JsonType = 'string' | 'number' | 'boolean' | 'null' | 'array' | 'object';
const TYPES: JsonType[] = ['string', 'number', 'boolean', 'null', 'array', 'object'];
const STABLE = new Set(['ALBEDO_INVALID_ARGUMENT', 'ALBEDO_INVALID_CONFIG', 'ALBEDO_NOT_FOUND', 'ALBEDO_TOO_LARGE']);

/**
 * Valid bodies per operation with one; every such operation of the document must be here (a new route gets a row). A body
 * schema that is a union (a server entry: stdio or http) gets one per variant, each broken by its own variant's schema.
 */
const BASES: Record<string, Array<Record<string, unknown>>> = {
  'PATCH /v1/mcp': [{}],
  'PUT /v1/mcp/servers/{name}': [
    { command: 'x', enabled: false },
    { url: 'http://127.0.0.1:1/mcp', enabled: false },
  ],
  'PATCH /v1/mcp/servers/{name}': [{}],
  'POST /v1/sessions': [{}],
  'POST /v1/sessions/{id}/calls': [{ name: 'x/y' }],
  'POST /v1/sessions/{id}/search': [{ query: 'x' }],
  'POST /v1/sessions/{id}/activity': [{ kind: 'submit' }],
  'POST /v1/sessions/{id}/compacted': [{}],
  'POST /v1/sessions/{id}/lease': [{}],
  'PATCH /v1/sessions/{id}': [{ extensions: {} }],
  'POST /v1/auth/logins/{login}/callback': [{ url: 'http://127.0.0.1:1/callback' }],
  'POST /v1/ui/command-line': [{ line: 'x' }],
  'PUT /v1/gateways/{name}': [{ servers: { include: ['srv'] }, tools: 'auto' }, { server: 'srv' }],
  'POST /v1/acp/sessions': [{ cwd: '/', mcpServers: [], agent: { command: 'x', args: [] } }],
  'POST /v1/acp/attach': [{ acpSessionId: 'a', cwd: '/', mcpServers: [], agent: { command: 'x', args: [] } }],
  'PATCH /v1/acp/sessions/{id}': [{ acpSessionId: 'a' }],
  'PUT /v1/acp/sessions/{id}/overlay': [{ mcpServers: [] }],
};

/** The variant of a union body schema `base` is valid for: the object branch holding all its keys and every required one. */
function variantOf(doc: Schema, schema: Schema, base: Record<string, unknown>): Schema {
  const obs = objectBranches(doc, schema);
  if (obs.length <= 1) return schema;
  const fits = obs.find(
    (b) => Object.keys(base).every((k) => Object.hasOwn(b.properties ?? {}, k)) && (b.required ?? []).every((k: string) => k in base),
  );
  if (!fits) throw new Error(`no variant of the schema fits ${JSON.stringify(base)}`);
  return fits;
}

function deref(doc: Schema, s: Schema | undefined): Schema | undefined {
  let cur = s;
  while (cur?.$ref)
    cur = cur.$ref
      .split('/')
      .slice(1)
      .reduce((o: Schema, k: string) => o[k], doc);
  return cur;
}

/** The branches a value may match (anyOf / oneOf flattened). */
function branches(doc: Schema, s: Schema | undefined): Schema[] {
  const r = deref(doc, s);
  if (!r) return [];
  const alts = r.anyOf ?? r.oneOf;
  return alts ? alts.flatMap((b: Schema) => branches(doc, b)) : [r];
}

/** The JSON types a schema allows; null when it allows anything. */
function allowed(doc: Schema, s: Schema | undefined): Set<JsonType> | null {
  const out = new Set<JsonType>();
  for (const b of branches(doc, s)) {
    if (b.type === undefined) return null;
    for (const ty of [].concat(b.type)) out.add(ty === 'integer' ? 'number' : ty);
  }
  return out;
}

const objectBranches = (doc: Schema, s: Schema | undefined): Schema[] =>
  branches(doc, s).filter((b) => [].concat(b.type).includes('object' as never));
const propsOf = (doc: Schema, s: Schema | undefined): Record<string, Schema> =>
  Object.assign({}, ...objectBranches(doc, s).map((b) => b.properties ?? {}));
const strict = (doc: Schema, s: Schema | undefined): boolean => {
  const obs = objectBranches(doc, s);
  return obs.length > 0 && obs.every((b) => b.additionalProperties === false && b.properties);
};

const valueOf = (ty: JsonType): fc.Arbitrary<unknown> =>
  ({
    string: fc.string({ maxLength: 20 }),
    number: fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })),
    boolean: fc.boolean(),
    null: fc.constant(null),
    array: fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
    object: fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
  })[ty];

interface Broken {
  body: unknown;
  /** The path the error must start with. */
  at: Array<string | number>;
  what: string;
}

/** Every way fast-check may break `base` at `at`, by the schema of that spot (descending into objects it describes). */
function breakings(
  doc: Schema,
  schema: Schema,
  base: Record<string, unknown>,
  at: string[] = ['body'],
  depth = 0,
): Array<fc.Arbitrary<Broken>> {
  const out: Array<fc.Arbitrary<Broken>> = [];
  const put = (v: unknown, key?: string): unknown => {
    const copy = structuredClone(base) as Record<string, unknown>;
    if (key === undefined) return v;
    Object.defineProperty(copy, key, { value: v, enumerable: true, writable: true, configurable: true });
    return copy;
  };
  const props = propsOf(doc, schema);
  if (strict(doc, schema)) {
    const unknown = fc.string({ minLength: 1, maxLength: 12 }).filter((k) => !Object.hasOwn(props, k));
    out.push(
      fc.tuple(unknown, fc.jsonValue({ maxDepth: 1 })).map(([k, v]) => ({ body: put(v, k), at: [...at, k], what: `unknown field ${k}` })),
    );
  }
  for (const [key, ps] of Object.entries(props)) {
    const ok = allowed(doc, ps);
    if (ok) {
      const wrong = TYPES.filter((ty) => !ok.has(ty));
      if (wrong.length) {
        const what = [...at.slice(1), key].join('.');
        out.push(
          fc
            .constantFrom(...wrong)
            .chain((ty) => valueOf(ty))
            .map((v) => ({ body: put(v, key), at: [...at, key], what })),
        );
      }
    }
    // Into an object the schema describes: the base's own, else an empty one where that is valid (no required field).
    const inner = objectBranches(doc, ps).find((b) => b.properties && (Object.hasOwn(base, key) || !b.required?.length));
    if (depth < 2 && inner) {
      const sub = (base[key] ?? {}) as Record<string, unknown>;
      for (const arb of breakings(doc, inner, sub, [...at, key], depth + 1)) {
        out.push(arb.map((b) => ({ ...b, body: put(b.body, key) })));
      }
    }
  }
  return out;
}

function errorOk(t: Tap, r: { status: number; body: any }, want: Array<string | number>, what: string): boolean {
  const e = r.body?.error;
  const ok =
    r.status >= 400 &&
    r.status < 500 &&
    STABLE.has(e?.code) &&
    typeof e?.message === 'string' &&
    Array.isArray(e?.path) &&
    want.every((p, i) => e.path[i] === p);
  if (!ok) t.fail(`${what}: ${r.status} ${JSON.stringify(r.body)} (wanted a 4xx at ${JSON.stringify(want)})`);
  return ok;
}
type Tap = { fail(m: string): void };

t.test('generated bad input for every route with a body or an enum: a 4xx naming the field, never a 500, nothing changed', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  writeFileSync(
    path.join(home, 'extensions.json'),
    JSON.stringify({ mcp: { servers: { srv: { command: 'x', enabled: false } } } }, null, 2),
  );
  const d: Daemon = await startDaemon(t, home, { tag });
  t.equal(
    (await d.call('PATCH', '/v1/mcp/servers/srv', { body: { secrets: { env: { K: 'kept-secret-1x' } } } })).status,
    200,
    'creds.json exists',
  );
  const session = (await d.call('POST', '/v1/sessions', { body: {} })).body.id as string;
  const files = (): Array<Buffer | null> =>
    ['extensions.json', 'creds.json'].map((f) => (existsSync(path.join(home, f)) ? readFileSync(path.join(home, f)) : null));
  const before = files();
  const doc = (await d.call('GET', '/openapi.json')).body as Schema;
  const fill = (p: string): string => p.replace('{name}', 'srv').replace('{id}', session).replace('{login}', 'mcp:srv');

  const withBody = Object.entries<Schema>(doc.paths).flatMap(([p, ops]) =>
    Object.entries<Schema>(ops)
      .filter(([, op]) => op.requestBody)
      .map(([m, op]) => ({
        key: `${m.toUpperCase()} ${p}`,
        method: m.toUpperCase(),
        p,
        schema: op.requestBody.content['application/json'].schema,
      })),
  );
  t.same(withBody.map((o) => o.key).sort(), Object.keys(BASES).sort(), 'every operation with a body has a valid one here');

  let runs = 0;
  const notObject = fc
    .oneof(fc.integer(), fc.string(), fc.boolean(), fc.constant(null), fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }))
    .map((body): Broken => ({ body, at: ['body'], what: 'not an object' }));
  for (const op of withBody) {
    for (const base of BASES[op.key] ?? []) {
      const arb = fc.oneof(notObject, ...breakings(doc, variantOf(doc, deref(doc, op.schema)!, base), base));
      await fc.assert(
        fc.asyncProperty(arb, async (b) => {
          runs++;
          const r = await d.call(op.method, fill(op.p), { body: b.body });
          return errorOk(t, r, b.at, `${op.key} (${b.what}) ${JSON.stringify(b.body).slice(0, 200)}`);
        }),
        { numRuns: 60 },
      );
    }
  }

  // Query parameters with an enum: a value outside it.
  for (const [p, ops] of Object.entries<Schema>(doc.paths)) {
    for (const [m, op] of Object.entries<Schema>(ops)) {
      for (const prm of (op.parameters ?? []).filter((x: Schema) => x.in === 'query' && x.schema?.enum)) {
        const bad = fc.string({ minLength: 1, maxLength: 10 }).filter((v) => !prm.schema.enum.includes(v));
        await fc.assert(
          fc.asyncProperty(bad, async (v) => {
            runs++;
            const body = BASES[`${m.toUpperCase()} ${p}`]?.[0];
            const r = await d.call(m.toUpperCase(), `${fill(p)}?${prm.name}=${encodeURIComponent(v)}`, body === undefined ? {} : { body });
            return errorOk(t, r, ['query', prm.name], `${m.toUpperCase()} ${p}?${prm.name}=${v}`);
          }),
          { numRuns: 20 },
        );
      }
    }
  }
  // Path parameters: any string (URL-encoded) where no such server, session or sign-in is; GET and DELETE answer 400 or 404.
  // Not `.` nor `..`: encodeURIComponent leaves them, and a URL's dot segments are removed before the request is sent
  // (RFC 3986 5.2.4), so no client can name such a parameter (a seed drew "." and the request went to the parent).
  const param = fc
    .string({ minLength: 1, maxLength: 30, unit: 'grapheme' })
    .filter((v) => v !== 'srv' && v !== session && v !== 'mcp:srv' && v !== '.' && v !== '..');
  for (const [p, ops] of Object.entries<Schema>(doc.paths)) {
    const names = [...p.matchAll(/\{(\w+)\}/g)].map((x) => x[1]!);
    for (const m of Object.keys(ops).filter((x) => (x === 'get' && !p.endsWith('/events')) || x === 'delete')) {
      if (!names.length) continue;
      await fc.assert(
        fc.asyncProperty(param, async (v) => {
          runs++;
          const target = p.replace(/\{(\w+)\}/g, (_, n: string) =>
            n === 'login' ? `mcp:${encodeURIComponent(v)}` : encodeURIComponent(v),
          );
          const r = await d.call(m.toUpperCase(), target);
          return errorOk(t, r, ['params'], `${m.toUpperCase()} ${target}`);
        }),
        { numRuns: 15 },
      );
    }
  }
  t.ok(runs > 600, `${runs} bad requests`);
  t.same(files(), before, 'extensions.json and creds.json byte for byte as they were');
  t.same(
    (await d.call('GET', '/v1/sessions')).body.sessions.map((s: { id: string }) => s.id),
    [session],
    'no refused request opened a session',
  );
});
