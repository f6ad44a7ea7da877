// How the command is started (issue 26, item 1): a Node without type
// stripping is told which Node is needed (not ERR_UNKNOWN_FILE_EXTENSION),
// by every way in — `node bin/albedo.ts`, `node bin/albedo.js`, the package's
// bin; and `npx albedo` in the clone prints nothing of npm's own (no
// EBADENGINE from the machine's older Node running npm) and finds npm's
// hidden lockfile valid, so it does not re-read every package on each call.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { NODE, ROOT } from '../helpers.ts';

t.setTimeout(170_000);

const run = (node: string, args: string[], env: NodeJS.ProcessEnv = process.env) =>
  spawnSync(node, args, { cwd: ROOT, env, encoding: 'utf8', timeout: 120_000 });
const codeOf = (stderr: string): string | undefined => /^albedo: (ALBEDO_[A-Z_]+):/m.exec(stderr)?.[1];

t.test('a Node without type stripping: exit 1, ALBEDO_NODE_TOO_OLD, by every entry', async (t) => {
  const bin = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).bin.albedo as string;
  for (const entry of ['bin/albedo.ts', 'bin/albedo.js', bin]) {
    const r = run(NODE, ['--no-experimental-strip-types', entry, '--version']);
    t.equal(r.status, 1, `${entry}: exit 1`);
    t.equal(r.stdout, '', `${entry}: nothing on stdout`);
    t.equal(codeOf(r.stderr), 'ALBEDO_NODE_TOO_OLD', `${entry}: the code says why`);
    t.notMatch(r.stderr, /ERR_UNKNOWN_FILE_EXTENSION/, `${entry}: not Node's own error`);
  }
  const ok = run(NODE, ['bin/albedo.ts', '--version']);
  t.equal(ok.status, 0, 'with type stripping it runs');
  t.match(ok.stdout, /^\d+\.\d+\.\d+\n$/);
});

// npm sets npm_node_execpath to the Node that runs npm itself: the machine's, often older than 22.
const npmNode = process.env.npm_node_execpath;
const npmCli = process.env.npm_execpath;
const npmNodeStrips = npmNode ? run(npmNode, ['-p', 'Boolean(process.features.typescript)']).stdout.trim() === 'true' : true;

t.test(
  "the machine's older Node, as npm runs it, gets the same answer",
  { skip: npmNodeStrips && "npm's Node strips types" },
  async (t) => {
    const r = run(npmNode!, ['bin/albedo.ts', '--version']);
    t.equal(r.status, 1);
    t.equal(codeOf(r.stderr), 'ALBEDO_NODE_TOO_OLD');
  },
);

t.test(
  "npx albedo in the clone: quiet, and npm's hidden lockfile is valid",
  { skip: !npmNode || !npmCli ? 'not run under npm' : false },
  async (t) => {
    const npx = path.join(path.dirname(npmCli!), 'npx-cli.js');
    const quiet = run(npmNode!, [npx, 'albedo', '--version']);
    t.equal(quiet.status, 0);
    t.match(quiet.stdout, /^\d+\.\d+\.\d+\n$/);
    t.equal(quiet.stderr, '', 'nothing on stderr (no EBADENGINE blocks)');
    // npm's verbose log says why it could not use node_modules/.package-lock.json; the npx cache's own
    // tree (paths outside the clone, `../…`) always fails and is not ours to fix.
    const verbose = run(npmNode!, [npx, '--loglevel', 'verbose', 'albedo', '--version']);
    t.equal(verbose.status, 0);
    const ours = verbose.stderr
      .split('\n')
      .filter((l) => /shrinkwrap failed to load node_modules\/\.package-lock\.json (?!.*: \.\.\/)/.test(l));
    t.same(ours, [], "the clone's hidden lockfile loads (npm does not walk node_modules)");
  },
);
