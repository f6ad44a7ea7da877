// The fast paths that spare every reply a zod parse must give zod's verdict and zod's value,
// key order included, or step aside: checked against the schemas themselves, on hand-picked
// corner cases and on many generated results near the schema's edges.
import t, { type Test } from 'tap';
import { callToolResultSchema } from '../../protocol/mcp.ts';
import { classify, successSchema } from '../../protocol/jsonrpc.ts';
import { callToolResultFast } from '../../services/transport/result-fast-path.ts';

/** JSON text parsed as a link parses it (so a "__proto__" key is an own property, as from a server). */
const wire = (text: string): Record<string, unknown> => JSON.parse(text) as Record<string, unknown>;

function sameAsZod(t: Test, raw: Record<string, unknown>, label: string): boolean {
  const fast = callToolResultFast(raw);
  const zod = callToolResultSchema.safeParse(raw);
  if (fast === undefined) return false;
  t.ok(zod.success, `${label}: the fast path accepts only what zod accepts`);
  if (zod.success) t.equal(JSON.stringify(fast), JSON.stringify(zod.data), `${label}: the same value, keys in the same order`);
  return true;
}

t.test("tools/call results: corner cases give zod's verdict and value", async (t) => {
  const taken = [
    '{"content":[{"type":"text","text":"a"}]}',
    '{"resultType":"complete","content":[{"type":"text","text":"hi"}]}',
    '{"isError":true,"zz":1,"content":[{"text":"a","type":"text","x":{"y":[1,{"z":2}]}}],"_meta":{"a":1},"structuredContent":{"b":2}}',
    '{}',
    '{"content":[]}',
    '{"content":[{"2":"two","type":"image","1":"one","data":"AA=="}]}',
    '{"7":"seven","content":[{"type":"text"}],"structuredContent":{"3":1,"k":null}}',
    '{"content":[{"type":""}],"isError":false}',
    '{"content":[{"type":"text","annotations":{"__proto__":{"deep":1}}}]}',
  ];
  for (const text of taken) t.ok(sameAsZod(t, wire(text), text), `${text} takes the fast path`);
  const declined = [
    '{"content":{"type":"text"}}',
    '{"content":[{"text":"no type"}]}',
    '{"content":[{"type":1}]}',
    '{"content":[null]}',
    '{"content":[["type"]]}',
    '{"isError":"yes","content":[]}',
    '{"structuredContent":[1,2],"content":[]}',
    '{"structuredContent":null,"content":[]}',
    '{"__proto__":{"polluted":1},"content":[]}',
    '{"content":[{"type":"text","__proto__":{"p":1}}]}',
    '{"content":[],"structuredContent":{"__proto__":5,"k":1}}',
    '{"content":[],"constructor":{"name":"x"}}',
  ];
  for (const text of declined) {
    t.equal(callToolResultFast(wire(text)), undefined, `${text} is left to zod`);
  }
  const sparse = { content: [{ type: 'text' }, , { type: 'text' }] } as unknown as Record<string, unknown>;
  t.equal(callToolResultFast(sparse), undefined, 'a sparse array is left to zod');
  const inherited = { content: [Object.create({ type: 'text' }) as Record<string, unknown>] };
  t.equal(callToolResultFast(inherited), undefined, 'an item whose type is inherited is left to zod');
  const classy = new (class {
    content = [];
  })() as unknown as Record<string, unknown>;
  t.equal(callToolResultFast(classy), undefined, 'a class instance is left to zod');
});

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

t.test("tools/call results: generated near the schema's edges", async (t) => {
  const r = rng(20261201);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const keys = [
    'type',
    'text',
    'content',
    'isError',
    'structuredContent',
    '__proto__',
    'constructor',
    '0',
    '12',
    '_meta',
    'resultType',
    'x',
  ];
  const scalar = (): string => pick(['1', '-0.5', '"s"', '""', 'true', 'false', 'null']);
  const value = (depth: number): string => {
    const k = r();
    if (depth > 3 || k < 0.35) return scalar();
    if (k < 0.55) return `[${Array.from({ length: Math.floor(r() * 3) }, () => value(depth + 1)).join(',')}]`;
    return object(depth + 1);
  };
  const object = (depth: number): string => {
    const n = Math.floor(r() * 4);
    const used = new Set<string>();
    const parts: string[] = [];
    for (let i = 0; i < n; i++) {
      const key = pick(keys);
      if (used.has(key)) continue;
      used.add(key);
      parts.push(`${JSON.stringify(key)}:${key === 'type' && r() < 0.8 ? '"text"' : value(depth)}`);
    }
    return `{${parts.join(',')}}`;
  };
  const item = (): string =>
    r() < 0.85 ? (r() < 0.5 ? `{"type":"text","text":"a"${r() < 0.3 ? `,"x":${value(2)}` : ''}}` : object(2)) : value(2);
  const result = (): string => {
    const parts: string[] = [];
    const order = ['content', 'isError', 'structuredContent', 'resultType', '_meta', '9', '__proto__'].sort(() => r() - 0.5);
    for (const key of order) {
      if (r() < 0.45) continue;
      let v: string;
      if (key === 'content') v = r() < 0.9 ? `[${Array.from({ length: Math.floor(r() * 3) }, item).join(',')}]` : value(1);
      else if (key === 'isError') v = r() < 0.8 ? pick(['true', 'false']) : value(1);
      else if (key === 'structuredContent') v = r() < 0.7 ? object(1) : value(1);
      else if (key === '__proto__') {
        if (r() < 0.7) continue;
        v = object(1);
      } else v = value(1);
      parts.push(`${JSON.stringify(key)}:${v}`);
    }
    return `{${parts.join(',')}}`;
  };
  let taken = 0;
  let declinedValid = 0;
  for (let i = 0; i < 4000; i++) {
    const text = result();
    const raw = wire(text);
    if (sameAsZod(t, raw, text)) taken++;
    else if (callToolResultSchema.safeParse(raw).success) declinedValid++;
  }
  t.ok(taken > 1000, `most valid results take the fast path (${taken} taken, ${declinedValid} valid ones left to zod)`);
});

t.test("classify: a plain success response takes the fast path with zod's verdict", async (t) => {
  const cases = [
    '{"jsonrpc":"2.0","id":1,"result":{"a":1,"b":[2]}}',
    '{"jsonrpc":"2.0","id":"x","result":{}}',
    '{"jsonrpc":"2.0","id":9007199254740991,"result":{"0":1}}',
    '{"jsonrpc":"2.0","id":9007199254740992,"result":{}}',
    '{"jsonrpc":"2.0","id":1.5,"result":{}}',
    '{"jsonrpc":"2.0","id":null,"result":{}}',
    '{"jsonrpc":"2.0","result":{}}',
    '{"jsonrpc":"1.0","id":1,"result":{}}',
    '{"jsonrpc":"2.0","id":1,"result":[]}',
    '{"jsonrpc":"2.0","id":1,"result":"text"}',
    '{"jsonrpc":"2.0","id":1,"result":null}',
    '{"jsonrpc":"2.0","id":1,"result":{"__proto__":{"x":1},"k":2}}',
    '{"jsonrpc":"2.0","id":1,"result":{"constructor":{}}}',
    '{"jsonrpc":"2.0","id":1,"result":{"ok":true},"extra":1,"error":{"code":1}}',
  ];
  for (const text of cases) {
    const value = wire(text);
    const c = classify(value);
    const z = successSchema.safeParse(value);
    t.equal(c.kind, z.success ? 'response' : 'invalid', `${text}: the same verdict`);
    if (z.success && c.kind === 'response') t.equal(JSON.stringify(c.message), JSON.stringify(z.data), `${text}: the same message`);
    if (!z.success && c.kind === 'invalid') t.equal(c.reason, `bad response: ${z.error.issues[0]?.message}`, `${text}: zod's reason`);
  }
  const plain = wire(cases[0]!);
  const c = classify(plain);
  t.ok(c.kind === 'response' && 'result' in c.message && c.message.result === plain.result, 'a plain result is not copied');
});
