// The web pane's files, served by the daemon under /ui with no credential
// (issue 12 item 2): web/ of the package and the Preact + htm module, the
// right Content-Type and every security header on every answer; nothing
// outside web/ however the path is spelled (dot-segments, encoded ones, a
// dotfile, a symbolic link out), GET and HEAD only, and the guard's Host
// check still in force (DNS rebinding).
import t from 'tap';
import http from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ROOT, newTag, tempHome } from '../helpers.ts';
import { startDaemon } from './harness.ts';
import { resolveUiFile, SECURITY_HEADERS, TYPES, uiFiles, vendorFile } from '../../daemon/ui-static.ts';
import { UiAuth } from '../../daemon/ui-auth.ts';

t.setTimeout(170_000);

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** One request with the path exactly as given (no client normalises it) and exactly these headers. */
function raw(port: number, method: string, target: string, headers: Record<string, string> = {}, body?: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const h: Record<string, string> = { host: `127.0.0.1:${port}`, ...headers };
    if (body !== undefined) h['content-length'] = String(Buffer.byteLength(body));
    const req = http.request({ host: '127.0.0.1', port, method, path: target, headers: h, setHost: false, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res
        .on('data', (c: Buffer) => chunks.push(c))
        .on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

type Tap = { equal(a: unknown, b: unknown, m: string): void };

function secured(t: Tap, r: Raw, what: string): void {
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) {
    if (k === 'cache-control') continue;
    t.equal(r.headers[k], v, `${what}: ${k}`);
  }
}

t.test('the daemon serves web/ and the vendor module under /ui, with the security headers, and nothing else', async (t) => {
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag: newTag() });
  const port = d.info.port;
  const web = path.join(ROOT, 'web');

  t.test('files of web/ and the vendor module: bytes, type, headers; no token needed', async (t) => {
    const labels = await raw(port, 'GET', '/ui/shared/labels.js');
    t.equal(labels.status, 200);
    t.equal(labels.headers['content-type'], 'text/javascript; charset=utf-8');
    t.same(labels.body, readFileSync(path.join(web, 'shared', 'labels.js')), 'the file as it is');
    secured(t, labels, 'a file');
    t.equal(labels.headers['cache-control'], 'no-cache');

    const vendor = await raw(port, 'GET', '/ui/vendor/preact-htm.js');
    t.equal(vendor.status, 200);
    t.equal(vendor.headers['content-type'], 'text/javascript; charset=utf-8');
    t.same(
      vendor.body,
      readFileSync(path.join(ROOT, 'node_modules', 'htm', 'preact', 'standalone.module.js')),
      'htm/preact/standalone.module.js',
    );
    t.match(vendor.body.toString('utf8'), /export\s*\{/, 'an ES module');
    secured(t, vendor, 'the vendor module');

    const index = await raw(port, 'GET', '/ui/');
    secured(t, index, '/ui/');
    if (existsSync(path.join(web, 'index.html'))) {
      t.equal(index.status, 200);
      t.equal(index.headers['content-type'], 'text/html; charset=utf-8');
      t.same(index.body, readFileSync(path.join(web, 'index.html')), '/ui/ is web/index.html');
    } else {
      t.equal(index.status, 404, 'no web/index.html yet: /ui/ is a 404');
    }

    const bare = await raw(port, 'GET', '/ui');
    t.equal(bare.status, 308);
    t.equal(bare.headers.location, '/ui/');
    secured(t, bare, 'the redirect');

    const head = await raw(port, 'HEAD', '/ui/shared/labels.js');
    t.equal(head.status, 200);
    t.equal(head.headers['content-length'], String(labels.body.length), 'HEAD: the length');
    t.equal(head.body.length, 0, 'and no body');
  });

  t.test('nothing outside web/, however the path is spelled: 404', async (t) => {
    // package.json sits right above web/ (and is a type the pane serves): a path that escaped would find it.
    const attempts = [
      '/ui/../package.json',
      '/ui/%2e%2e/package.json',
      '/ui/%2E%2E/package.json',
      '/ui/.%2e/package.json',
      '/ui/%2e%2e%2fpackage.json',
      '/ui/shared/../../package.json',
      '/ui/shared/%2e%2e/%2e%2e/package.json',
      '/ui/..%2f..%2fpackage.json',
      '/ui/..%5cpackage.json',
      '/ui/../node_modules/htm/package.json',
      '/ui/shared%2flabels.js',
      '/ui//shared/labels.js',
      '/ui/shared//labels.js',
      '/ui/./shared/labels.js',
      '/ui/shared/labels.js/',
      '/ui/shared/labels.js%00.js',
      '/ui/.hidden',
      '/ui/.hidden.js',
      '/ui/shared/.labels.js',
      '/ui/%2ehidden.js',
      '/ui/shared',
      '/ui/shared/',
      '/ui/shared/labels',
      '/ui/nothing.js',
      '/ui/%ff.js',
      '/ui/vendor/preact-htm.js/..',
      '/ui/../daemon.json',
    ];
    for (const p of attempts) {
      const r = await raw(port, 'GET', p);
      t.equal(r.status, 404, `${p}: 404`);
      t.equal(JSON.parse(r.body.toString('utf8')).error.code, 'ALBEDO_NOT_FOUND', `${p}: the API's error`);
      secured(t, r, p);
    }
    const api = await raw(port, 'GET', '/ui/../v1/mcp/servers');
    t.equal(api.status, 404, 'a /ui path never reaches an API route, even one it would normalise into');
    const absolute = await raw(port, 'GET', `http://127.0.0.1:${port}/ui/../v1/mcp/servers`);
    t.equal(absolute.status, 401, 'an absolute-form URL that normalises out of /ui is an API request: it needs a credential');
  });

  t.test('GET and HEAD only; the Host check applies', async (t) => {
    for (const [method, p] of [
      ['POST', '/ui/'],
      ['PUT', '/ui/shared/labels.js'],
      ['DELETE', '/ui/shared/labels.js'],
      ['POST', '/ui/login'],
    ]) {
      const r = await raw(port, method!, p!, { 'content-type': 'application/json' }, '{"a":1}');
      t.equal(r.status, 405, `${method} ${p}: 405`);
      t.equal(JSON.parse(r.body.toString('utf8')).error.code, 'ALBEDO_METHOD_NOT_ALLOWED');
      t.ok(r.headers.allow, 'Allow says what is');
      secured(t, r, `${method} ${p}`);
    }
    for (const host of [`evil.example:${port}`, `127.0.0.1:${port + 1}`]) {
      for (const p of ['/ui/', '/ui/shared/labels.js', '/ui/login?code=x']) {
        const r = await raw(port, 'GET', p, { host });
        t.equal(r.status, 421, `${p} with Host ${host}: 421`);
        t.equal(JSON.parse(r.body.toString('utf8')).error.code, 'ALBEDO_BAD_HOST');
      }
    }
    const foreign = await raw(port, 'GET', '/ui/shared/labels.js', { origin: 'http://evil.example' });
    t.equal(foreign.status, 403, 'a foreign Origin is refused here too');
  });
});

t.test('the path check, on a web/ of its own: every served type, dotfiles, directories and symbolic links', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'albedo-web-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const root = path.join(dir, 'web');
  mkdirSync(path.join(root, 'sub', '.git'), { recursive: true });
  mkdirSync(path.join(root, 'dir.js'));
  for (const ext of Object.keys(TYPES)) writeFileSync(path.join(root, `a${ext}`), `file${ext}`);
  writeFileSync(path.join(root, 'a.txt'), 'text');
  writeFileSync(path.join(root, '.env.js'), 'dot');
  writeFileSync(path.join(root, 'sub', '.git', 'x.js'), 'in a dot directory');
  writeFileSync(path.join(root, 'sub', 'b.js'), 'b');
  writeFileSync(path.join(dir, 'outside.js'), 'outside web/');
  symlinkSync(path.join(dir, 'outside.js'), path.join(root, 'out.js'));
  symlinkSync(dir, path.join(root, 'up'));
  symlinkSync(path.join(root, 'a.js'), path.join(root, 'in.js'));
  symlinkSync(path.join(root, '.env.js'), path.join(root, 'dot.js'));
  symlinkSync(path.join(root, 'a.txt'), path.join(root, 'txt.js'));

  t.equal(await resolveUiFile(root, 'sub/b.js'), path.join(root, 'sub', 'b.js'));
  t.equal(await resolveUiFile(root, 'in.js'), path.join(root, 'a.js'), 'a link inside web/ to a file inside it is that file');
  for (const sub of [
    'out.js',
    'up/outside.js',
    'dot.js',
    'txt.js',
    'a.txt',
    '.env.js',
    'sub/.git/x.js',
    'dir.js',
    '../outside.js',
    'sub/../a.js',
  ]) {
    t.equal(await resolveUiFile(root, sub), null, `${sub}: refused`);
  }

  // Served over real HTTP by the daemon's handler on that root.
  const server = http.createServer(uiFiles({ ui: new UiAuth({ port: () => 1 }), root }));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as AddressInfo).port;
  for (const [ext, type] of Object.entries(TYPES)) {
    const r = await raw(port, 'GET', `/ui/a${ext}`);
    t.equal(r.status, 200, `a${ext}`);
    t.equal(r.headers['content-type'], type, `a${ext}: ${type}`);
    t.equal(r.body.toString(), `file${ext}`);
  }
  for (const p of ['/ui/out.js', '/ui/up/outside.js', '/ui/dot.js', '/ui/a.txt', '/ui/dir.js', '/ui/sub/.git/x.js']) {
    t.equal((await raw(port, 'GET', p)).status, 404, `${p}: 404`);
  }
  t.ok(existsSync(vendorFile()), "the vendor module is found through htm's exports map");
});
