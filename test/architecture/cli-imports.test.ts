// The CLI's commands that talk to the daemon must not load the kernel or any
// service (issue 11, item 3; docs/design.md, "Layers and threads"): only
// `albedo daemon` (run) and `albedo probe` do, and bin/main.ts imports those
// two only on demand. Checked twice: every import of every bin/ file (static,
// dynamic and type-only), and the modules a real `albedo mcp list` loads
// against a real daemon.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { CLI_PROTOCOL, NODE, ROOT, fixture, newTag, tempHome } from '../helpers.ts';
import { BIN, sdkServer, startDaemon } from '../daemon/harness.ts';

const KERNEL_SIDE = ['api', 'services', 'kernel', 'daemon'];
/**
 * protocol/ and platform/ modules with no zod (nothing heavy) that the CLI may load: the shared command-line splitter,
 * the private-directory check, the opener's pure half, the pending pages' removal, process liveness.
 */
const CHEAP_PROTOCOL = CLI_PROTOCOL;
/** Low modules the CLI may load only on demand (`import()`), never on a command's way: the locks bring proper-lockfile. */
const ON_DEMAND = new Set(['platform/lock.ts']);
/** The low layers: their modules are loaded by the CLI only when cheap (or on demand). */
const LOW = ['protocol', 'platform'];
/** The two commands that run the kernel in-process. */
const LOADS_KERNEL = new Set(['bin/commands/probe.ts', 'bin/commands/daemon.ts']);

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

interface Import {
  spec: string;
  dynamic: boolean;
  typeOnly: boolean;
}

/** Relative specifiers of `import … from`, `export … from`, `import type … from` and `import('…')`. */
export function importsOf(text: string): Import[] {
  const out: Import[] = [];
  const re =
    /(?:^|\n)\s*(import|export)(\s+type\b)?(?:\{[^}]*\}|[^'"\n;{])*?(?:from\s*)?['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;
  for (let m; (m = re.exec(text));) {
    if (m[4]) out.push({ spec: m[4], dynamic: true, typeOnly: false });
    else out.push({ spec: m[3]!, dynamic: false, typeOnly: !!m[2] });
  }
  return out;
}

t.test(
  'bin/ files other than commands/probe.ts and commands/daemon.ts import nothing of api/, services/, kernel/ or daemon/',
  async (t) => {
    const wrong: string[] = [];
    let checked = 0;
    for (const file of files(path.join(ROOT, 'bin'))) {
      const rel = path.relative(ROOT, file).split(path.sep).join('/');
      for (const imp of importsOf(readFileSync(file, 'utf8'))) {
        const target = path
          .relative(ROOT, path.resolve(path.dirname(file), imp.spec))
          .split(path.sep)
          .join('/');
        checked++;
        const top = target.split('/')[0]!;
        if (!LOADS_KERNEL.has(rel) && KERNEL_SIDE.includes(top)) wrong.push(`${rel} imports ${imp.spec}`);
        // protocol/ holds zod schemas: only its types are cheap enough for the CLI.
        const onDemand = imp.dynamic && ON_DEMAND.has(target);
        if (!LOADS_KERNEL.has(rel) && LOW.includes(top) && !imp.typeOnly && !CHEAP_PROTOCOL.has(target) && !onDemand)
          wrong.push(`${rel} loads ${imp.spec} at run time`);
        if (LOADS_KERNEL.has(target) && (rel !== 'bin/main.ts' || !imp.dynamic))
          wrong.push(`${rel} imports ${imp.spec} ${imp.dynamic ? '' : 'statically'}`);
      }
    }
    t.ok(checked > 20, `${checked} imports checked`);
    t.same(wrong, [], 'none');
    for (const cheap of CHEAP_PROTOCOL) {
      t.notMatch(
        readFileSync(path.join(ROOT, cheap), 'utf8'),
        /from '(zod|\.[^']*)'/,
        `${cheap} imports neither zod nor another module of ours`,
      );
    }
  },
);

t.test('the checker sees static, type-only and dynamic imports', async (t) => {
  t.same(
    importsOf(`import { x } from '../../api/albedo.ts';\nimport type { Y } from '../daemon/y.ts';\nawait import('./commands/probe.ts');`),
    [
      { spec: '../../api/albedo.ts', dynamic: false, typeOnly: false },
      { spec: '../daemon/y.ts', dynamic: false, typeOnly: true },
      { spec: './commands/probe.ts', dynamic: true, typeOnly: false },
    ],
  );
});

t.test(
  'albedo mcp list against a running daemon loads nothing of api/, services/, kernel/, daemon/, protocol/, platform/ but the cheap',
  async (t) => {
    const home = tempHome(t);
    const tag = newTag();
    const d = await startDaemon(t, home, { tag });
    t.equal((await d.call('PUT', `/v1/mcp/servers/sdk`, { body: sdkServer() })).status, 201);
    const log = path.join(home, 'loaded.txt');
    const run = (args: string[]) =>
      spawnSync(NODE, ['--import', fixture('load-log.ts'), BIN, ...args], {
        env: { ...process.env, ALBEDO_HOME: home, ALBEDO_LOAD_LOG: log },
        encoding: 'utf8',
        timeout: 60_000,
      });
    const r = run(['mcp', 'list', '--json']);
    t.equal(r.status, 0, r.stderr);
    t.same(
      JSON.parse(r.stdout).map((s: { name: string }) => s.name),
      ['sdk'],
      'it did list the servers',
    );
    const loaded = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .filter((u) => u.startsWith(`file://${ROOT}`));
    const rel = loaded.map((u) => decodeURIComponent(u.slice(`file://${ROOT}`.length)));
    t.ok(rel.includes('bin/client/client.ts'), "the log sees the CLI's own modules");
    t.same(
      rel.filter((f) => [...KERNEL_SIDE, ...LOW].includes(f.split('/')[0]!) && !CHEAP_PROTOCOL.has(f)),
      [],
      "none of the kernel's side",
    );
  },
);
