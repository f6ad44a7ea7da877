// What a hostile server sends besides its answers, through connect(): a log
// message too large to relay whole is cut to a bound (its secrets redacted,
// however deep), and a progress report naming another connection's call
// reaches neither that call nor this one (fixtures/notices-hostile-server.ts).
import t from 'tap';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import type { Progress } from '../../api/progress.ts';
import { albedoFor, fixture, newTag, server, tempDir, until } from '../helpers.ts';

t.setTimeout(120_000);

const HOSTILE = fixture('notices-hostile-server.ts');
const SECRET = 'notices-secret-7b2e91c4';

t.test('a huge log message is relayed cut to its bound, its secret redacted', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, HOSTILE, [], { env: { ALBEDO_TEST_TAG: tag, NOTICES_SECRET: SECRET } }));
  const logs: Array<{ level: string; logger?: string; data: unknown }> = [];
  c.on('log', (l) => logs.push(l));
  await c.callTool('go', { mode: 'big-log' });
  await until(() => logs.length === 1, 30_000, 'the log message');
  const json = JSON.stringify(logs[0]!.data);
  t.ok(json.length <= 80 * 1024, `the relayed data is bounded (${json.length} characters)`);
  t.notOk(json.includes(SECRET), 'the secret nested deep in it is not relayed');
  t.match(logs[0], { level: 'error', logger: 'hostile', data: { text: /^x+$/ } });
});

t.test("a progress report naming another connection's call reaches no call", async (t) => {
  const tag = newTag();
  const dir = tempDir(t, 'albedo-notices-');
  const a = await albedoFor(t, tag);
  const env = (name: string) => ({ env: { ALBEDO_TEST_TAG: tag, NOTICES_LOG: path.join(dir, name) } });
  const one = await a.connect(server(tag, HOSTILE, [], env('one')));
  const two = await a.connect(server(tag, HOSTILE, [], env('two')));
  // The first call's token, as its server was sent it: the second server names it while the first call runs.
  const seenOne: Progress[] = [];
  const seenTwo: Progress[] = [];
  await one.callTool('go', { mode: 'none' }, { onProgress: (p) => seenOne.push(p) });
  const token = (JSON.parse(readFileSync(path.join(dir, 'one'), 'utf8').trim()) as { token: string }).token;
  t.match(token, /^albedo-/);
  await two.callTool('go', { mode: 'foreign', token }, { onProgress: (p) => seenTwo.push(p) });
  t.same(
    seenTwo.map((p) => p.message),
    ['yours'],
    "only the call's own report",
  );
  t.same(seenOne, [], 'nothing for the other connection');
});
