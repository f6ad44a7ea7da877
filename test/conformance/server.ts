/**
 * The pinned MCP conformance suite's *server* scenarios against any MCP
 * server URL (`@modelcontextprotocol/conformance server --url URL`):
 *
 *   node test/conformance/server.ts --url URL [--spec-version V]... [--scenario S]... [--jobs N] [--json]
 *
 * One leg per era, each the suite's own selection for that revision
 * (`list --server --spec-version V`): 2025-11-25 (the initialize handshake,
 * sessions, SSE resumption, server→client requests) and 2026-07-28 (the
 * stateless wire: discovery, envelopes, header validation, input-required
 * results, caching hints). As in run.ts, each scenario is a CLI run of its
 * own (`--scenario S --spec-version V`), a few at a time, with a per-scenario
 * timeout and a kill for a CLI that hangs past it, so that a busy machine
 * changes no verdict.
 *
 * Left out: the scenarios the suite tags [extension] — tasks-* (the tasks
 * extension, which the official SDK server does not implement, so a backend
 * built with it fails them and a gateway in front of it has nothing to pass
 * through) and sep-2640-* (the skills extension: every check is SKIPPED unless
 * the server declares it, so they give no verdict). No --spec-version selects
 * them; they are reported as `excluded`.
 *
 * The suite sends no Authorization header and has no option or variable for
 * one: a server behind a bearer token is run through auth-proxy.ts.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TIMEOUT_MS, cli, collect, listed, pool } from './run.ts';

export const ERAS = ['2025-11-25', '2026-07-28'];
/** Scenarios run with nothing else running against the server: they compare two reads of its tool list. */
const ALONE = new Set(['tools-list']);
const HEADER = /^Server scenarios \(test against a server\):$/;

export interface ServerSuiteOptions {
  url: string;
  /** The era legs, each run as `--spec-version V`; both eras by default. */
  specVersions?: string[];
  /** Only these scenarios (each in the legs that include it); every one of a leg's by default. */
  scenarios?: string[];
  /** CLI runs at a time; ALBEDO_CONFORMANCE_JOBS or the machine's parallelism by default. */
  jobs?: number;
}
export interface ServerScenarioResult {
  scenario: string;
  specVersion: string;
  /** The scenario's CLI run: 0 when no check failed; null when it was killed. */
  exitCode: number | null;
  passed: number;
  failed: number;
  warnings: number;
  /** Ids of the checks that failed (FAILURE) or warned (WARNING). */
  failedChecks: string[];
  warningChecks: string[];
  /** What the suite said about each of them. */
  problems: string[];
  /** Wall time of the CLI run, for the report (never asserted). */
  ms: number;
}
export interface ServerSuiteResult {
  url: string;
  legs: Array<{ specVersion: string; scenarios: ServerScenarioResult[]; ms: number }>;
  /** Extension scenarios the suite offers and no leg runs. */
  excluded: string[];
  /** Requested scenarios that no leg includes (a typo, or an extension). */
  unknown: string[];
  /** `scenario@specVersion` of every run with a failed or warning check, or no verdict. */
  failures: string[];
  ms: number;
  /** The failing runs' problems and the ends of their CLI output. */
  tail: string;
}

/** The scenarios a `--spec-version V` leg runs, from the CLI's own `list` (the same selection as its suite run). */
export async function serverScenarios(specVersion: string): Promise<string[]> {
  const r = await cli(['list', '--server', '--spec-version', specVersion]);
  const names = listed(r.output, HEADER, /^ {2}- (\S+)/);
  if (r.exitCode !== 0 || !names.length) throw new Error(`conformance list --server --spec-version ${specVersion} failed:\n${r.output}`);
  return names;
}

/** The scenarios the suite tags [extension] (no era leg selects them). */
export async function extensionScenarios(): Promise<string[]> {
  const r = await cli(['list', '--server']);
  return listed(r.output, HEADER, /^ {2}- (\S+) \[extension\]$/);
}

async function runOne(
  url: string,
  scenario: string,
  specVersion: string,
  dir: string,
): Promise<{ result: ServerScenarioResult; output: string }> {
  const started = Date.now();
  // Made here: a CLI that fails before it writes anything must still leave a folder to look in.
  mkdirSync(dir, { recursive: true });
  const { exitCode, output } = await cli([
    'server',
    '--url',
    url,
    '--scenario',
    scenario,
    '--spec-version',
    specVersion,
    '--timeout',
    String(TIMEOUT_MS),
    '-o',
    dir,
  ]);
  const ms = Date.now() - started;
  // The CLI names a server run's folder `server-<scenario>-<time>`.
  const found = collect(dir).find((s) => s.scenario === `server-${scenario}`);
  const ids = (status: string): string[] =>
    (found?.problems ?? []).filter((p) => p.includes(`: ${status} `) || p.endsWith(`: ${status}`)).map((p) => p.split(': ')[0]!);
  const result: ServerScenarioResult = found
    ? {
        scenario,
        specVersion,
        exitCode,
        passed: found.passed,
        failed: found.failed,
        warnings: found.warnings,
        failedChecks: ids('FAILURE'),
        warningChecks: ids('WARNING'),
        problems: found.problems,
        ms,
      }
    : // No checks.json: the scenario never reached a verdict (a crashed, killed or refused run).
      {
        scenario,
        specVersion,
        exitCode,
        passed: 0,
        failed: 1,
        warnings: 0,
        failedChecks: ['no-verdict'],
        warningChecks: [],
        problems: [`no checks.json: the CLI exited ${exitCode}`],
        ms,
      };
  return { result, output };
}

const bad = (s: ServerScenarioResult): boolean => s.exitCode !== 0 || s.failed > 0 || s.warnings > 0;

/** Runs every leg's scenarios against `url`; resolves with the verdicts, never rejects. */
export async function runServerSuite(options: ServerSuiteOptions): Promise<ServerSuiteResult> {
  const started = Date.now();
  const specVersions = options.specVersions ?? ERAS;
  const jobs = Math.max(1, options.jobs ?? (Number(process.env.ALBEDO_CONFORMANCE_JOBS) || os.availableParallelism()));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'albedo-conformance-server-'));
  const tails: string[] = [];
  try {
    const [excluded, ...selections] = await Promise.all([
      extensionScenarios(),
      ...specVersions.map((v) => serverScenarios(v).catch((err: Error) => err)),
    ]);
    const legs: ServerSuiteResult['legs'] = [];
    let n = 0;
    for (const [i, specVersion] of specVersions.entries()) {
      const legStarted = Date.now();
      const selection = selections[i]!;
      if (selection instanceof Error) {
        tails.push(selection.message);
        const scenario = { scenario: '(list)', specVersion, exitCode: 1, passed: 0, failed: 1, warnings: 0, ms: 0 };
        legs.push({
          specVersion,
          scenarios: [{ ...scenario, failedChecks: ['list'], warningChecks: [], problems: [selection.message] }],
          ms: 0,
        });
        continue;
      }
      const names = options.scenarios ? selection.filter((s) => options.scenarios!.includes(s)) : selection;
      const one = (name: string) => runOne(options.url, name, specVersion, path.join(dir, String(n++)));
      // The scenarios that read a list twice and compare run alone, after the rest: another scenario's trigger
      // (test_trigger_tool_change, the stateless one's) changing the list between their reads would make theirs
      // untestable (a WARNING), as it did in a CI run where the two ran side by side.
      const runs = [
        ...(await pool(
          names.filter((s) => !ALONE.has(s)),
          jobs,
          one,
        )),
        ...(await pool(
          names.filter((s) => ALONE.has(s)),
          1,
          one,
        )),
      ];
      for (const r of runs.filter((r) => bad(r.result)))
        tails.push(
          [
            `--- ${r.result.scenario}@${specVersion}: exit ${r.result.exitCode}; ${r.result.problems.join('; ')}`,
            ...r.output.split('\n').slice(-20),
          ].join('\n'),
        );
      legs.push({ specVersion, scenarios: runs.map((r) => r.result), ms: Date.now() - legStarted });
    }
    const offered = new Set(selections.flatMap((s) => (s instanceof Error ? [] : s)));
    return {
      url: options.url,
      legs,
      excluded,
      unknown: (options.scenarios ?? []).filter((s) => !offered.has(s)),
      failures: legs.flatMap((l) => l.scenarios.filter(bad).map((s) => `${s.scenario}@${l.specVersion}`)),
      ms: Date.now() - started,
      tail: tails.join('\n'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `scenario@specVersion` of the runs `reference` passed and `other` did not (or did not run): what a gateway lost. */
export function regressions(reference: ServerSuiteResult, other: ServerSuiteResult): string[] {
  const passedBy = (r: ServerSuiteResult): Set<string> =>
    new Set(r.legs.flatMap((l) => l.scenarios.filter((s) => !bad(s)).map((s) => `${s.scenario}@${l.specVersion}`)));
  const theirs = passedBy(other);
  return [...passedBy(reference)].filter((k) => !theirs.has(k)).sort();
}

/** One line per scenario: its verdict in each leg (`pass`, `FAIL`, or `-` when the leg does not include it). */
export function table(result: ServerSuiteResult): string {
  const eras = result.legs.map((l) => l.specVersion);
  const names = [...new Set(result.legs.flatMap((l) => l.scenarios.map((s) => s.scenario)))].sort();
  const cell = (name: string, era: string): string => {
    const s = result.legs.find((l) => l.specVersion === era)?.scenarios.find((x) => x.scenario === name);
    return !s ? '-' : bad(s) ? `FAIL (${[...s.failedChecks, ...s.warningChecks].join(', ')})` : 'pass';
  };
  return [`| scenario | ${eras.join(' | ')} |`, `| --- |${eras.map(() => ' --- |').join('')}`]
    .concat(names.map((n) => `| ${n} | ${eras.map((e) => cell(n, e)).join(' | ')} |`))
    .join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const argv = process.argv.slice(2);
  const all = (flag: string): string[] => argv.flatMap((a, i) => (a === flag && argv[i + 1] !== undefined ? [argv[i + 1]!] : []));
  const url = all('--url')[0];
  if (!url) {
    process.stderr.write('usage: node test/conformance/server.ts --url URL [--spec-version V]... [--scenario S]... [--jobs N] [--json]\n');
    process.exit(2);
  }
  const specVersions = all('--spec-version');
  const scenarios = all('--scenario');
  const jobs = Number(all('--jobs')[0]) || undefined;
  const r = await runServerSuite({
    url,
    specVersions: specVersions.length ? specVersions : undefined,
    scenarios: scenarios.length ? scenarios : undefined,
    jobs,
  });
  if (argv.includes('--json')) process.stdout.write(JSON.stringify(r, null, 2) + '\n');
  else {
    process.stdout.write(table(r) + '\n\n');
    const runs = r.legs.reduce((k, l) => k + l.scenarios.length, 0);
    process.stdout.write(
      `${r.failures.length ? 'FAIL' : 'ok  '} ${runs - r.failures.length}/${runs} scenario runs passed in ${(r.ms / 1000).toFixed(0)} s; ` +
        `excluded (extensions): ${r.excluded.join(', ') || 'none'}${r.unknown.length ? `; unknown: ${r.unknown.join(', ')}` : ''}\n`,
    );
    if (r.failures.length) process.stdout.write(r.tail + '\n');
  }
  process.exit(r.failures.length || r.unknown.length ? 1 : 0);
}
