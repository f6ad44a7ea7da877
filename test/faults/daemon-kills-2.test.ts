// The fault matrix, the daemon SIGKILLed mid-catalogue-write and mid-sign-in
// (issue 25 item 4), with ten sessions over ten real servers and calls in
// flight: the calls are cut off (never answered, never sent again), no
// server outlives the daemon, LMDB and both settings files parse, and the
// next daemon restores the sessions.
import t from 'tap';
import { statSync } from 'node:fs';
import path from 'node:path';
import { fixture, newTag, until } from '../helpers.ts';
import { startOAuthStack } from '../fixtures/oauth-stack.ts';
import { pidsOf } from './matrix-setup.ts';
import { daemonEntry, daemonMatrix, httpCalls, killAndCheck, shapeOf, storeRows } from './daemon-setup.ts';
import { allAnswer, cutOff, notResent, restart } from './daemon-rows.ts';

t.setTimeout(170_000);

const login = (name: string): string => `/v1/auth/logins/mcp:${encodeURIComponent(name)}`;

t.test('killed mid-catalogue-write (an open saving a big catalogue): every row parses, the sessions come back', async (t) => {
  // A server no session composed yet, with 3,000 tools: the open dials it, then normalises and saves its catalogue.
  const m = await daemonMatrix(t, newTag(), { big: daemonEntry(fixture('sdk-server.ts'), ['--tools', '3000']) });
  const before = await shapeOf(m.d, m.ids);
  const rowsBefore = await storeRows(m.home);
  const calls = await httpCalls(t, m, 20_000, 'cat');
  const mdb = path.join(m.home, 'store', 'data.mdb');
  const size = (): number => statSync(mdb).size;
  const open = m.d.call('POST', '/v1/sessions', { body: { servers: { include: ['big'] }, extensions: { mcp: true } } }).then(
    (r) => String(r.status),
    (err: { code?: string }) => err.code ?? 'error',
  );
  await until(() => pidsOf(m.tag, '--tools').length === 1, 60_000, 'the open to start the big server');
  const seen = size();
  // The store's file grows by the big catalogue's pages (its verdict is a few bytes): the kill lands in or just after that write.
  await until(() => size() > seen + 32 * 1024, 60_000, 'the catalogue write');
  const files = await killAndCheck(t, m);
  t.comment(`the open: ${await open}; catalogues ${rowsBefore.catalogues} -> ${files.rows.catalogues}`);
  t.comment(`in flight: ${(await cutOff(t, calls)).length} calls`);
  notResent(t, m, calls, 'at the kill');
  const next = await restart(t, m, before, () => true);
  await allAnswer(t, next, calls);
});

t.test('killed mid-sign-in (waiting for the browser, against oidc-provider): no token, creds.json parses', async (t) => {
  const stack = await startOAuthStack();
  t.teardown(() => stack.close());
  const m = await daemonMatrix(t, newTag());
  const before = await shapeOf(m.d, m.ids);
  const put = await m.d.call('PUT', '/v1/mcp/servers/secure', { body: { url: stack.mcpUrl, oauth: { callbackPort: 0 } } });
  t.ok([200, 201].includes(put.status), `the OAuth server is configured (${put.status})`);
  const calls = await httpCalls(t, m, 20_000, 'oauth');
  const started = await m.d.call('PUT', login('secure'));
  t.equal(started.status, 201);
  t.match(started.body, { state: 'pending', authorizationUrl: String });
  const files = await killAndCheck(t, m);
  t.notOk(files.creds?.mcp?.secure?.oauth?.tokens, 'no token was stored');
  t.comment(`in flight: ${(await cutOff(t, calls)).length} calls`);
  notResent(t, m, calls, 'at the kill');
  const next = await restart(t, m, before, () => true);
  t.equal((await next.d.call('GET', login('secure'))).status, 404, 'the next daemon knows no pending sign-in');
  const again = await next.d.call('PUT', login('secure'));
  t.equal(again.status, 201, 'a new sign-in starts');
  await allAnswer(t, next, calls);
});
