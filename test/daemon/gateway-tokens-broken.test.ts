// gateway-tokens.json made invalid by hand while a real daemon runs: every token is refused meanwhile, and nothing that
// would revoke a token says it did — revoking one or all, or removing the gateway, is refused (409
// ALBEDO_INVALID_CONFIG, nothing changed) rather than answered "revoked 0" or 204 while the tokens stay in the file,
// to open their gateway again once the file is put back. A token cannot be made either (409, not 400: the request
// was good, the home is not). Put back, the tokens work as before.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { newTag, tempHome } from '../helpers.ts';
import { startDaemon } from './harness.ts';

t.setTimeout(120_000);

t.test('a broken token file: no revoke claims success', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  const tokensFile = path.join(home, 'gateway-tokens.json');
  writeFileSync(file, JSON.stringify({ gateways: { g: {} } }));
  const d = await startDaemon(t, home, { tag: newTag() });
  const m = (await d.call('POST', '/v1/gateways/g/tokens')).body;
  const open = async () => (await d.call('POST', '/mcp/gateways/g', { token: m.token, body: {} })).status;
  t.not(await open(), 401, 'the token opens g');
  const good = readFileSync(tokensFile);
  const extensions = readFileSync(file);

  writeFileSync(tokensFile, '{"tokens": 1}');
  t.equal(await open(), 401, 'refused while the file is broken');
  for (const [what, method, p] of [
    ['revoke one', 'DELETE', `/v1/gateways/g/tokens/${m.id}`],
    ['revoke all', 'DELETE', '/v1/gateways/g/tokens'],
    ['remove the gateway', 'DELETE', '/v1/gateways/g'],
    ['make a token', 'POST', '/v1/gateways/g/tokens'],
  ] as const) {
    const r = await d.call(method, p);
    t.same([r.status, r.body?.error?.code], [409, 'ALBEDO_INVALID_CONFIG'], what);
  }
  t.same(readFileSync(tokensFile, 'utf8'), '{"tokens": 1}', 'the token file as it was');
  t.same(readFileSync(file), extensions, 'extensions.json as it was: the gateway kept');

  writeFileSync(tokensFile, good);
  t.not(await open(), 401, 'put back: the token opens g again');
  t.same(
    (await d.call('GET', '/v1/gateways/g')).body.tokens.map((x: { id: string }) => x.id),
    [m.id],
    'g and its one token',
  );
});
