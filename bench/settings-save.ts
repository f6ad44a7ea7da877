/**
 * Bench rows for a settings save (issue 21, item 4): what one save through
 * the daemon's SettingsWrites costs, in kernel calls (counted by an
 * interceptor, `kernel.use`: the calls to the settings service apart) and
 * in latency — a PUT of a switched-off server (the settings transaction
 * alone), a PATCH with If-Match (the merge and the precondition), and a PUT
 * of an enabled server (its strict save's try included: a raw echo server
 * started and reaped). In process, as the daemon runs it, without HTTP.
 *
 * It uses only what the daemon has used since before the save became one
 * transaction (SettingsWrites' put/patch, the kernel's interceptors), so the
 * same file measures the code before the change (run it in a checkout of
 * that commit) and after.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createAlbedo } from '../api/albedo.ts';
import type { Interceptor } from '../kernel/kernel.ts';
import { SettingsWrites } from '../daemon/writes.ts';
import { median, percentile, writeRawEchoJs, NODE } from './lib.ts';
import type { RowSink } from './proc.ts';

const GROUP = 'saves';

export interface SaveBenchContext {
  quick: boolean;
  rounds: number;
  row: RowSink;
  log: (s: string) => void;
}

interface Measured {
  /** Median over the rounds of each round's p50, ms. */
  p50: number;
  /** Kernel calls per save (all), and of them to the settings service. */
  calls: number;
  settingsCalls: number;
}

/** Runs `save(i)` `n` times after `warm` unmeasured ones, per round; counts the kernel calls each makes. */
async function measure(
  count: { all: number; settings: number },
  rounds: number,
  warm: number,
  n: number,
  save: (i: number) => Promise<unknown>,
): Promise<Measured> {
  let i = 0;
  const p50s: number[] = [];
  let calls = 0;
  let settingsCalls = 0;
  for (let r = 0; r < rounds; r++) {
    for (let w = 0; w < warm; w++) await save(i++);
    const lat: number[] = [];
    const before = { ...count };
    for (let k = 0; k < n; k++) {
      const t0 = performance.now();
      await save(i++);
      lat.push(performance.now() - t0);
    }
    calls = (count.all - before.all) / n;
    settingsCalls = (count.settings - before.settings) / n;
    p50s.push(
      percentile(
        lat.sort((a, b) => a - b),
        50,
      ),
    );
  }
  return { p50: median(p50s), calls, settingsCalls };
}

export async function settingsSaveRows(o: SaveBenchContext): Promise<void> {
  const { row, log } = o;
  const home = mkdtempSync(path.join(os.tmpdir(), 'albedo-bench-saves-'));
  const echo = writeRawEchoJs(home);
  const albedo = await createAlbedo({ home, transportWorkers: 1 });
  const count = { all: 0, settings: 0 };
  const counter: Interceptor = (next) => (c) => {
    count.all++;
    if (c.service === 'settings') count.settings++;
    return next(c);
  };
  albedo.kernel.use(counter);
  try {
    albedo.sessions.start();
    await albedo.kernel.call('settings', 'settings/get', {});
    const writes = new SettingsWrites({ kernel: albedo.kernel, authStatuses: () => albedo.authStatuses() }, { eraCachePath: null });
    const n = o.quick ? 20 : 200;
    const warm = o.quick ? 3 : 20;
    const rounds = o.quick ? 1 : o.rounds;

    log('saves: a PUT of a switched-off server (no try)');
    const off = await measure(count, rounds, warm, n, (i) =>
      writes.put('off', { command: NODE, args: [echo, `--v${i}`], enabled: false }, {}, false),
    );
    log('saves: a PATCH with If-Match');
    let etag = (await writes.put('patched', { command: NODE, args: [echo], enabled: false }, {}, false)).etag!;
    const patched = await measure(count, rounds, warm, n, async (i) => {
      const r = await writes.patch('patched', { callTimeoutMs: 10_000 + i }, { ifMatch: etag }, false);
      etag = r.etag!;
    });
    log('saves: a PUT of an enabled server (its try starts and reaps the server)');
    const tried = await measure(count, rounds, o.quick ? 1 : 3, o.quick ? 5 : 30, (i) =>
      writes.put('tried', { command: NODE, args: [echo, '--era', 'modern', `--v${i}`] }, {}, false),
    );

    const rows: Array<[string, Measured]> = [
      ['PUT of a switched-off server', off],
      ['PATCH with If-Match', patched],
      ['PUT of an enabled server, with its try', tried],
    ];
    for (const [what, m] of rows) {
      row({ group: GROUP, scenario: `settings save: ${what} (p50)`, unit: 'ms', albedo: m.p50, peer: null, better: 'lower' });
      row({ group: GROUP, scenario: `settings save: ${what}: kernel calls`, unit: 'calls', albedo: m.calls, peer: null, better: 'lower' });
      row({
        group: GROUP,
        scenario: `settings save: ${what}: calls to the settings service`,
        unit: 'calls',
        albedo: m.settingsCalls,
        peer: null,
        better: 'lower',
      });
    }
  } finally {
    await albedo.close();
    rmSync(home, { recursive: true, force: true });
  }
}
