/**
 * The `albedo` command as the CLI tests run it: in a real terminal
 * (node-pty), where stdout and stderr share the screen, or with pipes when a
 * test must tell stdout from stderr. Every run gets its own $ALBEDO_HOME and
 * TEST_SERVER_TAG (which the daemon passes to servers whose entry names it:
 * `ALBEDO_TEST_TAG='${TEST_SERVER_TAG}'`). A daemon the CLI started by
 * itself is stopped at teardown, and no process of the test may outlive it.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pty from 'node-pty';
import { NODE, ROOT, waitNoLeftovers } from '../helpers.ts';
import { BIN } from '../daemon/harness.ts';

type Tap = { teardown(fn: () => unknown): void };

export interface CliEnv {
  home: string;
  tag: string;
  env?: Record<string, string>;
  cwd?: string;
}

export interface TermRun {
  code: number;
  /** What the terminal showed, line endings as \n, colour codes removed. */
  screen: string;
}

/** The environment of a run: the test's, its home, its tag (never ALBEDO_TEST_TAG itself: the daemon is not a server). */
function envOf(e: CliEnv): Record<string, string> {
  const { ALBEDO_TEST_TAG: _drop, ...base } = process.env as Record<string, string>;
  return { ...base, ALBEDO_HOME: e.home, TEST_SERVER_TAG: e.tag, ...e.env };
}

/**
 * Runs `albedo ARGS` in a terminal; `answers` type a line when the screen
 * first matches each pattern (in order), as a person would.
 */
export function term(e: CliEnv, args: string[], answers: Array<[RegExp, string]> = []): Promise<TermRun> {
  const p = pty.spawn(NODE, [BIN, ...args], { cols: 400, rows: 50, cwd: e.cwd ?? ROOT, env: envOf(e) });
  let screen = '';
  let next = 0;
  p.onData((d) => {
    screen += d;
    while (next < answers.length && answers[next]![0].test(screen)) {
      p.write(`${answers[next]![1]}\r`);
      next++;
    }
  });
  return new Promise((resolve) =>
    p.onExit(({ exitCode }) => {
      resolve({ code: exitCode, screen: screen.replace(/\r\n/g, '\n').replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '') });
    }),
  );
}

/** `--json` output in a terminal: the whole screen must be the one JSON document (nothing else was printed). */
export function screenJson(r: TermRun): any {
  return JSON.parse(r.screen);
}

export interface PipeRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `albedo ARGS` with pipes (stdin closed: not a terminal). */
export function piped(e: CliEnv, args: string[]): Promise<PipeRun> {
  const child = spawn(NODE, [BIN, ...args], { cwd: e.cwd ?? ROOT, env: envOf(e), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code: code ?? -1, stdout, stderr })));
}

/** The one error line a failed command printed: its code. */
export function errorCode(text: string): string | undefined {
  return /^albedo: (ALBEDO_[A-Z_]+): /m.exec(text)?.[1];
}

/** daemon.json of `home`, if any. */
export function daemonInfo(home: string): { pid: number; port: number; token: string; version: string } | null {
  try {
    return JSON.parse(readFileSync(path.join(home, 'daemon.json'), 'utf8'));
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Waits (bounded) until `pid` is gone. */
export async function gone(pid: number, withinMs = 60_000): Promise<boolean> {
  const end = Date.now() + withinMs;
  while (alive(pid)) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/** At teardown: whatever daemon runs for `home` (one the CLI started) is stopped, and nothing tagged is left. */
export function stopDaemonAtTeardown(t: Tap, e: CliEnv): void {
  t.teardown(async () => {
    const info = daemonInfo(e.home);
    if (info && alive(info.pid)) {
      process.kill(info.pid, 'SIGTERM');
      if (!(await gone(info.pid))) process.kill(info.pid, 'SIGKILL');
    }
    const left = await waitNoLeftovers(e.tag, 15_000);
    if (left.length) throw new Error(`processes outlived the test: ${left.join(', ')}`);
  });
}
