/**
 * The bench's results, as bench/run.ts collects and writes them: a row per
 * scenario (Albedo, peer, their ratio, a target and whether it is met),
 * latest.json, latest.md (the table, also the README's Performance section
 * after a full run) and latest.svg (times better or worse, log scale).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { RowSink } from './proc.ts';

export type Better = 'higher' | 'lower';

/** A row as the report keeps it: what a group gave (RowSink's argument, less the target's inputs) and its ratio and verdict. */
export type Row = Omit<Parameters<RowSink>[0], 'targetRatio' | 'targetAbs'> & {
  /** albedo/peer for 'higher', albedo/peer for 'lower' too (the table's ratio is always Albedo over peer). */
  ratio: number | null;
  met?: boolean | null;
};

export interface Meta {
  date: string;
  mode: 'quick' | 'full';
  only?: string[];
  seconds: number;
  node: string;
  cpus: number;
  cpuModel: string;
  peer: string;
  rounds: number;
}

export function fmt(x: number): string {
  return Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2);
}

/** The row sink the groups write to: each row is kept in `rows` with its ratio and verdict, and logged. */
export function rowSink(rows: Row[], log: (s: string) => void): RowSink {
  return (r) => {
    // A ratio of a value at or below zero (memory deltas within the noise) means nothing: none is given.
    const ratio = r.peer === null || r.peer <= 0 || r.albedo <= 0 ? null : r.albedo / r.peer;
    let met: boolean | null | undefined;
    if (r.targetRatio !== undefined && ratio !== null) met = r.better === 'higher' ? ratio >= r.targetRatio : ratio <= r.targetRatio;
    if (r.targetAbs !== undefined) met = r.better === 'higher' ? r.albedo >= r.targetAbs : r.albedo <= r.targetAbs;
    const { targetRatio: _a, targetAbs: _b, ...rest } = r;
    rows.push({ ...rest, ratio, met });
    log(
      `  ${r.scenario}: albedo ${fmt(r.albedo)} ${r.unit}, peer ${r.peer === null ? '—' : fmt(r.peer)}` +
        (ratio === null ? '' : `, ratio ${ratio.toFixed(2)}`),
    );
  };
}

/** Writes latest.json, latest.md and latest.svg into `outDir`; with `readme`, also the README's Performance table. */
export function writeResults(outDir: string, meta: Meta, rows: Row[], readme: string | null, log: (s: string) => void): void {
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, 'latest.json'), JSON.stringify({ meta, rows }, null, 2) + '\n');
  writeFileSync(path.join(outDir, 'latest.md'), markdown(meta, rows));
  writeFileSync(path.join(outDir, 'latest.svg'), svg(rows));
  log(`bench: ${rows.length} rows in ${meta.seconds.toFixed(0)} s → ${path.relative(process.cwd(), outDir) || '.'}/latest.{json,md,svg}`);
  if (readme === null) return;
  const text = readFileSync(readme, 'utf8');
  const start = '<!-- bench:start -->';
  const end = '<!-- bench:end -->';
  if (text.includes(start) && text.includes(end)) {
    const next = text.slice(0, text.indexOf(start) + start.length) + '\n' + markdown(meta, rows) + text.slice(text.indexOf(end));
    writeFileSync(readme, next);
    log('bench: README.md Performance table refreshed');
  }
}

function markdown(m: Meta, rs: Row[]): string {
  const lines = [
    `Albedo vs ${m.peer}; ${m.only ? `--only ${m.only.join(',')}` : m.mode} run of ${m.date.slice(0, 10)}, ` +
      `${m.rounds} alternating round(s), medians; ` +
      `Node ${m.node}, ${m.cpus} × ${m.cpuModel}; ${m.seconds.toFixed(0)} s.`,
    'Ratio is Albedo ÷ peer: above 1 is better for calls/s, below 1 is better for ms and MB.',
    '',
    '| scenario | Albedo | peer | ratio | target | met? |',
    '| --- | ---: | ---: | ---: | --- | --- |',
  ];
  for (const r of rs) {
    const peer = r.peer === null ? '—' : `${fmt(r.peer)} ${r.unit}${r.peerLabel ? ` (${r.peerLabel})` : ''}`;
    const ratio = r.ratio === null ? '—' : `${r.ratio.toFixed(2)}×`;
    const met = r.met === undefined || r.met === null ? '' : r.met ? 'yes' : '**no**';
    lines.push(`| ${r.scenario} | ${fmt(r.albedo)} ${r.unit} | ${peer} | ${ratio} | ${r.target ?? ''} | ${met} |`);
  }
  return lines.join('\n') + '\n';
}

/** A horizontal bar chart of how many times better Albedo is (log scale; the line is parity). */
function svg(rs: Row[]): string {
  const data = rs
    .filter((r) => r.ratio !== null && r.peer !== null && r.unit !== '×')
    .map((r) => ({ label: r.scenario, gain: r.better === 'higher' ? r.ratio! : 1 / r.ratio! }));
  const W = 900,
    left = 430,
    barH = 16,
    gap = 6,
    top = 40;
  const H = top + data.length * (barH + gap) + 30;
  const maxLog = Math.max(1, ...data.map((d) => Math.abs(Math.log2(d.gain))));
  const mid = left + (W - left - 20) / 2;
  const scale = (W - left - 40) / 2 / maxLog;
  const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">` +
      `Albedo vs the official SDK client: times better (right) or worse (left), log scale</text>`,
    `<line x1="${mid}" y1="${top - 8}" x2="${mid}" y2="${H - 20}" stroke="#333"/>`,
    `<text x="${mid}" y="${H - 6}" text-anchor="middle">1× (parity)</text>`,
  ];
  data.forEach((d, i) => {
    const y = top + i * (barH + gap);
    const len = Math.log2(d.gain) * scale;
    const x = len >= 0 ? mid : mid + len;
    parts.push(`<text x="${left - 8}" y="${y + barH - 4}" text-anchor="end">${esc(d.label)}</text>`);
    parts.push(
      `<rect x="${x.toFixed(1)}" y="${y}" width="${Math.max(1, Math.abs(len)).toFixed(1)}" height="${barH}"` +
        ` fill="${len >= 0 ? '#2e7d32' : '#c62828'}"/>`,
    );
    parts.push(
      `<text x="${(len >= 0 ? mid + len + 4 : mid + len - 4).toFixed(1)}" y="${y + barH - 4}" ` +
        `text-anchor="${len >= 0 ? 'start' : 'end'}">` +
        `${d.gain.toFixed(2)}×</text>`,
    );
  });
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}
