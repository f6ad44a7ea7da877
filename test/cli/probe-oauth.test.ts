// `albedo probe --url URL --sign-in` against a real authorization server
// (oidc-provider) and a bearer-checking official-SDK MCP server: the pasted
// callback in a real pseudo-terminal, the loopback callback from a browser,
// later probes using the stored token, sign-out, and exit 4 with a hint
// when a sign-in is needed.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pty from 'node-pty';
import { ROOT, NODE } from '../helpers.ts';
import { startOAuthStack } from '../fixtures/oauth-stack.ts';
import { browserStandIn, redirectOnly } from '../fixtures/browser.ts';

t.setTimeout(120_000);
const BIN = path.join(ROOT, 'bin', 'albedo.ts');

const stack = await startOAuthStack();
const home = mkdtempSync(path.join(os.tmpdir(), 'albedo-cli-oauth-'));
t.teardown(async () => {
  await stack.close();
  rmSync(home, { recursive: true, force: true });
});
const env = { ...process.env, ALBEDO_HOME: home, ALBEDO_NO_BROWSER: '1' } as Record<string, string>;

function run(args: string[], onStderr?: (text: string) => void): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(NODE, [BIN, 'probe', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      onStderr?.(stderr);
    });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const urlIn = (text: string): string | undefined => /(http:\/\/127\.0\.0\.1:\d+\/auth\?[^\s\x1b]+)/.exec(text)?.[1];

t.test('a probe that needs a sign-in exits 4 and says how', async (t) => {
  const r = await run(['--url', stack.mcpUrl, '--name', 'cli']);
  t.equal(r.code, 4);
  t.match(r.stderr, /ALBEDO_NEEDS_SIGN_IN/);
  t.match(r.stderr, /--sign-in --name cli/);
});

t.test('--sign-in in a terminal: the pasted callback URL completes it', async (t) => {
  const term = pty.spawn(NODE, [BIN, 'probe', '--url', stack.mcpUrl, '--name', 'cli', '--sign-in', '--json'], {
    cols: 400,
    rows: 40,
    cwd: ROOT,
    env,
  });
  let out = '';
  let pasted = false;
  const exited = new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)));
  term.onData((d) => {
    out += d;
    const url = urlIn(out.replace(/\r?\n/g, ''));
    if (!pasted && url && /paste the URL/.test(out)) {
      pasted = true;
      void redirectOnly(url).then(({ callbackUrl }) => term.write(`${callbackUrl}\r`));
    }
  });
  const code = await exited;
  t.equal(code, 0, `probe exited 0\n${out.slice(-2000)}`);
  t.ok(pasted, 'the URL was printed and the prompt shown');
  t.match(out, /signed in to cli as alice/);
  const json = JSON.parse(out.slice(out.indexOf('{"era"')).split(/\r?\n/)[0]!) as {
    tools: Array<{ name: string }>;
    auth: { state: string; account: string };
  };
  t.same(json.tools.map((x) => x.name).sort(), ['admin', 'whoami']);
  t.equal(json.auth.state, 'signed_in');
  t.equal(statSync(path.join(home, 'creds.json')).mode & 0o777, 0o600, 'creds.json is 0600');
});

t.test('a later probe uses the stored token', async (t) => {
  const r = await run(['--url', stack.mcpUrl, '--name', 'cli', '--call', 'whoami']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /sub=alice/);
  t.match(r.stdout, /auth {5}signed_in as alice/);
});

t.test('--sign-out, then --sign-in through the loopback callback (no terminal)', async (t) => {
  const out = await run(['--url', stack.mcpUrl, '--name', 'cli', '--sign-out']);
  t.equal(out.code, 0);
  t.match(out.stdout, /signed out of cli/);
  const needs = await run(['--url', stack.mcpUrl, '--name', 'cli']);
  t.equal(needs.code, 4, 'signed out: needs a sign-in again');
  let visited: Promise<unknown> | undefined;
  const r = await run(['--url', stack.mcpUrl, '--name', 'cli', '--sign-in', '--call', 'whoami'], (text) => {
    const url = urlIn(text);
    if (url && !visited) visited = browserStandIn(url);
  });
  await visited;
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /open this URL/);
  t.match(r.stdout, /sub=alice/);
});

t.test('bad usage', async (t) => {
  const r = await run(['--sign-in', '--', NODE, '-e', '0']);
  t.equal(r.code, 2);
  t.match(r.stderr, /go with --url/);
  const both = await run(['--url', stack.mcpUrl, '--sign-in', '--sign-out']);
  t.equal(both.code, 2);
  const fixed = await run(['--url', stack.mcpUrl, '--sign-in', '--bearer-env', 'HOME']);
  t.equal(fixed.code, 2);
  t.match(fixed.stderr, /fixed Authorization/);
});
