// Which gateway tokens a daemon prunes (daemon/gateway-tokens.ts pruneTokens), on a real daemon over a temp home:
// the tokens of a gateway the settings no longer define go, but a broken extensions.json says nothing about which
// gateways are defined — a daemon started over a typo must not take that for "every gateway removed" and revoke
// every token. Once the file is fixed, the gateways it really removed lose their tokens, and the others keep theirs.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { newTag, tempHome, until } from '../helpers.ts';
import { startDaemon } from './harness.ts';

t.setTimeout(120_000);

t.test('a daemon started over a broken extensions.json keeps every gateway token', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  const tokensFile = path.join(home, 'gateway-tokens.json');
  const gateways = { a: { servers: { include: ['x'] } }, b: { servers: { include: ['y'] } } };
  writeFileSync(file, JSON.stringify({ gateways }, null, 2));
  const held = (): string[] => JSON.parse(readFileSync(tokensFile, 'utf8')).tokens.map((x: { gateway: string }) => x.gateway);

  const first = await startDaemon(t, home, { tag: newTag() });
  const a = (await first.call('POST', '/v1/gateways/a/tokens')).body;
  const b = (await first.call('POST', '/v1/gateways/b/tokens')).body;
  t.match([a, b], [{ token: /^albgw_/ }, { token: /^albgw_/ }]);
  t.same(held(), ['a', 'b']);
  await first.stop();

  // A typo while the daemon was down: a trailing comma.
  writeFileSync(file, JSON.stringify({ gateways }, null, 2).replace(/\]\n/, '],\n'));
  const d = await startDaemon(t, home, { tag: newTag() });
  t.not((await d.call('GET', '/v1/gateways')).body.invalid, null, 'the daemon serves with the file broken');
  t.same(held(), ['a', 'b'], 'no token revoked over a broken file');

  // Fixed, without b: b's token goes (the prune runs on settings/changed), a's stays and still opens a.
  writeFileSync(file, JSON.stringify({ gateways: { a: gateways.a } }, null, 2));
  await until(async () => (await d.call('GET', '/v1/gateways/a')).status === 200, 15_000, 'the fixed file');
  await until(() => held().join() === 'a', 15_000, "b's token pruned");
  const open = (name: string, token: string) => d.call('POST', `/mcp/gateways/${name}`, { token, body: {} });
  t.not((await open('a', a.token)).status, 401, "a's token opens a");
  t.same(
    (await d.call('GET', '/v1/gateways/a')).body.tokens.map((x: { id: string }) => x.id),
    [a.id],
  );
});

t.test('a file fixed after a broken start that defines no gateway: every token goes', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  const tokensFile = path.join(home, 'gateway-tokens.json');
  writeFileSync(file, JSON.stringify({ gateways: { a: {} } }));
  const first = await startDaemon(t, home, { tag: newTag() });
  t.equal((await first.call('POST', '/v1/gateways/a/tokens')).status, 201);
  await first.stop();
  writeFileSync(file, '{"gateways": {"a": {},}}');
  const d = await startDaemon(t, home, { tag: newTag() });
  t.equal(JSON.parse(readFileSync(tokensFile, 'utf8')).tokens.length, 1, 'kept over the broken file');
  // Valid again, and a removed: the change names no gateway (none was in force), yet a's token goes.
  writeFileSync(file, '{}');
  await until(async () => (await d.call('GET', '/v1/gateways')).body.invalid === null, 15_000, 'the fixed file');
  await until(() => JSON.parse(readFileSync(tokensFile, 'utf8')).tokens.length === 0, 15_000, "a's token pruned");
  t.pass("a's token pruned");
});
