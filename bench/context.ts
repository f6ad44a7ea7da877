/**
 * Bench rows for context economy (issue 13): what the model is given with
 * `tools: "all"` and with `tools: "deferred"` (estimated tokens, characters
 * / 4) for the real catalogues here (server-everything, server-filesystem,
 * server-memory, the SDK fixture, discovered live) and for 5,000 synthetic
 * tools; the tool search's latency over 5,000 tools; and its recall on the
 * evaluation set (test/fixtures/search-eval.ts), which a test also checks.
 *
 * `node bench/context.ts [--quick]` runs these rows alone and prints them.
 */
import { fileURLToPath } from 'node:url';
import { fixedTools } from '../api/deferred.ts';
import { ToolSearch } from '../services/catalogue/search.ts';
import { definitionsTokens } from '../services/catalogue/tokens.ts';
import {
  REAL_QUERIES,
  SYNTHETIC_QUERIES,
  entriesOf,
  exactQueries,
  realCatalogues,
  recall,
  syntheticCatalogues,
} from '../test/fixtures/search-eval.ts';
import { median, percentile } from './lib.ts';
import type { SessionBenchContext } from './sessions.ts';

const GROUP = 'context';
const PROFILE = 'anthropic';

export interface ContextBenchContext {
  quick: boolean;
  row: SessionBenchContext['row'];
  log(s: string): void;
}

export async function contextRows(ctx: ContextBenchContext): Promise<void> {
  const { row, log } = ctx;
  log(`${GROUP}: deferred vs all, tool search`);
  const fixed = await fixedTools(PROFILE);
  const read = fixed[2]!;
  const real = await entriesOf(await realCatalogues(), PROFILE);
  const synthetic = await entriesOf(syntheticCatalogues(ctx.quick ? 500 : 5_000), PROFILE);
  for (const [label, entries] of [
    ['4 real servers', real],
    [`${synthetic.length.toLocaleString('en')} synthetic tools`, synthetic],
  ] as const) {
    const all = definitionsTokens([...entries.map((e) => e.tool), read]);
    const deferred = definitionsTokens(fixed);
    row({
      group: GROUP,
      scenario: `${label} (${entries.length} definitions): tokens advertised, deferred vs all`,
      unit: 'tokens',
      albedo: deferred,
      peer: all,
      peerLabel: 'tools: all',
      better: 'lower',
    });
  }

  const everything = [...real, ...synthetic];
  const search = new ToolSearch(everything);
  const queries = [...REAL_QUERIES, ...SYNTHETIC_QUERIES];
  search.search('warm up', 5);
  const times: number[] = [];
  for (let i = 0; i < (ctx.quick ? 100 : 2_000); i++) {
    const t0 = performance.now();
    search.search(queries[i % queries.length]!.q, 5);
    times.push(performance.now() - t0);
  }
  row({
    group: GROUP,
    scenario: `tool search over ${everything.length.toLocaleString('en')} definitions: p50`,
    unit: 'ms',
    albedo: median(times),
    peer: null,
    better: 'lower',
  });
  row({
    group: GROUP,
    scenario: `tool search over ${everything.length.toLocaleString('en')} definitions: p99`,
    unit: 'ms',
    albedo: percentile(
      [...times].sort((a, b) => a - b),
      99,
    ),
    peer: null,
    better: 'lower',
  });
  const t0 = performance.now();
  new ToolSearch(everything);
  row({
    group: GROUP,
    scenario: `tool search: index ${everything.length.toLocaleString('en')} definitions`,
    unit: 'ms',
    albedo: performance.now() - t0,
    peer: null,
    better: 'lower',
  });

  const run = (q: string, n: number) => search.search(q, n);
  const exact = exactQueries(real, synthetic);
  const e = recall(run, everything, exact);
  const d = recall(run, everything, queries);
  row({
    group: GROUP,
    scenario: `search recall@1, exact tool and server names (${e.queries} queries)`,
    unit: '%',
    albedo: e.at1 * 100,
    peer: null,
    better: 'higher',
    target: '100 %',
    targetAbs: 100,
  });
  row({
    group: GROUP,
    scenario: `search recall@1, descriptive queries (${d.queries})`,
    unit: '%',
    albedo: d.at1 * 100,
    peer: null,
    better: 'higher',
  });
  row({
    group: GROUP,
    scenario: `search recall@5, descriptive queries (${d.queries})`,
    unit: '%',
    albedo: d.at5 * 100,
    peer: null,
    better: 'higher',
    target: '≥ 90 %',
    targetAbs: 90,
  });
  for (const m of d.misses) log(`    missed: ${m}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await contextRows({
    quick: process.argv.includes('--quick'),
    row: (r) => console.log(`${r.scenario}: ${r.albedo.toFixed(2)} ${r.unit}${r.peer === null ? '' : ` (peer ${r.peer.toFixed(2)})`}`),
    log: (s) => console.error(s),
  });
}
