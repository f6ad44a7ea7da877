/**
 * The bench's `soak` group (bench/run.ts `--only soak`): bench/soak.ts's
 * driver run twice, all servers shared (100 sessions × 10 servers, 100
 * rounds of 10,000 calls: a million) and mixed (10 sessions × 10 servers, 5
 * of them per session, 15 rounds of 4,000 calls), each with sign-in expiry on
 * (one of the shared servers an OAuth-protected HTTP server whose access
 * tokens live TTL seconds), its samples
 * written as soak.json and plotted as soak.svg (a panel per metric, a line
 * per run, the end of warm-up marked; and the refresh grants so far) beside latest.*; rows give each
 * metric's last sample against its sample after warm-up, with the bound it
 * must stay under (METRICS), and the refreshes, sign-ins and signed-in calls that failed.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { RowSink } from './proc.ts';
import { runSoak, type SoakOptions, type SoakResult, type SoakSample } from './soak.ts';

export interface SoakBenchContext {
  quick: boolean;
  home: string;
  outDir: string;
  row: RowSink;
  log(s: string): void;
}

const GROUP = 'soak';
/** A run: its label, its sizes, and its warm-up (the rounds before the sample every bound is measured from). */
type Run = { label: string; warm: number; opts: Omit<SoakOptions, 'home' | 'log'> };

/** Each metric and its bound: the last round's sample at most `bound` × the sample after warm-up. */
/** The samples' numeric fields. */
type Numeric = Exclude<keyof SoakSample, 'failures'>;

const METRICS: Array<{ key: Numeric; title: string; unit: string; bound: number }> = [
  { key: 'rssMb', title: 'process RSS', unit: 'MB', bound: 1.2 },
  { key: 'heapMb', title: 'main-isolate heap used', unit: 'MB', bound: 1.2 },
  { key: 'workerHeapMb', title: "transport workers' heaps used", unit: 'MB', bound: 1.2 },
  { key: 'fds', title: 'open fds', unit: 'fds', bound: 1.05 },
  { key: 'processes', title: 'processes started (servers + launchers)', unit: 'processes', bound: 1 },
  { key: 'lmdbMb', title: 'LMDB store size', unit: 'MB', bound: 1.5 },
];
/** Counts plotted beside the metrics, without a bound: they grow by design. */
const COUNTS: Array<{ key: Numeric; title: string; unit: string }> = [
  { key: 'refreshGrants', title: 'access tokens refreshed so far (refresh_token grants)', unit: 'grants' },
];
const PANELS = [...METRICS, ...COUNTS];
/** Access token lifetime, seconds, of the long runs (the quick one: 3). */
const TTL = 5;

function runs(quick: boolean): Run[] {
  if (quick) {
    return [
      {
        label: 'mixed 3 × 4',
        warm: 3,
        opts: {
          sessions: 3,
          shared: 1,
          perSession: 1,
          rounds: 5,
          calls: 60,
          churn: 1,
          storm: 2,
          crashEvery: 2,
          signIn: { accessTokenTtl: 3 },
        },
      },
    ];
  }
  return [
    {
      label: 'shared 100 × 10',
      warm: 10,
      opts: {
        sessions: 100,
        shared: 8,
        perSession: 0,
        rounds: 100,
        calls: 10_000,
        churn: 10,
        storm: 10,
        crashEvery: 2,
        signIn: { accessTokenTtl: TTL },
      },
    },
    {
      label: 'mixed 10 × 10 (5 per session)',
      warm: 3,
      opts: {
        sessions: 10,
        shared: 3,
        perSession: 5,
        rounds: 15,
        calls: 4_000,
        churn: 2,
        storm: 10,
        crashEvery: 2,
        signIn: { accessTokenTtl: TTL },
      },
    },
  ];
}

const COLOURS = ['#1565c0', '#c62828', '#2e7d32'];

/** A panel per metric, a polyline per run over the rounds; the dashed line is the end of warm-up. */
export function soakSvg(results: Array<{ label: string; warm: number; samples: SoakSample[] }>): string {
  const W = 900,
    panelH = 150,
    left = 70,
    top = 50;
  const H = top + PANELS.length * (panelH + 40) + 10;
  const rounds = Math.max(1, ...results.map((r) => r.samples.length));
  const x = (round: number): number => left + ((round - 1) / Math.max(1, rounds - 1)) * (W - left - 20);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">Soak: each metric per round (dashed: end of warm-up)</text>`,
    ...results.map((r, i) => `<text x="${10 + i * 300}" y="38" fill="${COLOURS[i % COLOURS.length]}">— ${r.label}</text>`),
  ];
  PANELS.forEach((m, k) => {
    const y0 = top + k * (panelH + 40) + 20;
    const max = Math.max(1e-9, ...results.flatMap((r) => r.samples.map((s) => s[m.key]))) * 1.1;
    const y = (v: number): number => y0 + panelH - (v / max) * panelH;
    parts.push(`<text x="${left}" y="${y0 - 6}" font-weight="bold">${m.title} (${m.unit})</text>`);
    parts.push(`<rect x="${left}" y="${y0}" width="${W - left - 20}" height="${panelH}" fill="none" stroke="#999"/>`);
    parts.push(`<text x="${left - 4}" y="${y0 + 10}" text-anchor="end">${max.toFixed(max < 10 ? 2 : 0)}</text>`);
    parts.push(`<text x="${left - 4}" y="${y0 + panelH}" text-anchor="end">0</text>`);
    results.forEach((r, i) => {
      const wx = x(r.warm).toFixed(1);
      const colour = COLOURS[i % COLOURS.length];
      parts.push(`<line x1="${wx}" y1="${y0}" x2="${wx}" y2="${y0 + panelH}" stroke="${colour}" stroke-dasharray="4 3"/>`);
      const pts = r.samples.map((s) => `${x(s.round).toFixed(1)},${y(s[m.key]).toFixed(1)}`).join(' ');
      parts.push(`<polyline fill="none" stroke="${colour}" stroke-width="1.5" points="${pts}"/>`);
    });
  });
  parts.push(`<text x="${left}" y="${H - 4}">round 1 … ${rounds}</text>`, '</svg>');
  return parts.join('\n') + '\n';
}

export async function soakRows(ctx: SoakBenchContext): Promise<void> {
  const { row, log } = ctx;
  const results: Array<Run & { samples: SoakSample[]; afterClose: SoakResult['afterClose'] }> = [];
  for (const r of runs(ctx.quick)) {
    const o = r.opts;
    const what = `${o.churn} sessions churned, ${o.storm} set_tools, a crash every ${o.crashEvery}`;
    log(`soak ${r.label}: ${o.rounds} rounds of ${o.calls} calls, ${what}, access tokens living ${o.signIn?.accessTokenTtl} s`);
    const home = mkdtempSync(path.join(ctx.home, 'soak-'));
    try {
      const res = await runSoak({ ...o, home, log });
      results.push({ ...r, samples: res.samples, afterClose: res.afterClose });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  }
  mkdirSync(ctx.outDir, { recursive: true });
  writeFileSync(path.join(ctx.outDir, 'soak.json'), JSON.stringify(results, null, 2) + '\n');
  writeFileSync(path.join(ctx.outDir, 'soak.svg'), soakSvg(results));
  log(`soak: samples and plot → ${path.join(ctx.outDir, 'soak.{json,svg}')}`);
  for (const r of results) {
    const warm = r.samples[r.warm - 1]!;
    const last = r.samples.at(-1)!;
    for (const m of METRICS) {
      row({
        group: GROUP,
        scenario: `soak ${r.label}: ${m.title}, last round vs after warm-up`,
        unit: m.unit,
        albedo: last[m.key],
        peer: warm[m.key],
        peerLabel: `round ${r.warm}`,
        better: 'lower',
        target: `≤ ${m.bound}× after warm-up`,
        targetRatio: m.bound,
      });
    }
    const made = `soak ${r.label}: calls made in ${last.seconds.toFixed(0)} s`;
    row({ group: GROUP, scenario: made, unit: 'calls', albedo: last.calls, peer: null, better: 'higher' });
    row({ group: GROUP, scenario: `soak ${r.label}: calls failed`, unit: 'calls', albedo: last.failed, peer: null, better: 'lower' });
    const signed = `soak ${r.label}: signed-in server`;
    row({
      group: GROUP,
      scenario: `${signed}: access tokens refreshed`,
      unit: 'grants',
      albedo: last.refreshGrants,
      peer: null,
      better: 'higher',
    });
    row({
      group: GROUP,
      scenario: `${signed}: sign-ins after the first`,
      unit: 'sign-ins',
      albedo: last.codeGrants - 1,
      peer: null,
      better: 'lower',
      target: '0',
      targetAbs: 0,
    });
    row({ group: GROUP, scenario: `${signed}: calls failed`, unit: 'calls', albedo: last.signedInFailed, peer: null, better: 'lower' });
    row({
      group: GROUP,
      scenario: `soak ${r.label}: processes left after every session closed`,
      unit: 'processes',
      albedo: r.afterClose.processes,
      peer: null,
      better: 'lower',
      target: '0',
      targetAbs: 0,
    });
  }
}
