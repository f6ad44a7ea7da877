// What an attacker on the machine tried against the daemon (issue 11's
// hardening review): the health route's proof of identity for the CLI
// (`?nonce=` → an HMAC under the token), a request with two Host headers,
// bodies nested past the bound on every body route (400, not a stack
// overflow's 500), server names no file or URL should hold ('.', '..',
// control characters, an undecodable %XX), and a sign-out of a stdio
// server (refused before anything is tried or written).
import t from 'tap';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { MAX_DEPTH } from '../../protocol/bounds.ts';
import { settingsNameProblem } from '../../protocol/settings.ts';
import { NODE, newTag, tempHome } from '../helpers.ts';
import { entry, srv, startDaemon } from './harness.ts';

t.setTimeout(170_000);

const proofOf = (token: string, nonce: string): string =>
  createHmac('sha256', Buffer.from(token, 'utf8')).update(nonce, 'utf8').digest('base64url');

/** `'{"a":' × n, 1, '}' × n`: a value nested n levels. */
const deep = (n: number): string => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

/** One raw HTTP/1.1 exchange; resolves with the status of the answer. */
function rawStatus(port: number, text: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let out = '';
    s.setEncoding('utf8');
    s.on('data', (c: string) => {
      out += c;
      const m = /^HTTP\/1\.1 (\d{3}) /.exec(out);
      if (m && out.includes('\r\n\r\n')) {
        s.destroy();
        resolve(Number(m[1]));
      }
    });
    s.on('error', reject);
    s.on('close', () => reject(new Error(`no answer: ${JSON.stringify(out.slice(0, 200))}`)));
    s.write(text);
  });
}

t.test('server names: not ".", "..", nor any control character', async (t) => {
  for (const bad of ['.', '..', 'a\u0000b', 'tab\there', 'new\nline', 'del\u007f', 'c1\u0085', '\u009f', '\u001b[31mred']) {
    t.type(settingsNameProblem(bad), 'string', `${JSON.stringify(bad)} is refused`);
  }
  for (const ok of ['a.b', '...', '.hidden', 'h.example.com/mcp', 'ünïcode', 'a b', '%41']) {
    t.equal(settingsNameProblem(ok), undefined, `${JSON.stringify(ok)} is a name`);
  }
});

t.test('the daemon against hostile input', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const marker = path.join(home, 'tried.txt');
  // `once` writes the marker whenever it is run: a try of it leaves the file.
  const once = entry(NODE, ['-e', `require('fs').appendFileSync(${JSON.stringify(marker)}, 'ran\\n')`]);
  writeFileSync(
    path.join(home, 'extensions.json'),
    JSON.stringify({ mcp: { servers: { srv: { command: 'x', enabled: false }, once } } }, null, 2),
  );
  const d = await startDaemon(t, home, { tag });
  const port = d.info.port;
  t.equal((await d.call('PATCH', srv('srv'), { body: { secrets: { env: { K: 'kept-secret-7q' } } } })).status, 200, 'creds.json exists');
  const session = (await d.call('POST', '/v1/sessions', { body: { extensions: { mcp: false } } })).body.id as string;
  t.type(session, 'string', 'a session (MCP off: `once` is not dialled)');
  const files = (): Array<Buffer | null> =>
    ['extensions.json', 'creds.json'].map((f) => (existsSync(path.join(home, f)) ? readFileSync(path.join(home, f)) : null));
  const before = files();

  t.test('GET /v1/health?nonce=N proves the daemon holds the token of daemon.json', async (t) => {
    const nonce = randomBytes(16).toString('hex');
    const r = await d.call('GET', `/v1/health?nonce=${nonce}`, { token: null });
    t.equal(r.status, 200, 'no token needed');
    t.same(Object.keys(r.body).sort(), ['ok', 'proof', 'version']);
    t.same([r.body.ok, r.body.version], [true, d.info.version]);
    t.equal(r.body.proof, proofOf(d.info.token, nonce), 'base64url(HMAC-SHA256(token, nonce))');
    const wrong = d.info.token.slice(0, -1) + (d.info.token.endsWith('A') ? 'B' : 'A');
    t.not(r.body.proof, proofOf(wrong, nonce), 'another token gives another proof');
    const other = randomBytes(64).toString('hex').toUpperCase();
    t.equal(
      (await d.call('GET', `/v1/health?nonce=${other}`, { token: null })).body.proof,
      proofOf(d.info.token, other),
      '128 hex characters, upper case: the nonce as sent',
    );
    t.not(r.body.proof, proofOf(d.info.token, other), 'another nonce, another proof');
    t.same((await d.call('GET', '/v1/health', { token: null })).body, { ok: true, version: d.info.version }, 'no nonce: no proof');
    t.notOk(r.text.includes(d.info.token), 'never the token itself');
    const bad = [
      'abc',
      'a'.repeat(15),
      'a'.repeat(129),
      'g'.repeat(16),
      '',
      `${nonce}%20`,
      `${nonce}&nonce=${nonce}`,
      '0x' + 'a'.repeat(16),
    ];
    for (const n of bad) {
      const b = await d.call('GET', `/v1/health?nonce=${n}`, { token: null });
      t.match(
        b,
        { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['query', 'nonce'] } } },
        `nonce ${JSON.stringify(n)}`,
      );
      t.notOk('proof' in (b.body ?? {}), 'and no proof');
    }
  });

  t.test('two Host headers: 421, in either order', async (t) => {
    const good = `127.0.0.1:${port}`;
    for (const [a, b] of [
      [good, `evil.example:${port}`],
      [`evil.example:${port}`, good],
      [good, good],
    ]) {
      const text = `GET /v1/health HTTP/1.1\r\nHost: ${a}\r\nHost: ${b}\r\n\r\n`;
      t.equal(await rawStatus(port, text), 421, `Host ${a} then ${b}`);
    }
    const spelled = `GET /v1/mcp/servers HTTP/1.1\r\nhost: ${good}\r\nHOST: ${good}\r\nAuthorization: Bearer ${d.info.token}\r\n\r\n`;
    t.equal(await rawStatus(port, spelled), 421, 'names spelled in two cases count as two');
    t.equal(await rawStatus(port, `GET /v1/health HTTP/1.1\r\nHost: ${good}\r\n\r\n`), 200, 'one Host is served');
  });

  t.test(`a body nested past ${MAX_DEPTH} levels is a 400 at ["body"] on every body route`, async (t) => {
    const n = 10_000;
    const routes: Array<[string, string, string]> = [
      ['PUT', srv('deepx'), `{"command":"x","enabled":false,"args":[${deep(n)}]}`],
      ['PUT', srv('deepx') + '?dry_run=true', `{"command":"x","enabled":false,"x":${deep(n)}}`],
      ['PATCH', srv('srv'), `{"x":${deep(n)}}`],
      ['PATCH', srv('srv') + '?dry_run=true', `{"secrets":{"env":{"K":""}},"env":${deep(n)}}`],
      ['PATCH', '/v1/mcp', `{"enabled":${deep(n)}}`],
      ['POST', '/v1/sessions', `{"servers":${deep(n)}}`],
      ['POST', `/v1/sessions/${session}/calls`, `{"name":"srv/x","arguments":{"a":${deep(n)}}}`],
      ['POST', `/v1/sessions/${session}/activity`, `{"kind":${deep(n)}}`],
      ['POST', '/v1/auth/logins/mcp:srv/callback', `{"url":${deep(n)}}`],
    ];
    for (const [method, p, raw] of routes) {
      for (const type of ['application/json', 'application/merge-patch+json']) {
        const r = await d.call(method, p, { raw, headers: { 'content-type': type } });
        t.match(r, { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body'] } } }, `${method} ${p} (${type})`);
        t.same(r.body.error.path, ['body']);
      }
    }
    // Below the bound the body is judged by its schema as before: an unknown field is named.
    const within = await d.call('PATCH', srv('srv') + '?dry_run=true', {
      raw: `{"x":${deep(MAX_DEPTH - 2)}}`,
      headers: { 'content-type': 'application/json' },
    });
    t.match(within, { status: 400, body: { error: { path: ['body', 'x'] } } }, `${MAX_DEPTH - 1} levels: not refused for its depth`);
    t.same(files(), before, 'extensions.json and creds.json byte for byte as they were');
    t.same(
      (await d.call('GET', '/v1/sessions')).body.sessions.map((s: { id: string }) => s.id),
      [session],
      'no session opened',
    );
    t.equal((await d.call('GET', '/v1/health')).status, 200, 'the daemon still serves');
  });

  t.test('a name with an undecodable %XX or a control character is refused at ["params", "name"]', async (t) => {
    const names = ['%ff', 'a%ffb', 'a%20%ff', '%e2%82', 'a%00b', 'tab%09', 'esc%1B', 'c1%C2%85', 'del%7f'];
    for (const n of names) {
      for (const method of ['PUT', 'PATCH']) {
        const r = await d.call(method, `/v1/mcp/servers/${n}`, { body: { command: 'x', enabled: false } });
        t.match(
          r,
          { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['params', 'name'] } } },
          `${method} /v1/mcp/servers/${n}`,
        );
      }
    }
    const fine = await d.call('PUT', '/v1/mcp/servers/a%25%2541?dry_run=true', { body: { command: 'x', enabled: false } });
    t.match(fine, { status: 200, body: { saved: false, created: true } }, 'a name whose % sequences decode is still a name (dry run)');
    t.same(files(), before, 'nothing was written');
  });

  t.test('secrets.oauth: null on a stdio server: 400 at ["body", "secrets", "oauth"], nothing tried or written', async (t) => {
    for (const [method, body] of [
      ['PATCH', { secrets: { oauth: null } }],
      ['PUT', { ...once, secrets: { oauth: null } }],
    ] as const) {
      for (const q of ['', '?dry_run=true']) {
        const r = await d.call(method, srv('once') + q, { body });
        t.match(
          r,
          { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body', 'secrets', 'oauth'] } } },
          `${method}${q}`,
        );
      }
    }
    t.notOk(existsSync(marker), 'the server was not tried');
    t.same(files(), before, 'extensions.json and creds.json byte for byte as they were');
  });
});
