import t from 'tap';
import fc from 'fast-check';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  NAME_RULE,
  MAX_NAME_LENGTH,
  assignNames,
  identityKey,
  nameOf,
  pseudoName,
  sanitise,
  sha256,
  toolName,
  type Digest,
} from '../../services/catalogue/names.ts';
import type { Identity } from '../../protocol/catalogue.ts';

const NAMES = fileURLToPath(new URL('../../services/catalogue/names.ts', import.meta.url));

// Raw names as servers and configs produce them: any Unicode (lone surrogates included, which JSON allows),
// the separators that must not survive, empty, and 1,000+ characters.
const rawName = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({
    unit: fc.constantFrom('a', 'Z', '7', '_', '-', '.', ':', '/', ' ', 'é', 'ß', '\u0301', '\ud800', '\udc00', '搜'),
    maxLength: 30,
  }),
  fc.string({ unit: 'grapheme', minLength: 1_000, maxLength: 1_300 }),
  fc.string({ unit: 'grapheme-ascii', minLength: 1_000, maxLength: 1_300 }),
);
const identity: fc.Arbitrary<Identity> = fc.oneof(
  fc.record({ server: rawName, kind: fc.constant('tool' as const), tool: rawName }),
  fc.record({ server: rawName, kind: fc.constantFrom('read_resource' as const, 'get_prompt' as const) }),
);

t.test('golden names: a change of the algorithm is caught', async (t) => {
  t.equal(toolName('docs', 'search'), 'mcp_docs_search_dgievgerlq');
  t.equal(toolName('a_b', 'c'), 'mcp_a_b_c_gyzpeblh7m');
  t.equal(toolName('a', 'b_c'), 'mcp_a_b_c_isxlrqicjf', 'the same readable text, another identity, another hash');
  t.equal(pseudoName('docs', 'read_resource'), 'mcp_docs_read_resource_py4ndu5afv');
  t.equal(
    toolName('docs', 'read_resource'),
    'mcp_docs_read_resource_fww5ugrs3g',
    'a tool literally named read_resource is not the pseudo-operation',
  );
  t.equal(pseudoName('docs', 'get_prompt'), 'mcp_docs_get_prompt_7hklpickvf');
  t.equal(toolName('', ''), 'mcp___g6uon6wnd5');
  t.equal(
    toolName('Ünïcødé straße', '搜索 ﬁle①'),
    'mcp_Unicode_strasse_file1_adsdbohbmu',
    'NFKD, marks dropped, ß spelt out, the rest separators',
  );
  t.equal(
    toolName('x'.repeat(200), 'y'.repeat(200)),
    `mcp_${'x'.repeat(24)}_${'y'.repeat(24)}_bkz5ivv6tf`,
    'two long segments share the budget',
  );
  t.equal(toolName('x'.repeat(200), 'yy'), `mcp_${'x'.repeat(46)}_yy_q56pdqd4hh`, 'a short operation lends the rest to the server');
  t.equal(toolName('everything', 'get-sum'), 'mcp_everything_get_sum_byefzfps6c');
});

t.test('sanitise: ASCII letters and digits joined by single underscores, bounded', async (t) => {
  t.equal(sanitise('--a..b--'), 'a_b');
  t.equal(sanitise('é'.normalize('NFD') + 'ｘ'), 'ex', 'combining marks dropped, full-width folded');
  t.equal(sanitise('a'.repeat(100), 10), 'a'.repeat(10));
  t.equal(sanitise('abcd efgh', 5), 'abcd', 'no trailing separator at the cut');
  t.equal(sanitise('\ud800\udc00\ud800'), '');
  t.equal(sanitise('x'.repeat(5_000_000) + 'y', 8), 'x'.repeat(8), 'a huge name is not walked past the bound');
});

t.test('property: every name matches the portable rule and the hash is always there', async (t) => {
  fc.assert(
    fc.property(identity, (id) => {
      const n = nameOf(id);
      return NAME_RULE.test(n) && n.length <= MAX_NAME_LENGTH && /_[a-z2-7]{10}$/.test(n) && n.startsWith('mcp_');
    }),
    { numRuns: 2_000 },
  );
  t.pass('2,000 random identities');
});

t.test('property: a long server name never eats the operation', async (t) => {
  fc.assert(
    fc.property(
      fc.string({ unit: 'grapheme-ascii', minLength: 0, maxLength: 2_000 }),
      fc.stringMatching(/^[a-z][a-z0-9]{0,60}$/),
      (server, tool) => {
        const n = toolName(server, tool);
        const kept = Math.min(tool.length, 24);
        return n.includes(`_${tool.slice(0, kept)}`);
      },
    ),
    { numRuns: 500 },
  );
  t.pass();
});

t.test('property: identities differ → names differ (no collision in practice)', async (t) => {
  fc.assert(
    fc.property(identity, identity, (a, b) => identityKey(a) === identityKey(b) || nameOf(a) !== nameOf(b)),
    { numRuns: 2_000 },
  );
  t.not(toolName('s', '\ud800'), toolName('s', '\ufffd'), 'lone surrogates are encoded exactly, not replaced');
  t.not(toolName('a-b', 'c'), toolName('a.b', 'c'), 'equal sanitised segments, different identities');
});

t.test('property: a name does not depend on which other identities are present', async (t) => {
  fc.assert(
    fc.property(identity, fc.array(identity, { maxLength: 20 }), fc.array(identity, { maxLength: 20 }), (id, others1, others2) => {
      const want = nameOf(id);
      const a = assignNames([...others1, id]).get(identityKey(id));
      const b = assignNames([id, ...others2, ...others1]).get(identityKey(id));
      return a === want && b === want;
    }),
    { numRuns: 300 },
  );
  t.pass();
});

t.test('property: names are stable across runs (a fresh process computes the same)', async (t) => {
  const sample = fc.sample(identity, { numRuns: 200, seed: 42 });
  const script = `import { nameOf } from ${JSON.stringify(NAMES)};
let s = ''; process.stdin.setEncoding('utf8').on('data', (d) => { s += d; }).on('end', () => {
  process.stdout.write(JSON.stringify(JSON.parse(s).map((id) => nameOf(id))));
});`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { input: JSON.stringify(sample), encoding: 'utf8' });
  t.same(
    JSON.parse(out),
    sample.map((id) => nameOf(id)),
  );
});

// A digest that makes the given identities' own names collide (their round-0 encodings hash to zeros) and is sha-256 otherwise.
function collidingDigest(ids: Identity[]): Digest {
  const seen = new Set<string>();
  for (const id of ids)
    nameOf(id, (d) => {
      seen.add(Buffer.from(d).toString('hex'));
      return sha256(d);
    });
  return (d) => (seen.has(Buffer.from(d).toString('hex')) ? new Uint8Array(32) : sha256(d));
}

t.test('a forced collision: the identity that sorts first keeps the name, the other is rehashed', async (t) => {
  const a: Identity = { server: 'a-b', kind: 'tool', tool: 'c' };
  const b: Identity = { server: 'a.b', kind: 'tool', tool: 'c' };
  const other: Identity = { server: 'docs', kind: 'tool', tool: 'search' };
  const digest = collidingDigest([a, b]);
  t.equal(nameOf(a, digest), nameOf(b, digest), 'the digest does force the collision');
  for (const order of [
    [a, b, other],
    [other, b, a],
  ]) {
    const names = assignNames(order, { digest });
    t.equal(names.get(identityKey(a)), 'mcp_a_b_c_aaaaaaaaaa', '"a-b" sorts before "a.b" and keeps its name');
    const nb = names.get(identityKey(b))!;
    t.match(nb, NAME_RULE);
    t.not(nb, names.get(identityKey(a)));
    t.equal(names.get(identityKey(other)), toolName('docs', 'search'), 'an identity not in the collision is untouched');
  }
  t.equal(assignNames([b, a], { digest }).get(identityKey(b)), assignNames([a, b, other], { digest }).get(identityKey(b)), 'deterministic');
  t.equal(assignNames([b], { digest }).get(identityKey(b)), nameOf(b, digest), 'alone, b keeps its own name');
});

t.test('a digest that always collides still yields distinct names (the counter fallback)', async (t) => {
  const constant: Digest = () => new Uint8Array(32);
  const ids: Identity[] = ['c', 'c!', 'c?', 'c.'].map((tool) => ({ server: 's', kind: 'tool', tool }));
  const names = assignNames(ids, { digest: constant });
  const all = [...names.values()];
  t.equal(new Set(all).size, 4);
  for (const n of all) t.match(n, NAME_RULE);
  t.same(all.sort(), ['mcp_s_c_aaaaaaaaaa', 'mcp_s_c_aaaaaaaaaa_2', 'mcp_s_c_aaaaaaaaaa_3', 'mcp_s_c_aaaaaaaaaa_4']);
  t.equal(names.get(identityKey(ids[0]!)), 'mcp_s_c_aaaaaaaaaa', '"c" sorts first');
  const xy = (n: number): Identity => ({ server: 'x'.repeat(n), kind: 'tool', tool: 'y'.repeat(300) });
  const long = assignNames([xy(300), xy(301)], { digest: constant });
  for (const n of long.values()) t.ok(NAME_RULE.test(n), `${n} fits`);
  t.throws(() => nameOf({ server: 's', kind: 'get_prompt' }, () => new Uint8Array(3)), RangeError);
});

t.test('property: with a weak digest and colliding segments, an assigned set never repeats a name and is order-independent', async (t) => {
  const weak: Digest = (d) => {
    const h = new Uint8Array(8);
    h[0] = sha256(d)[0]! & 3;
    return h;
  };
  const seg = fc.string({ unit: fc.constantFrom('a', '-', '.', '_', 'é'), maxLength: 4 });
  const ids = fc.array(
    fc.oneof(
      fc.record({ server: seg, kind: fc.constant('tool' as const), tool: seg }),
      fc.record({ server: seg, kind: fc.constantFrom('read_resource' as const, 'get_prompt' as const) }),
    ),
    { maxLength: 40 },
  );
  fc.assert(
    fc.property(ids, (list) => {
      const names = assignNames(list, { digest: weak });
      const keys = new Set(list.map(identityKey));
      const values = [...names.values()];
      const reversed = assignNames([...list].reverse(), { digest: weak });
      return (
        names.size === keys.size &&
        new Set(values).size === values.length &&
        values.every((n) => NAME_RULE.test(n)) &&
        [...names].every(([k, n]) => reversed.get(k) === n)
      );
    }),
    { numRuns: 500 },
  );
  t.pass();
});

t.test('property: distinct identities never share a name in an assigned set (real digest)', async (t) => {
  fc.assert(
    fc.property(fc.array(identity, { maxLength: 60 }), (list) => {
      const names = assignNames(list);
      const values = [...names.values()];
      return names.size === new Set(list.map(identityKey)).size && new Set(values).size === values.length;
    }),
    { numRuns: 300 },
  );
  t.pass();
});
