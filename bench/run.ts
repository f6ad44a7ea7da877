/**
 * `npm run bench [-- --quick] [-- --out DIR]`: Albedo side by side with the
 * official @modelcontextprotocol/client 2.4.0 on the same servers in the same
 * run, reported as ratios. Every in-process scenario alternates Albedo and
 * the peer (A B A B …) after a warm-up and reports medians over the rounds;
 * memory and large-payload scenarios run each client in a process of its own
 * (bench/child.ts), start-up a new process per launch (bench/startup.ts);
 * the kernel hop is measured beside a bare postMessage worker (bench/hop.ts).
 * Writes latest.json, latest.md (scenario, Albedo, peer, ratio, target,
 * met?) and latest.svg into bench/results (or --out).
 *
 * `--only GROUP[,GROUP]` runs the named groups only (`stdio`, `http`,
 * `connect`, `startup`, `memory`, `large`, `hop`, `sessions`, `catalogue`,
 * `daemon`, `cli`, `context`, `transfer`, `lmdb`, `saves`, `gateway`, `acp`, `python`, `sharing`, `soak`), for working on one;
 * without `--out` it writes to a temporary directory, not bench/results.
 * Each group's rows are made in a file of its own (bench/calls.ts,
 * connect.ts, footprint.ts, …); bench/report.ts keeps and writes them.
 *
 * `--quick` (under a minute) runs every scenario small, so the harness never
 * rots in CI; it asserts nothing about speed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { httpRows, stdioRows } from './calls.ts';
import { connectRows } from './connect.ts';
import { benchChild, largeRows, memoryRows } from './footprint.ts';
import { lmdbRows } from './lmdb-values.ts';
import { settingsSaveRows } from './settings-save.ts';
import { rowSink, writeResults, type Meta, type Row } from './report.ts';
import { transferRows } from './transfer.ts';
import { sessionRows } from './sessions.ts';
import { catalogueRows } from './catalogue.ts';
import { daemonRows } from './daemon.ts';
import { gatewayRows } from './gateway.ts';
import { acpRows } from './acp.ts';
import { pythonRows } from './python.ts';
import { sharingRows } from './sharing.ts';
import { soakRows } from './soak-plot.ts';
import { cliRows } from './cli.ts';
import { contextRows } from './context.ts';
import { hopRows } from './hop.ts';
import { startupRows } from './startup.ts';
import { albedoImpl, sdkImpl, writeRawEchoJs, ROOT, type Impl } from './lib.ts';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');

const P = quick
  ? {
      rounds: 1,
      warm: 20,
      seq: 200,
      conc: 400,
      httpSeq: 100,
      httpConc: 300,
      connects: 2,
      many: 5,
      memSpan: [2, 10],
      memRepeats: 1,
      hop: 2_000,
      hopBatch: 5_000,
      sessions: { saved: 5, opens: 2, reopens: 1, quietMs: 200, memSessions: 1 },
    }
  : {
      rounds: 3,
      warm: 300,
      seq: 5_000,
      conc: 5_000,
      httpSeq: 1_500,
      httpConc: 3_000,
      connects: 5,
      many: 20,
      memSpan: [10, 100],
      memRepeats: 3,
      hop: 20_000,
      hopBatch: 50_000,
      sessions: { saved: 50, opens: 5, reopens: 3, quietMs: 1_000, memSessions: 10 },
    };
// `--only GROUP[,GROUP]` runs those groups alone (e.g. `--only sessions`); it never touches bench/results or the README.
const only = argv.includes('--only') ? new Set(argv[argv.indexOf('--only') + 1]!.split(',')) : null;
const runs = (group: string): boolean => only === null || only.has(group);
// A partial run must not overwrite the full results: without --out it writes to a temporary directory.
const outDir = argv.includes('--out')
  ? path.resolve(argv[argv.indexOf('--out') + 1]!)
  : only
    ? path.join(os.tmpdir(), 'albedo-bench-only')
    : path.join(ROOT, 'bench', 'results');

const rows: Row[] = [];
const log = (s: string): void => {
  process.stderr.write(s + '\n');
};
const row = rowSink(rows, log);
const child = benchChild;

const started = Date.now();
const home = mkdtempSync(path.join(os.tmpdir(), 'albedo-bench-'));
const albedo = await albedoImpl(path.join(home, 'shared'));
const sdk = sdkImpl();
const impls: [Impl, Impl] = [albedo, sdk];
// The raw echo server as plain JS, for the rows that launch many servers or time a process's start.
const rawEchoJs = writeRawEchoJs(home);

/** Runs a group if it is asked for, and says how long it took (what a slow `--quick` spends its time on). */
async function group(name: string, run: () => Promise<void>): Promise<void> {
  if (!runs(name)) return;
  const t0 = performance.now();
  await run();
  log(`group ${name}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

try {
  // 1–2. Calls over stdio and HTTP (bench/calls.ts)
  await group('stdio', () => stdioRows({ P, impls, row, log }));
  await group('http', () => httpRows({ P, impls, row, log }));

  // 3. Connect and discover (bench/connect.ts)
  await group('connect', () => connectRows({ P, home, impls, row, log }));

  // 3b. Start-up: a new process to its first call, and its peak RSS (bench/startup.ts)
  await group('startup', () => startupRows({ quick, serverJs: rawEchoJs, row, log }));

  // 4–5. Memory per connection and large payloads, in processes of their own (bench/footprint.ts, bench/child.ts)
  await group('memory', () => memoryRows({ P, rawEchoJs, row, log }));
  await group('large', () => largeRows({ row, log }));

  // 6. Kernel hop: a no-op call and no-op calls in flight, beside bare postMessage (bench/hop.ts)
  await group('hop', () => hopRows({ P, kernel: albedo.albedo.kernel, row, log }));

  // 7. Sessions (bench/sessions.ts)
  await group('sessions', () => sessionRows({ P, home, sdk, row, log, child, rawEchoJs }));

  // 8. A 5,000-tool catalogue named + normalised + bounded (bench/catalogue.ts)
  await group('catalogue', () => catalogueRows({ quick, rounds: P.rounds, row, log }));

  // 9. The daemon's HTTP API (bench/daemon.ts)
  await group('daemon', () => daemonRows({ P, home, sdk, row, log, child, rawEchoJs }));

  // 10. `albedo mcp list` start-up against a running daemon (bench/cli.ts)
  await group('cli', () => cliRows({ quick, home, row, log }));

  // 11. Context economy: deferred vs all, tool search latency and recall (bench/context.ts)
  await group('context', () => contextRows({ quick, row, log }));

  // 12. Encodings measured before choosing: the normaliser's batches to its pool (bench/transfer.ts), LMDB values (bench/lmdb-values.ts)
  await group('transfer', () => transferRows({ quick, rounds: P.rounds, row, log }));
  await group('lmdb', () => lmdbRows({ quick, rounds: P.rounds, row, log }));

  // 13. A settings save through the daemon's writes: kernel calls and latency (bench/settings-save.ts)
  await group('saves', () => settingsSaveRows({ quick, rounds: P.rounds, row, log }));

  // 14. The daemon as an MCP server: gateways vs direct calls and vs supergateway, mcp-proxy, mcp-remote (bench/gateway.ts)
  await group('gateway', () => gatewayRows({ P, quick, home, rawEchoJs, row, log }));

  // 15. `albedo acp`: the agent's tool call through the adapter's gateway, and session/new to its first tools/list (bench/acp.ts)
  await group('acp', () => acpRows({ quick, rounds: P.rounds, home, rawEchoJs, row, log }));

  // 16. The Python binding: a call through it vs raw HTTP from Python and vs the TS embedding API (bench/python.ts)
  await group('python', () => pythonRows({ quick, rounds: P.rounds, home, rawEchoJs, row, log }));

  // 17. Shared connections: processes, RSS, fds and calls, shared vs per session vs SDK clients (bench/sharing.ts)
  await group('sharing', () => sharingRows({ quick, home, row, log }));

  // 18. Soak: churn, calls, list_changed, crashes; RSS, heap, fds, processes, LMDB sampled and plotted (bench/soak*.ts)
  await group('soak', () => soakRows({ quick, home, outDir, row, log }));
} finally {
  await albedo.close();
  rmSync(home, { recursive: true, force: true });
}

const meta: Meta = {
  date: new Date().toISOString(),
  mode: quick ? 'quick' : 'full',
  ...(only ? { only: [...only] } : {}),
  seconds: (Date.now() - started) / 1000,
  node: process.version,
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model ?? 'unknown',
  peer: '@modelcontextprotocol/client 2.4.0 (versionNegotiation auto for modern servers, legacy for legacy ones)',
  rounds: P.rounds,
};
// A full run into bench/results also refreshes the README's Performance table, so it never shows stale numbers.
const readme = !quick && !only && !argv.includes('--out') ? path.join(ROOT, 'README.md') : null;
writeResults(outDir, meta, rows, readme, log);
