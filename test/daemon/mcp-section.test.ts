// PATCH /v1/mcp (issue 11 item 2, "Settings"): retryMs and the extensions'
// defaults by a merge patch through the settings service's write of the
// sections (settings/apply) — every other key and section of extensions.json kept, ETag /
// If-Match as the other settings routes, bad input refused with the field's
// path and the file byte for byte as it was.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { newTag, tempHome } from '../helpers.ts';
import { srv, startDaemon } from './harness.ts';

t.setTimeout(170_000);

t.test('PATCH /v1/mcp', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  // Compact, hand-written, with another extension's section and key: a no-op must leave these bytes, a write must keep their content.
  const original = {
    skills: { dir: '/x' },
    mcp: { servers: { a: { command: 'x', enabled: false } }, retryMs: 1000 },
    enabled: { mcp: true, other: false },
  };
  writeFileSync(file, JSON.stringify(original));
  const d = await startDaemon(t, home, { tag });
  const bytes = (): Buffer => readFileSync(file);
  const doc = (): any => JSON.parse(bytes().toString());

  t.test('a merge patch: values set, null restores the default, the rest of the file kept; the ETag moves', async (t) => {
    const before = await d.call('GET', '/v1/mcp');
    t.same([before.status, before.body.retryMs, before.body.enabled], [200, 1000, { mcp: true, 'editor-mcp': true }]);
    const untouched = bytes();
    const same = await d.call('PATCH', '/v1/mcp', { body: {} });
    t.same([same.status, same.headers.etag], [200, before.headers.etag], 'an empty patch: the same version…');
    t.same(bytes(), untouched, '…and the file is not even rewritten');

    const r = await d.call('PATCH', '/v1/mcp', { body: { retryMs: 2_500, enabled: { 'editor-mcp': false } } });
    t.equal(r.status, 200, JSON.stringify(r.body));
    t.same([r.body.retryMs, r.body.enabled, r.body.invalid], [2_500, { mcp: true, 'editor-mcp': false }, null]);
    t.match(r.headers.etag, /^"/);
    t.not(r.headers.etag, before.headers.etag, 'a new version');
    const got = await d.call('GET', '/v1/mcp');
    t.same(
      [got.body.retryMs, got.body.enabled, got.headers.etag],
      [2_500, { mcp: true, 'editor-mcp': false }, r.headers.etag],
      'GET agrees',
    );
    t.same(
      doc(),
      {
        skills: { dir: '/x' },
        mcp: { servers: { a: { command: 'x', enabled: false } }, retryMs: 2_500 },
        enabled: { mcp: true, other: false, 'editor-mcp': false },
      },
      "only those keys changed: the servers, the other extension's section and key are as they were",
    );

    const reset = await d.call('PATCH', '/v1/mcp', {
      body: { retryMs: null, enabled: { 'editor-mcp': null, mcp: false } },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    t.same(
      [reset.status, reset.body.retryMs, reset.body.enabled],
      [200, 30_000, { mcp: false, 'editor-mcp': true }],
      'null: back to the defaults',
    );
    t.same(doc().mcp, { servers: { a: { command: 'x', enabled: false } } }, 'retryMs removed from the file, not spelled out');
    t.same(doc().enabled, { mcp: false, other: false });
    t.equal((await d.call('GET', srv('a'))).body.config.command, 'x', 'the server is still there');
  });

  t.test('If-Match: a stale version gets 412 and changes nothing', async (t) => {
    const v = (await d.call('GET', '/v1/mcp')).headers.etag as string;
    const ok = await d.call('PATCH', '/v1/mcp', { body: { retryMs: 4_000 }, headers: { 'if-match': v } });
    t.equal(ok.status, 200, 'the current version: accepted');
    const before = bytes();
    const stale = await d.call('PATCH', '/v1/mcp', { body: { retryMs: 9_000 }, headers: { 'if-match': v } });
    t.same([stale.status, stale.body.error.code, stale.body.error.path], [412, 'ALBEDO_PRECONDITION_FAILED', ['headers', 'if-match']]);
    t.same(bytes(), before, 'the file is as it was');
    t.equal(
      (await d.call('PATCH', '/v1/mcp', { body: { retryMs: 9_000 }, headers: { 'if-match': ok.headers.etag as string } })).status,
      200,
    );
  });

  t.test("bad input: 400 (or 415) with the field's path; the file byte for byte as it was", async (t) => {
    const before = bytes();
    const cases: Array<[string, { body?: unknown; raw?: string; headers?: Record<string, string> }, number, Array<string | number>]> = [
      ['zero', { body: { retryMs: 0 } }, 400, ['body', 'retryMs']],
      ['negative', { body: { retryMs: -5 } }, 400, ['body', 'retryMs']],
      ['a fraction', { body: { retryMs: 1.5 } }, 400, ['body', 'retryMs']],
      ['a string', { body: { retryMs: '1000' } }, 400, ['body', 'retryMs']],
      ['over a day', { body: { retryMs: 86_400_001 } }, 400, ['body', 'retryMs']],
      ['a non-boolean default', { body: { enabled: { mcp: 'yes' } } }, 400, ['body', 'enabled', 'mcp']],
      ["another extension's default", { body: { enabled: { skills: true } } }, 400, ['body', 'enabled', 'skills']],
      ['enabled: null', { body: { enabled: null } }, 400, ['body', 'enabled']],
      ['enabled as a list', { body: { enabled: [true] } }, 400, ['body', 'enabled']],
      ["servers are not this route's", { body: { servers: {} } }, 400, ['body', 'servers']],
      ['a list for a body', { body: [] }, 400, ['body']],
      ['malformed JSON', { raw: '{"retryMs":', headers: { 'content-type': 'application/json' } }, 400, ['body']],
      ['not JSON', { raw: 'retryMs=5', headers: { 'content-type': 'text/plain' } }, 415, ['headers', 'content-type']],
    ];
    for (const [what, o, status, want] of cases) {
      const r = await d.call('PATCH', '/v1/mcp', o);
      t.same([r.status, r.body?.error?.code, r.body?.error?.path], [status, 'ALBEDO_INVALID_ARGUMENT', want], what);
    }
    t.same(bytes(), before, 'nothing was written');
  });

  t.test('a broken extensions.json on disk: 409, and it is left as it is', async (t) => {
    const good = bytes();
    writeFileSync(file, '{"mcp": {"retryMs": ');
    const r = await d.call('PATCH', '/v1/mcp', { body: { retryMs: 7_000 } });
    t.same([r.status, r.body.error.code], [409, 'ALBEDO_INVALID_CONFIG']);
    t.equal(bytes().toString(), '{"mcp": {"retryMs": ', 'not overwritten');
    writeFileSync(file, good);
  });

  t.test('PATCH /v1/mcp and server writes interleaved from parallel clients: none lost', async (t) => {
    const rs = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2
          ? d.call('PATCH', '/v1/mcp', { body: { retryMs: 10_000 + i } })
          : d.call('PATCH', srv('a'), { body: { env: { [`V${i}`]: { env: `VAR_${i}` } } } }),
      ),
    );
    t.same(
      rs.map((r) => r.status),
      Array(20).fill(200),
      'all accepted',
    );
    const env = doc().mcp.servers.a.env;
    t.same(Object.keys(env).sort(), Array.from({ length: 10 }, (_, i) => `V${2 * i}`).sort(), 'every server write is in the file');
    t.ok(Array.from({ length: 10 }, (_, i) => 10_001 + 2 * i).includes(doc().mcp.retryMs), 'and retryMs is one of the values sent');
    t.same(doc().skills, { dir: '/x' }, 'the other section still there');
  });
});
