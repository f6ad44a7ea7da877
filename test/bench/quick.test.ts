// `npm run bench -- --quick` in CI, so the harness never rots: it must run
// every scenario against both clients and write the three result files. It
// asserts nothing about speed.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, NODE } from '../helpers.ts';

// The quick run takes about a minute on an idle two-core machine and three beside the rest of the suite (measured: 178 s
// with a CI run alongside, before and after issue 20): this file's own limit, so a loaded machine does not fail it.
t.setTimeout(450_000);

t.test('bench --quick writes latest.json, latest.md and latest.svg with every scenario', async (t) => {
  const out = mkdtempSync(path.join(os.tmpdir(), 'albedo-bench-test-'));
  t.teardown(() => rmSync(out, { recursive: true, force: true }));
  const { NODE_OPTIONS: _drop, ...env } = process.env;
  const r = spawnSync(NODE, [path.join(ROOT, 'bench', 'run.ts'), '--quick', '--out', out], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
    timeout: 420_000,
  });
  t.equal(r.status, 0, r.stderr.slice(-3000));
  type Results = { meta: { mode: string }; rows: Array<{ group: string; albedo: number; peer: number | null }> };
  const json = JSON.parse(readFileSync(path.join(out, 'latest.json'), 'utf8')) as Results;
  t.equal(json.meta.mode, 'quick');
  const groups = new Set(json.rows.map((x) => x.group));
  t.same([...groups].sort(), [
    'HTTP calls',
    'LMDB values',
    'acp',
    'catalogue',
    'cli',
    'connect and discover',
    'context',
    'daemon',
    'gateway',
    'kernel hop',
    'large payloads',
    'memory',
    'normaliser transfer',
    'python',
    'saves',
    'sessions',
    'sharing',
    'soak',
    'stdio calls',
  ]);
  t.ok(
    json.rows.every((x) => Number.isFinite(x.albedo) && (x.peer === null || Number.isFinite(x.peer))),
    'every measurement is a number',
  );
  const md = readFileSync(path.join(out, 'latest.md'), 'utf8');
  t.match(md, /\| scenario \| Albedo \| peer \| ratio \| target \| met\? \|/);
  t.equal(
    md.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| scenario') && !l.startsWith('| ---')).length,
    json.rows.length,
  );
  t.match(readFileSync(path.join(out, 'latest.svg'), 'utf8'), /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  t.match(readFileSync(path.join(out, 'soak.svg'), 'utf8'), /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/, 'the soak plot');
});
