/**
 * What the bench files that measure in processes of their own share, kept
 * apart from bench/lib.ts: that one loads the SDK client, which would count
 * in a child's peak RSS.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const NODE = process.execPath;

/** The row sink run.ts hands to each group (bench/report.ts makes the row). */
export type RowSink = (r: {
  group: string;
  scenario: string;
  unit: string;
  albedo: number;
  peer: number | null;
  peerLabel?: string;
  better: 'higher' | 'lower';
  target?: string;
  targetRatio?: number;
  targetAbs?: number;
}) => void;

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** Runs `node [nodeArgs] script args` and resolves with the JSON of the last line it prints; rejects with its stderr's tail. */
export function runJson<T>(script: string, args: string[], nodeArgs: string[] = []): Promise<T> {
  return new Promise((resolve, reject) => {
    const p = spawn(NODE, [...nodeArgs, script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    p.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d;
    });
    p.on('close', (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split('\n').pop()!) as T)
        : reject(new Error(`${script} ${args.join(' ')} failed (${code}): ${err.slice(-2000)}`)),
    );
  });
}
