// The Python binding (python/, issue 24): its unittest suites run against
// real daemons with real servers (server-everything, server-filesystem, the
// official SDK's server in a fixture, an MCP server behind a real
// authorization server), each Python test one assertion here; pyright
// type-checks the package, its tests and the example in strict mode; and the
// newcomer's script of docs/python.md, installed with `pip install ./python`
// into a fresh venv with no package index, runs as written. No daemon a
// Python test started outlives the run.
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { NODE, ROOT, newTag, tempDir, waitNoLeftovers } from '../helpers.ts';
import { startOAuthStack } from '../fixtures/oauth-stack.ts';

t.setTimeout(1_200_000);

const PYTHON = process.env.ALBEDO_PYTHON || 'python3';

interface Run {
  code: number | null;
  out: string;
  err: string;
}

function run(cmd: string, args: string[], env: Record<string, string> = {}, cwd = ROOT): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, out, err }));
  });
}

const tag = newTag();
const base = tempDir(t, 'albedo-python-');
const env = (extra: Record<string, string> = {}): Record<string, string> => ({
  ALBEDO_TEST_ROOT: ROOT,
  ALBEDO_TEST_NODE: NODE,
  ALBEDO_COMMAND: `${NODE} ${path.join(ROOT, 'bin', 'albedo.js')}`,
  ALBEDO_TEST_TAG: tag,
  ALBEDO_TEST_TMP: base,
  PYTHONDONTWRITEBYTECODE: '1',
  ...extra,
});

t.test('pyright: the package, its tests and the example type-check in strict mode', async (t) => {
  const r = await run(NODE, [path.join(ROOT, 'node_modules', 'pyright', 'index.js'), '-p', 'python']);
  t.equal(r.code, 0, r.out + r.err);
  t.match(r.out, /0 errors/);
});

t.test("the binding's unittest suites, against real daemons and servers", async (t) => {
  const stack = await startOAuthStack();
  t.teardown(() => stack.close());
  const r = await run(PYTHON, ['-m', 'tests.run'], {
    ...env({ PYTHONPATH: path.join(ROOT, 'python'), ALBEDO_TEST_OAUTH_MCP_URL: stack.mcpUrl }),
  });
  // python/tests/run.py: one JSON line per test (setUpClass errors included) on stdout.
  const verdicts = r.out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { test: string; verdict: string; detail: string });
  t.ok(verdicts.length >= 20, `the suites ran (${verdicts.length} tests)`);
  for (const v of verdicts) {
    if (v.verdict === 'skipped') t.fail(`${v.test} was skipped (${v.detail}): every suite runs here`);
    else t.equal(v.verdict, 'ok', v.test, { detail: v.detail });
  }
  t.match(r.err, /\nOK\b/, 'unittest says OK');
  t.equal(r.code, 0, r.code === 0 ? 'exit 0' : r.err.slice(-6000));
  t.same(await waitNoLeftovers(tag, 30_000), [], 'no daemon or server a Python test started is left');
});

t.test("docs/python.md's first script: pip install ./python in a fresh venv (no index), then run as written", async (t) => {
  const doc = readFileSync(path.join(ROOT, 'docs', 'python.md'), 'utf8');
  const script = readFileSync(path.join(ROOT, 'python', 'examples', 'first.py'), 'utf8');
  t.ok(doc.includes('```python\n' + script + '```'), 'the script in the docs is python/examples/first.py, word for word');
  const venv = path.join(base, 'venv');
  t.equal((await run(PYTHON, ['-m', 'venv', venv])).code, 0, 'a venv');
  const pip = await run(path.join(venv, 'bin', 'pip'), ['install', '--no-index', '--quiet', './python'], { PIP_NO_CACHE_DIR: '1' });
  t.equal(pip.code, 0, pip.err);
  const home = path.join(base, 'first-home');
  const albedo = (args: string[]): Promise<Run> =>
    run(NODE, [path.join(ROOT, 'bin', 'albedo.js'), ...args], { ...env(), ALBEDO_HOME: home }, base);
  t.teardown(() => albedo(['daemon', 'stop']));
  const everything = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
  const add = await albedo(['mcp', 'add', 'everything', `--env=ALBEDO_TEST_TAG=${tag}`, '--', NODE, everything, 'stdio']);
  t.equal(add.code, 0, add.err);
  // Run from elsewhere, with no PYTHONPATH: the installed package is the one imported.
  const r = await run(
    path.join(venv, 'bin', 'python'),
    [path.join(ROOT, 'python', 'examples', 'first.py')],
    {
      ...env({ ALBEDO_HOME: home }),
      PYTHONPATH: '',
    },
    base,
  );
  t.equal(r.code, 0, r.err);
  t.match(r.out, /^everything\/echo: /m, 'the tools listed');
  t.match(r.out, /^Echo: hello$/m, 'the call');
  t.match(r.out, /^ALBEDO_NOT_FOUND not_run$/m, 'the error handled');
  const where = await run(path.join(venv, 'bin', 'python'), ['-c', 'import albedo; print(albedo.__file__)'], { PYTHONPATH: '' }, base);
  t.ok(where.out.trim().startsWith(venv), 'imported from the venv');
});
