/**
 * `npm run conformance`: runs the pinned MCP conformance suite
 * (@modelcontextprotocol/conformance, a devDependency) against Albedo's
 * client (test/conformance/client.ts) in four legs:
 *
 *   --suite all                              every client scenario at its own version
 *   --suite all --spec-version 2026-07-28    the stateless 2026 wire
 *   --requirements 2025-11-25                the frozen 2025-11-25 requirement set
 *   --requirements 2026-07-28                the frozen 2026-07-28 requirement set
 *
 * each with expected-failures.yaml as the baseline (only auth scenarios may be
 * listed; a listed scenario that passes is stale and fails the leg). Prints
 * one line per leg and a summary; `--json` prints the summary as JSON.
 * Exits non-zero when any leg fails or the baseline lists a non-auth scenario.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const BASELINE = path.join(HERE, 'expected-failures.yaml');
const CLI = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const TIMEOUT_MS = Number(process.env.ALBEDO_CONFORMANCE_TIMEOUT_MS ?? 60_000);

export const LEGS: Array<{ name: string; args: string[] }> = [
  { name: 'suite all', args: ['--suite', 'all'] },
  { name: 'suite all @2026-07-28', args: ['--suite', 'all', '--spec-version', '2026-07-28'] },
  { name: 'requirements 2025-11-25', args: ['--requirements', '2025-11-25'] },
  { name: 'requirements 2026-07-28', args: ['--requirements', '2026-07-28'] },
];

export interface ScenarioResult {
  scenario: string;
  passed: number;
  failed: number;
  warnings: number;
  /** The failed or warning checks: id and what the suite said. */
  problems: string[];
}
export interface LegResult {
  name: string;
  exitCode: number | null;
  scenarios: ScenarioResult[];
  checks: { passed: number; failed: number; warnings: number };
  /** Scenarios with a failed or warning check: must be empty. */
  failures: string[];
  tail: string;
}

function baselineEntries(): string[] {
  return readFileSync(BASELINE, 'utf8').split('\n').map((l) => /^\s*-\s*(\S+)/.exec(l)?.[1]).filter((x): x is string => !!x);
}

/** checks.json files under the output dir, one per scenario run (auth/x nests a folder). */
function collect(dir: string): ScenarioResult[] {
  const out: ScenarioResult[] = [];
  const walk = (d: string, prefix: string): void => {
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      if (!statSync(p).isDirectory()) continue;
      const checksFile = path.join(p, 'checks.json');
      let checks: Array<{ id?: string; status: string; errorMessage?: string; description?: string }> | undefined;
      try {
        checks = JSON.parse(readFileSync(checksFile, 'utf8'));
      } catch {
        checks = undefined;
      }
      if (checks) {
        const scenario = prefix + name.replace(/-\d{4}-\d{2}-\d{2}T.*$/, '');
        out.push({
          scenario,
          passed: checks.filter((c) => c.status === 'SUCCESS').length,
          failed: checks.filter((c) => c.status === 'FAILURE').length,
          warnings: checks.filter((c) => c.status === 'WARNING').length,
          problems: checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING').map((c) => `${c.id}: ${c.status} ${c.errorMessage ?? c.description ?? ''}`.slice(0, 400)),
        });
      } else walk(p, `${prefix}${name}/`);
    }
  };
  walk(dir, '');
  return out.sort((a, b) => a.scenario.localeCompare(b.scenario));
}

function withoutNodeOptions(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { NODE_OPTIONS: _drop, ...rest } = env;
  return rest;
}

export function runLeg(leg: { name: string; args: string[] }): Promise<LegResult> {
  const outDir = mkdtempSync(path.join(os.tmpdir(), 'albedo-conformance-'));
  return new Promise((resolve) => {
    // `exec`: the suite spawns through /bin/sh, and a shell that forks would keep a hung client out of its reach.
    const command = `exec ${process.execPath} ${path.join(HERE, 'client.ts')}`;
    // Through `env -u NODE_OPTIONS`: a test runner that hooks spawn (tap's processinfo) puts its
    // instrumentation back into NODE_OPTIONS, and the suite starts its ~50 clients at once.
    const child = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, CLI, 'client', '--command', command, ...leg.args, '--expected-failures', BASELINE, '--timeout', String(TIMEOUT_MS), '-o', outDir], {
      cwd: ROOT,
      // NODE_OPTIONS dropped: a test runner's instrumentation would load into each of the suite's ~50 client processes.
      env: { ...withoutNodeOptions(process.env), ALBEDO_CONFORMANCE_DEADLINE_MS: String(TIMEOUT_MS - 5_000), NO_COLOR: '1', FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => { output += d; });
    child.stderr.setEncoding('utf8').on('data', (d: string) => { output += d; });
    child.on('close', (exitCode) => {
      const scenarios = collect(outDir);
      rmSync(outDir, { recursive: true, force: true });
      const sum = (k: 'passed' | 'failed' | 'warnings'): number => scenarios.reduce((n, s) => n + s[k], 0);
      resolve({
        name: leg.name,
        exitCode,
        scenarios,
        checks: { passed: sum('passed'), failed: sum('failed'), warnings: sum('warnings') },
        failures: scenarios.filter((s) => s.failed || s.warnings).map((s) => s.scenario),
        tail: [...output.split('\n').slice(-40), ...scenarios.filter((x) => x.problems.length).map((x) => `${x.scenario}: ${x.problems.join('; ')}`)].join('\n'),
      });
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const json = process.argv.includes('--json');
  const bad = baselineEntries().filter((e) => !e.startsWith('auth/'));
  if (bad.length) {
    process.stderr.write(`expected-failures.yaml may list only auth scenarios, not: ${bad.join(', ')}\n`);
    process.exit(1);
  }
  const results: LegResult[] = [];
  for (const leg of LEGS) {
    const r = await runLeg(leg);
    results.push(r);
    if (!json) {
      const ok = r.exitCode === 0 && r.failures.length === 0;
      process.stdout.write(`${ok ? 'ok  ' : 'FAIL'} ${r.name}: exit ${r.exitCode}; scenarios ${r.scenarios.length - r.failures.length}/${r.scenarios.length} passed (auth ${r.scenarios.filter((s) => s.scenario.startsWith('auth/')).length}); checks ${r.checks.passed} passed, ${r.checks.failed} failed, ${r.checks.warnings} warnings\n`);
      if (!ok) process.stdout.write(r.tail + '\n');
    }
  }
  if (json) process.stdout.write(JSON.stringify(results.map(({ tail, ...r }) => (r.exitCode === 0 ? r : { ...r, tail })), null, 2) + '\n');
  process.exit(results.every((r) => r.exitCode === 0 && r.failures.length === 0) ? 0 : 1);
}
