/**
 * Bench rows for the `albedo` command (issue 11, item 3): the wall time of
 * `albedo mcp list --json` against a running daemon (the real `albedo
 * daemon` process, five servers configured), started as a new process each
 * time, beside a bare Node start-up for scale (peer), alternating the two.
 * The command must not load the kernel: its target is 150 ms. Through `npx
 * albedo` (how a user runs it from a clone) npm's own work comes on top;
 * that row is measured when npx is on PATH, beside npx running a local bin.
 *
 * `node bench/cli.ts [--quick]` runs these rows alone and prints them.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { NODE, ROOT, median, servers } from './lib.ts';
import { manyOf, writeServers, type SessionBenchContext } from './sessions.ts';

const GROUP = 'cli';
const BIN = path.join(ROOT, 'bin', 'albedo.ts');

export interface CliBenchContext {
  quick: boolean;
  home: string;
  row: SessionBenchContext['row'];
  log(s: string): void;
}

/** Starts `albedo daemon` for `home`; resolves once it listens. */
async function daemon(home: string): Promise<{ stop(): Promise<void> }> {
  const child = spawn(NODE, [BIN, 'daemon'], { env: { ...process.env, ALBEDO_HOME: home }, stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the daemon exited with ${code}`)));
    createInterface({ input: child.stderr! }).on('line', (l) => {
      if (l.includes('listening on')) resolve();
    });
  });
  return {
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Wall time of one run of `cmd` to its exit, in ms; a failed run fails the bench. */
function wall(cmd: string, args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string }): number {
  const t0 = performance.now();
  const r = spawnSync(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr ?? r.error}`);
  return ms;
}

export async function cliRows(ctx: CliBenchContext): Promise<void> {
  const { row, log } = ctx;
  const runs = ctx.quick ? 3 : 20;
  const home = path.join(ctx.home, 'cli-start-up');
  writeServers(
    home,
    manyOf(5, () => servers.rawStdio('modern')),
  );
  log(`cli: albedo mcp list start-up, ${runs} runs`);
  const d = await daemon(home);
  try {
    const env = { ...process.env, ALBEDO_HOME: home };
    const list = [BIN, 'mcp', 'list', '--json'];
    // The first run pays for cold file caches; it is not counted.
    const listed = JSON.parse(spawnSync(NODE, list, { env, encoding: 'utf8' }).stdout) as unknown[];
    if (listed.length !== 5) throw new Error(`albedo mcp list listed ${listed.length} servers, not 5`);
    const cli: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < runs; i++) {
      cli.push(wall(NODE, list, { env }));
      bare.push(wall(NODE, ['-e', '0'], { env }));
    }
    row({
      group: GROUP,
      scenario: '`albedo mcp list` start-up against a running daemon (node bin/albedo.ts, wall, median)',
      unit: 'ms',
      albedo: median(cli),
      peer: median(bare),
      peerLabel: 'bare `node -e 0`',
      better: 'lower',
      target: '≤ 150 ms',
      targetAbs: 150,
    });
    if (spawnSync('npx', ['--version'], { env, stdio: 'ignore' }).status === 0) {
      // How a user runs it in a clone: `npx albedo` (npm installs the clone into its npx cache and
      // walks the tree each call); beside npx running a local bin (`npx node -e 0`), npx's own floor.
      const viaNpx: number[] = [];
      const npxFloor: number[] = [];
      const inClone = { env, cwd: ROOT };
      for (let i = 0; i < Math.min(runs, 10); i++) {
        viaNpx.push(wall('npx', ['albedo', 'mcp', 'list', '--json'], inClone));
        npxFloor.push(wall('npx', ['node', '-e', '0'], inClone));
      }
      row({
        group: GROUP,
        scenario: '`npx albedo mcp list` in the clone, against a running daemon (wall, median)',
        unit: 'ms',
        albedo: median(viaNpx),
        peer: median(npxFloor),
        peerLabel: '`npx node -e 0` (npx running a local bin)',
        better: 'lower',
      });
    } else {
      log('cli: npx is not on PATH; its row is left out');
    }
  } finally {
    await d.stop();
  }
}

// `node bench/cli.ts`: these rows alone, printed.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const home = mkdtempSync(path.join(os.tmpdir(), 'albedo-bench-cli-'));
  try {
    await cliRows({
      quick: process.argv.includes('--quick'),
      home,
      log: (s) => process.stderr.write(s + '\n'),
      row: (r) =>
        process.stdout.write(
          `${r.scenario}: ${r.albedo.toFixed(1)} ${r.unit}` +
            `${r.peer === null ? '' : ` (${r.peerLabel}: ${r.peer.toFixed(1)} ${r.unit})`}\n`,
        ),
    });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
