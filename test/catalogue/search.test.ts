// The tool search (services/catalogue/search.ts) measured on its evaluation
// set (test/fixtures/search-eval.ts: the real catalogues discovered live,
// and 5,000 synthetic tools): an exact name finds its tool first, every
// time; descriptive queries find theirs within five at least 90 % of the
// time (issue 13's targets). The test fails below them.
import t from 'tap';
import { ToolSearch, words } from '../../services/catalogue/search.ts';
import {
  REAL_QUERIES,
  SYNTHETIC_QUERIES,
  entriesOf,
  exactQueries,
  realCatalogues,
  recall,
  syntheticCatalogues,
} from '../fixtures/search-eval.ts';

t.setTimeout(170_000);

t.test('identifiers split into the words a query uses', async (t) => {
  t.same(words('read_text_file'), ['read', 'text', 'file']);
  t.same(words('getUserProfile'), ['get', 'user', 'profile']);
  t.same(words('get-sum'), ['get', 'sum']);
  t.same(words('HTTPServer2 of the day'), ['http', 'server2', 'day']);
});

t.test('recall on the evaluation set meets the targets', async (t) => {
  const real = await entriesOf(await realCatalogues());
  t.ok(real.length >= 40, `${real.length} real definitions`);
  const synthetic = await entriesOf(syntheticCatalogues(5_000));
  t.equal(synthetic.length, 5_000);
  const all = [...real, ...synthetic];
  const search = new ToolSearch(all);
  const run = (q: string, n: number) => search.search(q, n);
  const exact = exactQueries(real, synthetic);
  const descriptive = [...REAL_QUERIES, ...SYNTHETIC_QUERIES];
  t.ok(exact.length + descriptive.length >= 100, `${exact.length + descriptive.length} queries`);

  const e = recall(
    run,
    all,
    exact.filter((q) => q.kind !== 'descriptive'),
  );
  t.equal(e.at1, 1, `exact names and server names: recall@1 = 100 % (${e.misses.join('; ')})`);
  const d = recall(run, all, descriptive);
  t.ok(d.at5 >= 0.9, `descriptive: recall@5 ${(d.at5 * 100).toFixed(1)} % ≥ 90 % (missed: ${d.misses.join('; ')})`);
});

t.test("exact names first, then a named server's tools, then text; limits honoured", async (t) => {
  const entries = await entriesOf(await realCatalogues());
  const search = new ToolSearch(entries);
  const both = search.search('echo', 5).slice(0, 2);
  t.same(
    both.map((h) => h.match),
    ['exact', 'exact'],
    'a raw name two servers share: both first',
  );
  t.same(new Set(both.map((h) => h.server)), new Set(['everything', 'sdk']));
  const advertised = entries.find((e) => e.route.server === 'memory' && e.route.kind === 'tool' && e.route.tool === 'read_graph')!.tool
    .name;
  t.match(search.search(advertised.toUpperCase(), 1), [{ name: advertised, match: 'exact' }], 'the advertised name, any case');
  const mem = search.search('memory', 20);
  t.ok(mem.length >= 9 && mem.slice(0, 9).every((h) => h.server === 'memory' && h.match === 'server'), "a server's name: its tools first");
  t.equal(search.search('file', 3).length, 3);
  t.same(search.search('   ', 5), [], 'an empty query finds nothing');
  t.same(search.search('zzzqqqxxy', 5), [], 'a query matching nothing finds nothing');
  t.same(new Set(search.search('list directory', 50).map((h) => h.name)).size, search.search('list directory', 50).length, 'no tool twice');
});
