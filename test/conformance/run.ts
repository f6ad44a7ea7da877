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
 *
 * The suite's own `--suite`/`--requirements` runs start every scenario's
 * client at once, and on a busy machine clients then miss their deadlines. So
 * each leg asks the CLI which scenarios it would run (`list`), and runs each
 * one as a `--scenario` run of its own, at most os.availableParallelism() at a
 * time (ALBEDO_CONFORMANCE_JOBS overrides), with the options the leg's run
 * would give it: `--spec-version V` for `--suite all --spec-version V`, and
 * `--spec-version R --force` for `--requirements R` (the suite runs a
 * requirement set's scenarios forced onto its revision). The verdicts are then
 * added up as the leg's run would: its exit code counts every scenario of
 * `--suite all`, and only the scored ones of a requirement set.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const BASELINE = path.join(HERE, 'expected-failures.yaml');
const CLI = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
export const TIMEOUT_MS = Number(process.env.ALBEDO_CONFORMANCE_TIMEOUT_MS ?? 60_000);
/** A CLI process that outlives its client's timeout by this much is hung: it is killed and its scenario fails. */
const HUNG_MS = TIMEOUT_MS + 60_000;
const JOBS = Math.max(1, Number(process.env.ALBEDO_CONFORMANCE_JOBS) || os.availableParallelism());

/** One leg: `args` is the suite run it stands for (documentation and `list`); the scenarios run one by one. */
export interface Leg {
  name: string;
  args: string[];
  /** `--spec-version` of a `--suite all` leg. */
  specVersion?: string;
  /** The frozen requirement set of a `--requirements` leg. */
  requirements?: string;
}

export const LEGS: Leg[] = [
  { name: 'suite all', args: ['--suite', 'all'] },
  { name: 'suite all @2026-07-28', args: ['--suite', 'all', '--spec-version', '2026-07-28'], specVersion: '2026-07-28' },
  { name: 'requirements 2025-11-25', args: ['--requirements', '2025-11-25'], requirements: '2025-11-25' },
  { name: 'requirements 2026-07-28', args: ['--requirements', '2026-07-28'], requirements: '2026-07-28' },
];

export interface ScenarioResult {
  scenario: string;
  /** The scenario's CLI run: 0 when the baseline check passed; null when killed. */
  exitCode: number | null;
  passed: number;
  failed: number;
  warnings: number;
  /** The failed or warning checks: id and what the suite said. */
  problems: string[];
  /** Wall time of the scenario's CLI run, for the report (never asserted). */
  ms: number;
}
export interface LegResult {
  name: string;
  /** 0 when every scenario the leg's suite run would score passed its baseline check, else the first other exit code. */
  exitCode: number | null;
  scenarios: ScenarioResult[];
  checks: { passed: number; failed: number; warnings: number };
  /** Scenarios with a failed or warning check, or none at all: must be empty. */
  failures: string[];
  /** Wall time of the leg, for the report (never asserted). */
  ms: number;
  tail: string;
}

function baselineEntries(): string[] {
  return readFileSync(BASELINE, 'utf8')
    .split('\n')
    .map((l) => /^\s*-\s*(\S+)/.exec(l)?.[1])
    .filter((x): x is string => !!x);
}

/** checks.json files under the output dir, one per scenario run (auth/x nests a folder). */
export function collect(dir: string): ScenarioResult[] {
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
          exitCode: null,
          ms: 0,
          passed: checks.filter((c) => c.status === 'SUCCESS').length,
          failed: checks.filter((c) => c.status === 'FAILURE').length,
          warnings: checks.filter((c) => c.status === 'WARNING').length,
          problems: checks
            .filter((c) => c.status === 'FAILURE' || c.status === 'WARNING')
            .map((c) => `${c.id}: ${c.status} ${c.errorMessage ?? c.description ?? ''}`.slice(0, 400)),
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

/** Runs the suite's CLI with `args`; resolves with its exit code (null when killed) and its output, never rejects. */
export function cli(args: string[]): Promise<{ exitCode: number | null; output: string }> {
  return new Promise((resolve) => {
    // Through `env -u NODE_OPTIONS`: a test runner that hooks spawn (tap's processinfo) puts its
    // instrumentation back into NODE_OPTIONS, and it would load into the CLI and every client it starts.
    const child = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, CLI, ...args], {
      cwd: ROOT,
      // NODE_OPTIONS dropped here too, for a runner that does not hook spawn.
      env: {
        ...withoutNodeOptions(process.env),
        ALBEDO_CONFORMANCE_DEADLINE_MS: String(TIMEOUT_MS - 5_000),
        NO_COLOR: '1',
        FORCE_COLOR: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      output += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      output += d;
    });
    // A hung CLI is killed; its client keeps its own deadline (ALBEDO_CONFORMANCE_DEADLINE_MS) and exits by itself.
    const hung = setTimeout(() => {
      output += `\n[run.ts] killed: no verdict after ${HUNG_MS} ms\n`;
      child.kill('SIGKILL');
    }, HUNG_MS);
    child.on('error', (err) => {
      output += `\n[run.ts] ${err.message}\n`;
    });
    child.on('close', (exitCode) => {
      clearTimeout(hung);
      resolve({ exitCode, output });
    });
  });
}

/** The `  - name` lines of the block under `header` in the CLI's `list` output, up to its blank line. */
export function listed(output: string, header: RegExp, item: RegExp): string[] {
  const lines = output.split('\n');
  const start = lines.findIndex((l) => header.test(l));
  if (start < 0) return [];
  const names: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (!line.trim()) break;
    const m = item.exec(line);
    if (m) names.push(m[1]!);
  }
  return names;
}

/**
 * The scenarios the leg's suite run would run, from the CLI's `list` (which
 * uses the same selection): `scored` decide the leg's exit code; `unscored`
 * (a requirement set's extensions and later additions) are run and reported.
 * Throws when the list cannot be read, so that a changed CLI fails the leg loudly.
 */
export async function scenariosOf(leg: Leg): Promise<{ scored: string[]; unscored: string[] }> {
  const clientHeader = /^Client scenarios \(test against a client\):$/;
  const all = await cli(['list', '--client', ...(leg.specVersion ? ['--spec-version', leg.specVersion] : [])]);
  const provided = listed(all.output, clientHeader, /^ {2}- (\S+)/);
  if (all.exitCode !== 0 || !provided.length)
    throw new Error(`conformance list failed for ${leg.name} (exit ${all.exitCode}):\n${all.output}`);
  if (!leg.requirements) return { scored: provided, unscored: [] };
  const req = await cli(['list', '--requirements', leg.requirements]);
  const scored = listed(req.output, clientHeader, /^ {2}- (\S+)$/);
  // Like the suite, drop what this build does not provide; a scored one missing is an error there too.
  const unscored = listed(req.output, /^Run and reported, but never scored:$/, /^ {4}- (\S+) \[client\]$/).filter((s) =>
    provided.includes(s),
  );
  const missing = scored.filter((s) => !provided.includes(s));
  if (req.exitCode !== 0 || !scored.length || missing.length) {
    throw new Error(
      `conformance list --requirements ${leg.requirements} failed ` +
        `(exit ${req.exitCode}; not provided: ${missing.join(', ')}):\n${req.output}`,
    );
  }
  return { scored, unscored };
}

/** Calls `fn` on every item, at most `size` at a time; results in the items' order. */
export async function pool<T, R>(items: T[], size: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(size, items.length) }, worker));
  return results;
}

/** For the runner's own tests: other scenarios (all scored) and another client command than the leg's and Albedo's. */
export interface LegOptions {
  scenarios?: string[];
  command?: string;
}

// `exec`: the suite spawns through /bin/sh, and a shell that forks would keep a hung client out of its reach.
const CLIENT = `exec ${process.execPath} ${path.join(HERE, 'client.ts')}`;

/** One scenario as a CLI run of its own, with the options the leg's suite run gives each of its scenarios. */
async function runScenario(
  leg: Leg,
  scenario: string,
  command: string,
  outDir: string,
): Promise<{ result: ScenarioResult; output: string }> {
  mkdirSync(outDir, { recursive: true });
  const started = Date.now();
  const version = leg.requirements
    ? ['--spec-version', leg.requirements, '--force']
    : leg.specVersion
      ? ['--spec-version', leg.specVersion]
      : [];
  const { exitCode, output } = await cli([
    'client',
    '--command',
    command,
    '--scenario',
    scenario,
    ...version,
    '--expected-failures',
    BASELINE,
    '--timeout',
    String(TIMEOUT_MS),
    '-o',
    outDir,
  ]);
  const ms = Date.now() - started;
  const found = collect(outDir).find((s) => s.scenario === scenario);
  // No checks.json: the scenario never ran to its end (a crashed or killed CLI), which the leg must not pass over.
  const result = found
    ? { ...found, exitCode, ms }
    : { scenario, exitCode, ms, passed: 0, failed: 1, warnings: 0, problems: [`no checks.json: the CLI exited ${exitCode}`] };
  return { result, output };
}

/** Runs one leg, its scenarios `JOBS` at a time; resolves with the leg's verdict and summary, never rejects. */
export async function runLeg(leg: Leg, options: LegOptions = {}): Promise<LegResult> {
  const started = Date.now();
  const legDir = mkdtempSync(path.join(os.tmpdir(), 'albedo-conformance-'));
  try {
    let selection: { scored: string[]; unscored: string[] };
    try {
      selection = options.scenarios ? { scored: options.scenarios, unscored: [] } : await scenariosOf(leg);
    } catch (err) {
      const tail = (err as Error).message;
      return {
        name: leg.name,
        exitCode: 1,
        scenarios: [],
        checks: { passed: 0, failed: 0, warnings: 0 },
        failures: [],
        ms: Date.now() - started,
        tail,
      };
    }
    const names = [...selection.scored, ...selection.unscored];
    const runs = await pool(names, JOBS, (name, i) => runScenario(leg, name, options.command ?? CLIENT, path.join(legDir, String(i))));
    const scenarios = runs.map((r) => r.result).sort((a, b) => a.scenario.localeCompare(b.scenario));
    const sum = (k: 'passed' | 'failed' | 'warnings'): number => scenarios.reduce((n, s) => n + s[k], 0);
    const scoredBad = runs.find((r) => selection.scored.includes(r.result.scenario) && r.result.exitCode !== 0);
    const bad = runs.filter((r) => r.result.exitCode !== 0 || r.result.problems.length);
    const tail = bad
      .map((r) =>
        [`--- ${r.result.scenario}: exit ${r.result.exitCode}; ${r.result.problems.join('; ')}`, ...r.output.split('\n').slice(-25)].join(
          '\n',
        ),
      )
      .join('\n');
    return {
      name: leg.name,
      exitCode: scoredBad ? (scoredBad.result.exitCode ?? 1) : 0,
      scenarios,
      checks: { passed: sum('passed'), failed: sum('failed'), warnings: sum('warnings') },
      failures: scenarios.filter((s) => s.failed || s.warnings).map((s) => s.scenario),
      ms: Date.now() - started,
      tail,
    };
  } finally {
    rmSync(legDir, { recursive: true, force: true });
  }
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
      const auth = r.scenarios.filter((s) => s.scenario.startsWith('auth/')).length;
      const passed = r.scenarios.length - r.failures.length;
      process.stdout.write(
        `${ok ? 'ok  ' : 'FAIL'} ${r.name}: exit ${r.exitCode}; scenarios ${passed}/${r.scenarios.length} passed (auth ${auth}); ` +
          `checks ${r.checks.passed} passed, ${r.checks.failed} failed, ${r.checks.warnings} warnings; ` +
          `${(r.ms / 1000).toFixed(0)} s, ${JOBS} at a time\n`,
      );
      if (!ok) process.stdout.write(r.tail + '\n');
    }
  }
  if (json)
    process.stdout.write(
      JSON.stringify(
        results.map(({ tail, ...r }) => (r.exitCode === 0 ? r : { ...r, tail })),
        null,
        2,
      ) + '\n',
    );
  process.exit(results.every((r) => r.exitCode === 0 && r.failures.length === 0) ? 0 : 1);
}
