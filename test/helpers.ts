/**
 * Shared test helpers: fixture paths, an Albedo per test with teardown, error
 * assertions by code, and the leftover-process check. Every server a test
 * starts carries ALBEDO_TEST_TAG in its environment, which its children
 * inherit, so /proc tells whether anything of that test is still alive.
 */
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { readdirSync, readFileSync, mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAlbedo, type Albedo, type AlbedoOptions } from '../api/albedo.ts';
import { AlbedoError } from '../protocol/errors.ts';
import type { StdioServerInput } from '../protocol/config.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * The protocol/ and platform/ modules the CLI may load (built-ins only, no zod): the command-line splitter, the
 * private-directory check, the opener's argument vector, pending files, process liveness.
 */
export const CLI_PROTOCOL = new Set([
  'protocol/command-line.ts',
  'protocol/private-dir.ts',
  'protocol/opener.ts',
  'protocol/pending-files.ts',
  'platform/process.ts',
]);
export const NODE = process.execPath;
export const fixture = (name: string): string => path.join(ROOT, 'test', 'fixtures', name);
export const EVERYTHING = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');

type Tap = { teardown(fn: () => unknown): void };

/** A unique tag for this test's processes. */
export function newTag(): string {
  return `albedo-test-${randomUUID()}`;
}

/** A stdio config for a fixture script, tagged. */
export function server(tag: string, script: string, args: string[] = [], extra: Partial<StdioServerInput> = {}): StdioServerInput {
  return { command: NODE, args: [script, ...args], ...extra, env: { ALBEDO_TEST_TAG: tag, ...(extra.env ?? {}) } };
}

/** PIDs of live (non-zombie) processes whose environment carries `tag`. */
export function taggedPids(tag: string): number[] {
  const needle = Buffer.from(`ALBEDO_TEST_TAG=${tag}\0`);
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const env = readFileSync(`/proc/${d}/environ`);
      if (env.indexOf(needle) < 0) continue;
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state !== 'Z') out.push(Number(d));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

/** Waits (bounded) until no process carries `tag`; returns the survivors. */
export async function waitNoLeftovers(tag: string, withinMs = 10_000): Promise<number[]> {
  const end = Date.now() + withinMs;
  let left = taggedPids(tag);
  while (left.length && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 50));
    left = taggedPids(tag);
  }
  return left;
}

/** Waits (bounded) until `pred` holds. */
export async function until(pred: () => boolean | Promise<boolean>, withinMs = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + withinMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** An Albedo with no on-disk state unless `home` is given, closed at teardown, with the no-leftover check. */
export async function albedoFor(t: Tap, tag: string, opts: AlbedoOptions = {}): Promise<Albedo> {
  const a = await createAlbedo({ home: null, ...opts });
  t.teardown(async () => {
    await a.close();
    const left = await waitNoLeftovers(tag);
    // Teardown runs after the test's plan: a leftover fails the test by throwing.
    if (left.length) throw new Error(`processes outlived the test: ${left.join(', ')}`);
  });
  return a;
}

/** A fresh directory under the temporary directory, by its real path (no symlinks), removed at teardown. */
export function tempDir(t: { teardown(fn: () => unknown): void }, prefix: string): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function tempHome(t: Tap): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'albedo-home-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Awaits `p` and returns the AlbedoError it rejects with; fails the test if it resolves or throws something else. */
export async function rejection(p: Promise<unknown>): Promise<AlbedoError> {
  try {
    await p;
  } catch (err) {
    if (AlbedoError.is(err)) return err;
    throw new Error(`expected an AlbedoError, got ${String(err)}`);
  }
  throw new Error('expected a rejection, but it resolved');
}

export interface HttpFixture {
  url: string;
  /** The JSON lines the fixture printed after `listening` (bad-http-server.ts logs every request). */
  log: Array<Record<string, unknown>>;
  /** Other stdout lines. */
  lines: string[];
  stop(): Promise<void>;
}

/**
 * Starts an HTTP fixture server, waits for its `listening URL` line, and
 * stops it at teardown. It is not Albedo's child, so it carries a tag of its
 * own (`<tag>-server`): the leftover check of the test's tag is about what Albedo started.
 */
export async function httpFixture(t: Tap, tag: string, script: string, args: string[] = []): Promise<HttpFixture> {
  const child = spawn(NODE, [script, ...args], {
    env: { ...process.env, ALBEDO_TEST_TAG: `${tag}-server` },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const log: Array<Record<string, unknown>> = [];
  const lines: string[] = [];
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const rl = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${path.basename(script)} did not start: ${stderr}`)), 15_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${path.basename(script)} exited (${code}): ${stderr}`));
    });
    rl.on('line', (line) => {
      const m = /^listening (\S+)$/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      } else if (line.startsWith('{')) log.push(JSON.parse(line));
      else lines.push(line);
    });
  });
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.stdin!.end();
      setTimeout(() => child.kill('SIGKILL'), 3_000).unref();
    }));
  t.teardown(stop);
  return { url, log, lines, stop };
}

/** Every file under `dir` whose bytes hold `needle` (a secret that must be in none of them). */
export function filesHolding(dir: string, needle: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...filesHolding(p, needle));
    else if (e.isFile() && statSync(p).size < 512 * 1024 * 1024 && readFileSync(p).includes(needle)) out.push(p);
  }
  return out;
}
