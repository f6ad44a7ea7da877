// The CLI checks $ALBEDO_HOME as the daemon does before it reads anything
// there (issue 20, item 8): a home of another user's, or one under a
// directory another user may write, is refused (exit 7,
// ALBEDO_HOME_UNSAFE) — there, another user's process could have written a
// daemon.json and daemon.lock of its own, with a token of its own, pass the
// health proof and be sent `mcp add`'s secrets. The process here is that
// other user's daemon: it holds the token, proves it, and records every
// request it gets; it must get none. (Tests run as root: "another user" is
// uid 65534, made with chown.)
import t from 'tap';
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { NODE, newTag, tempHome } from '../helpers.ts';
import { errorCode, piped, stopDaemonAtTeardown } from './cli-harness.ts';

t.setTimeout(120_000);

type Tap = Parameters<typeof tempHome>[0];
const NOBODY = 65534;
const TOKEN = 'the-other-users-own-token-0123456789abcdefg';

/** The impostor, a process of its own (so `daemon stop` may signal it): it prints {"port"}, then one JSON line per request. */
const IMPOSTOR = `
import http from 'node:http';
import { createHmac } from 'node:crypto';
const token = process.argv[1];
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', () => {
    process.stdout.write(JSON.stringify({ request: \`\${req.method} \${req.url} \${req.headers.authorization ?? ''} \${body}\` }) + '\\n');
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/v1/health') {
      const proof = createHmac('sha256', Buffer.from(token, 'utf8')).update(url.searchParams.get('nonce') ?? '').digest('base64url');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, version: '0.1.0', proof }));
      return;
    }
    res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ name: 'x' }));
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\\n'));
`;

/** A daemon of someone else's: proves it holds TOKEN, answers 201 to anything else, and records every request. */
async function impostor(t: Tap): Promise<{ pid: number; port: number; received: string[] }> {
  const child = spawn(NODE, ['--input-type=module', '-e', IMPOSTOR, TOKEN], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  const received: string[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the impostor exited (${code})`)));
    createInterface({ input: child.stdout! }).on('line', (l) => {
      const v = JSON.parse(l);
      if (typeof v.port === 'number') resolve(v.port);
      else received.push(v.request);
    });
  });
  return { pid: child.pid!, port, received };
}

/** /proc/<pid>/stat's start time, as daemon.lock records it. */
function startTime(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

/** daemon.json and daemon.lock in `home` naming the impostor (this process, alive): what the old CLI believed. */
function plant(home: string, s: { pid: number; port: number }): void {
  writeFileSync(path.join(home, 'daemon.json'), JSON.stringify({ port: s.port, token: TOKEN, pid: s.pid, version: '0.1.0' }), {
    mode: 0o600,
  });
  writeFileSync(path.join(home, 'daemon.lock'), JSON.stringify({ pid: s.pid, start: startTime(s.pid) }) + '\n', { mode: 0o600 });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const root = process.getuid?.() === 0;

t.test(
  "a home of another user's is refused before daemon.json is read: its daemon gets nothing",
  { skip: !root && 'needs root to chown' },
  async (t) => {
    const home = tempHome(t);
    const s = await impostor(t);
    plant(home, s);
    chownSync(home, NOBODY, NOBODY);
    chmodSync(home, 0o700);
    const e = { home, tag: newTag() };

    const add = await piped(e, ['mcp', 'add', 'x', '--env', 'API_KEY=topsecret-value', '--', '/bin/true']);
    t.equal(add.code, 7, add.stderr);
    t.equal(errorCode(add.stderr), 'ALBEDO_HOME_UNSAFE');
    t.equal(add.stdout, '');
    const status = await piped(e, ['daemon', 'status', '--json']);
    t.equal(status.code, 7, 'daemon status refuses it too');
    t.equal(errorCode(status.stderr), 'ALBEDO_HOME_UNSAFE');
    const stop = await piped(e, ['daemon', 'stop', '--json']);
    t.equal(stop.code, 7, 'and daemon stop');
    t.ok(alive(s.pid), 'which signalled nobody');
    t.same(s.received, [], 'the impostor was sent nothing, not even the health question');
  },
);

t.test('a home whose parent others may write (not sticky) is refused too; nothing is made there', async (t) => {
  const base = tempHome(t);
  const shared = path.join(base, 'shared');
  mkdirSync(shared);
  chmodSync(shared, 0o777);
  const home = path.join(shared, 'home');
  mkdirSync(home, { mode: 0o700 });
  const s = await impostor(t);
  plant(home, s);
  const e = { home, tag: newTag() };

  const add = await piped(e, ['mcp', 'add', 'x', '--env', 'API_KEY=topsecret-value', '--', '/bin/true']);
  t.equal(add.code, 7, add.stderr);
  t.equal(errorCode(add.stderr), 'ALBEDO_HOME_UNSAFE');
  t.same(s.received, [], 'the impostor was sent nothing');

  // A home not made yet under such a directory: refused when the command would make it and start a daemon there.
  const fresh = { home: path.join(shared, 'not-yet'), tag: newTag() };
  stopDaemonAtTeardown(t, fresh);
  const list = await piped(fresh, ['mcp', 'list', '--json']);
  t.equal(list.code, 7, list.stderr);
  t.equal(errorCode(list.stderr), 'ALBEDO_HOME_UNSAFE');
});

t.test(
  "albedo probe --url checks the home too: another user's creds.json is never read, its server is sent nothing",
  { skip: !root && 'needs root to chown' },
  async (t) => {
    // The server another user's planted token would be sent to: records every request's Authorization.
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
      req.resume();
      res.writeHead(401).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.teardown(() => new Promise<void>((r) => server.close(() => r())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;

    const home = tempHome(t);
    const now = Date.now();
    writeFileSync(
      path.join(home, 'creds.json'),
      JSON.stringify({
        mcp: {
          pwn: {
            oauth: {
              url,
              state: 'signed_in',
              updatedAt: now,
              tokens: { accessToken: 'ATTACKER-PLANTED-TOKEN', tokenType: 'Bearer', issuer: new URL(url).origin, obtainedAt: now },
            },
          },
        },
      }),
      { mode: 0o644 },
    );
    chownSync(path.join(home, 'creds.json'), NOBODY, NOBODY);
    chownSync(home, NOBODY, NOBODY);
    chmodSync(home, 0o755);
    const before = readFileSync(path.join(home, 'creds.json'), 'utf8');

    const e = { home, tag: newTag(), env: { ALBEDO_NO_BROWSER: '1' } };
    for (const args of [
      ['probe', '--json', '--url', url, '--name', 'pwn'],
      ['probe', '--url', url, '--name', 'pwn', '--sign-out'],
    ]) {
      const r = await piped(e, args);
      t.equal(r.code, 7, `${args.join(' ')}: ${r.stderr}`);
      t.ok(r.stderr.includes('ALBEDO_HOME_UNSAFE'), 'the home is refused');
      t.equal(r.stdout, '');
    }
    t.same(seen, [], 'the server was sent nothing');
    t.equal(readFileSync(path.join(home, 'creds.json'), 'utf8'), before, 'creds.json untouched');
    t.same(readdirSync(home), ['creds.json'], 'nothing made in the home');
  },
);
