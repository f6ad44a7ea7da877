// Secrets off the command line (issue 20, item 9): `albedo mcp add|edit`
// take a bearer token or a header value from this command's environment
// (`--bearer-from VAR`, `--header-from Name=VAR`) or from stdin (`-`), so
// the value is never in an argument vector (/proc/PID/cmdline, readable by
// every local user). Through the real CLI and daemon: the value is stored
// (creds.json, never extensions.json) and sent — a node:http proxy on
// 127.0.0.1 in front of a real MCP server records what arrives — and a
// missing variable is exit 2 with nothing sent or changed.
import t from 'tap';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { NODE, fixture, httpFixture, newTag, tempHome } from '../helpers.ts';
import { BIN, startDaemon } from '../daemon/harness.ts';
import { daemonInfo, errorCode, stopDaemonAtTeardown, type CliEnv } from './cli-harness.ts';

t.setTimeout(170_000);

const TOKEN = 'tok-from-env-41x';
const PIPED_TOKEN = 'tok-from-stdin-93q';
const HEADER = 'key-from-env-77z';
const PIPED_HEADER = 'key-from-stdin-12w';
const SECRETS = [TOKEN, PIPED_TOKEN, HEADER, PIPED_HEADER];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  argv: string[];
}

/** `albedo ARGS` with pipes; `input` written to its stdin (then closed), `env` added to its environment. */
function albedo(e: CliEnv, args: string[], o: { env?: Record<string, string>; input?: string } = {}): Promise<Run> {
  const argv = [BIN, ...args];
  const { ALBEDO_TEST_TAG: _drop, ...base } = process.env as Record<string, string>;
  const child = spawn(NODE, argv, { cwd: path.dirname(BIN), env: { ...base, ALBEDO_HOME: e.home, TEST_SERVER_TAG: e.tag, ...o.env } });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  child.stdin.end(o.input ?? '');
  return new Promise((resolve) => child.once('close', (code) => resolve({ code: code ?? -1, stdout, stderr, argv })));
}

/** A recording proxy on 127.0.0.1 in front of `target`: every request's Authorization and X-Key headers. */
async function recorder(
  t: Parameters<typeof tempHome>[0],
  target: string,
): Promise<{ url: string; seen: Array<{ auth?: string; key?: string }> }> {
  const to = new URL(target);
  const seen: Array<{ auth?: string; key?: string }> = [];
  const server = http.createServer((req, res) => {
    seen.push({ auth: req.headers.authorization, key: req.headers['x-key'] as string | undefined });
    const up = http.request(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, host: to.host } },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => {
      if (!res.headersSent) res.writeHead(502).end();
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}${to.pathname}`, seen };
}

const files = (home: string): { ext: string; creds: any } => ({
  ext: existsSync(path.join(home, 'extensions.json')) ? readFileSync(path.join(home, 'extensions.json'), 'utf8') : '',
  creds: existsSync(path.join(home, 'creds.json')) ? JSON.parse(readFileSync(path.join(home, 'creds.json'), 'utf8')) : {},
});

t.test('--bearer-from and --header-from: from the environment or stdin, stored and sent, never in argv', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  await startDaemon(t, e.home, { tag: e.tag });
  // The server refuses any other token: a save that connects is a token that arrived.
  const mcp = await httpFixture(t, e.tag, fixture('sdk-http-server.ts'), ['--bearer', TOKEN]);
  const rec = await recorder(t, mcp.url);

  const fromEnv = await albedo(
    e,
    ['mcp', 'add', 'web', '--url', rec.url, '--bearer-from', 'MY_TOKEN', '--header-from', 'X-Key=MY_KEY', '--json'],
    { env: { MY_TOKEN: TOKEN, MY_KEY: HEADER } },
  );
  t.equal(fromEnv.code, 0, fromEnv.stderr);
  t.match(JSON.parse(fromEnv.stdout), {
    saved: true,
    check: { tried: true, result: 'connected' },
    server: { secrets: { bearer: true, header: 'X-Key' } },
  });
  t.notOk(
    SECRETS.some((s) => fromEnv.argv.join(' ').includes(s)),
    "no value in the command's argument vector",
  );
  t.ok(
    rec.seen.some((h) => h.auth === `Bearer ${TOKEN}` && h.key === HEADER),
    'the server was sent both',
  );
  let f = files(e.home);
  t.match(f.creds, { mcp: { web: { secrets: { bearerToken: TOKEN, header: { name: 'X-Key', value: HEADER } } } } }, 'stored in creds.json');
  t.notOk(
    SECRETS.some((s) => f.ext.includes(s)),
    'never in extensions.json',
  );
  t.notOk(
    SECRETS.some((s) => fromEnv.stdout.includes(s) || fromEnv.stderr.includes(s)),
    'nor printed',
  );

  // A stdin-read header replaces the stored one; the stored token still gets the server to answer.
  rec.seen.length = 0;
  const headerIn = await albedo(e, ['mcp', 'edit', 'web', '--header-from', 'X-Key=-', '--json'], { input: `${PIPED_HEADER}\n` });
  t.equal(headerIn.code, 0, headerIn.stderr);
  t.ok(
    rec.seen.some((h) => h.key === PIPED_HEADER),
    'the header read from stdin was sent (its line break dropped)',
  );
  t.equal(files(e.home).creds.mcp.web.secrets.header.value, PIPED_HEADER);

  // A token from stdin: the server (which takes only TOKEN) refuses PIPED_TOKEN, so the strict save refuses and keeps TOKEN.
  const wrongIn = await albedo(e, ['mcp', 'edit', 'web', '--bearer-from', '-', '--json'], { input: PIPED_TOKEN });
  t.not(wrongIn.code, 0, 'the token read from stdin was the one tried');
  t.equal(files(e.home).creds.mcp.web.secrets.bearerToken, TOKEN, 'and nothing changed');
  rec.seen.length = 0;
  const rightIn = await albedo(e, ['mcp', 'add', 'web2', '--url', rec.url, '--bearer-from', '-', '--json'], { input: `${TOKEN}\n` });
  t.equal(rightIn.code, 0, rightIn.stderr);
  t.ok(rec.seen.some((h) => h.auth === `Bearer ${TOKEN}`));
  t.equal(files(e.home).creds.mcp.web2.secrets.bearerToken, TOKEN, 'a token read from stdin is stored');
  t.notOk(
    SECRETS.some((s) => [...headerIn.argv, ...wrongIn.argv, ...rightIn.argv].join(' ').includes(s)),
    'no value in any argument vector',
  );

  // A variable that is not set: exit 2, nothing sent, nothing changed.
  f = files(e.home);
  rec.seen.length = 0;
  for (const args of [
    ['--bearer-from', 'NOT_SET_ANYWHERE_1'],
    ['--header-from', 'X-Key=NOT_SET_ANYWHERE_2'],
  ]) {
    const missing = await albedo(e, ['mcp', 'add', 'web3', '--url', rec.url, ...args, '--json']);
    t.equal(missing.code, 2, `${args.join(' ')}: exit 2`);
    t.equal(errorCode(missing.stderr), 'ALBEDO_INVALID_ARGUMENT');
    t.equal(missing.stdout, '', 'nothing on stdout');
    const edit = await albedo(e, ['mcp', 'edit', 'web', ...args, '--json']);
    t.equal(edit.code, 2, `edit ${args.join(' ')}: exit 2`);
  }
  t.same(rec.seen, [], 'the server was never tried');
  t.same(files(e.home), f, 'neither file changed');
});

/** The environment of process `pid`, as /proc/PID/environ holds it. */
function environOf(pid: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const eq = kv.indexOf('=');
    if (eq > 0) out[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  return out;
}

t.test('a daemon the command starts does not inherit the variables it read as secrets', async (t) => {
  const cases: Array<{ args: string[]; env: Record<string, string> }> = [
    {
      args: ['--url', 'http://127.0.0.1:9/mcp', '--bearer-from', 'MY_TOKEN', '--header-from', 'X-Key=MY_KEY'],
      env: { MY_TOKEN: TOKEN, MY_KEY: HEADER },
    },
    { args: ['--env', 'API_KEY', '--', NODE, '-e', '0'], env: { API_KEY: PIPED_TOKEN } },
  ];
  for (const c of cases) {
    const e: CliEnv = { home: tempHome(t), tag: newTag() };
    stopDaemonAtTeardown(t, e);
    const r = await albedo(e, ['mcp', 'add', 'y', '--disabled', '--json', ...c.args], {
      env: { ...c.env, KEPT_PLAIN: 'kept-plain-value' },
    });
    t.equal(r.code, 0, r.stderr);
    const info = daemonInfo(e.home);
    t.ok(info, 'a daemon was started');
    const env = environOf(info!.pid);
    t.equal(env.KEPT_PLAIN, 'kept-plain-value', 'the rest of the environment is passed on');
    for (const [k, v] of Object.entries(c.env)) {
      t.notOk(k in env, `${k} is not in the daemon's environment`);
      t.notOk(
        Object.values(env).some((x) => x.includes(v)),
        'nor its value',
      );
    }
    t.ok(Object.values(files(e.home).creds.mcp.y.secrets).length > 0, 'the secret was stored all the same');
  }
});

t.test('a value typed where a variable name goes is never echoed: exit 2, nothing sent', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  stopDaemonAtTeardown(t, e);
  const cases: Array<[string[], string]> = [
    [['--url', 'http://127.0.0.1:9/mcp', '--bearer-from', 'sk-live.SECRET123'], 'SECRET123'],
    [['--url', 'http://127.0.0.1:9/mcp', '--bearer-from', 'ghp_lowerSECRET9'], 'lowerSECRET9'],
    [['--url', 'http://127.0.0.1:9/mcp', '--header-from', 'X-Key=ghp_SECRETabc'], 'SECRETabc'],
    [['--url', 'http://127.0.0.1:9/mcp', '--header-from', 'X-Key: s3cretvalue'], 's3cretvalue'],
    [['--url', 'http://127.0.0.1:9/mcp', '--header', 'tok-literal-SECRET7'], 'SECRET7'],
    [['--env', 'sk-env.SECRET456', '--', NODE], 'SECRET456'],
    [['--env', 'sk_env_lowerSECRET', '--', NODE], 'lowerSECRET'],
  ];
  for (const [args, secret] of cases) {
    const r = await albedo(e, ['mcp', 'add', 'z', ...args]);
    t.equal(r.code, 2, `${args.join(' ')}: exit 2`);
    t.equal(errorCode(r.stderr), 'ALBEDO_INVALID_ARGUMENT');
    t.notOk(r.stdout.includes(secret) || r.stderr.includes(secret), 'the value is not echoed');
  }
  t.same(files(e.home).creds, {}, 'nothing stored');
});
