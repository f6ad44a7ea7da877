// The flows a gateway relays besides plain calls, through connect(): progress
// (the API's own token sent as _meta.progressToken, the server's reports
// relayed, a token it was not given ignored), cancellation (the server's
// handler sees its abort signal), logging (logging/setLevel, or on
// 2026-07-28 the level in every request's envelope), completions and
// resource subscriptions (resources/subscribe, or on 2026-07-28 the listen's
// resourceSubscriptions). Against the official SDK server 2.x
// (fixtures/flows-server.ts) over stdio and HTTP, in both eras.
import t from 'tap';
import path from 'node:path';
import type { Albedo } from '../../api/albedo.ts';
import type { Connection } from '../../api/connection.ts';
import type { Progress } from '../../api/progress.ts';
import { albedoFor, fixture, httpFixture, newTag, rejection, server, tempDir, until } from '../helpers.ts';
import { readLog } from '../fixtures/composer-ports.ts';

t.setTimeout(180_000);

const FLOWS = fixture('flows-server.ts');
const SECRET = 'flows-secret-4d1c9a7e';

const text = (r: { content: Array<{ type: string; text?: string }> }): string | undefined => r.content[0]?.text;

interface Setup {
  a: Albedo;
  c: Connection;
  log: string;
  /** Whether the server was given a secret Albedo knows (stdio: its environment), so what quotes it is redacted. */
  redacts: boolean;
}

async function setup(
  t: { teardown(fn: () => unknown): void },
  kind: 'stdio' | 'http',
  era: 'legacy' | 'modern',
  extra: string[] = [],
): Promise<Setup> {
  const tag = newTag();
  const log = path.join(tempDir(t, 'albedo-flows-'), 'log');
  const a = await albedoFor(t, tag);
  if (kind === 'stdio') {
    const c = await a.connect(
      server(tag, FLOWS, ['--stdio', era, '--log', log, ...extra], { env: { ALBEDO_TEST_TAG: tag, FLOWS_SECRET: SECRET } }),
    );
    return { a, c, log, redacts: true };
  }
  const srv = await httpFixture(t, tag, FLOWS, ['--http', era, '--log', log, ...extra]);
  return { a, c: await a.connect({ url: srv.url }), log, redacts: false };
}

for (const kind of ['stdio', 'http'] as const) {
  for (const era of ['legacy', 'modern'] as const) {
    t.test(`${kind}, ${era}: progress, cancellation, logging, completions, subscriptions`, async (t) => {
      const { a, c, log, redacts } = await setup(t, kind, era);
      t.equal(c.era, era);

      // Progress: every report of this call, in order; the report for a token it was not given is not relayed.
      const seen: Progress[] = [];
      const raw: unknown[] = [];
      const off = a.kernel.on('transport', 'connection/progress', (e) => raw.push(e));
      t.equal(text(await c.callTool('progress', { steps: 3 }, { onProgress: (p) => seen.push(p) })), 'done 3');
      t.same(
        seen.map((p) => [p.progress, p.total]),
        [
          [1, 3],
          [2, 3],
          [3, 3],
        ],
      );
      t.match(seen[0]!.message, /^step 1 of 3/);
      if (redacts)
        t.notOk(
          seen.some((p) => p.message!.includes(SECRET)),
          "the server's message is redacted",
        );
      t.equal(raw.length, 3, 'the report naming another token was dropped by the transport');
      t.ok(
        raw.every((e) => (e as { id: string }).id === c.id),
        'each event names the connection',
      );
      off();
      const long: Progress[] = [];
      await c.callTool('progress', { steps: 1, pad: 5_000 }, { onProgress: (p) => long.push(p) });
      t.equal(long[0]!.message!.length, 1_000, 'a long message is cut to 1,000 characters');
      // The caller's own _meta never reaches the wire: the token is the API's, and the modern envelope is kept beside it.
      const meta = JSON.parse(text(await c.callTool('meta', {}, { onProgress: () => {} }))!) as {
        meta: { progressToken: string };
        envelope: string[];
      };
      t.match(meta.meta.progressToken, /^albedo-/);
      t.equal(meta.envelope.length > 0, era === 'modern', 'the 2026-07-28 envelope is merged with the progress token, not replaced');
      t.equal(JSON.parse(text(await c.callTool('meta', {}))!).meta, null, 'a call without onProgress sends no token');

      // Cancellation: the caller's signal aborts the server's handler (notifications/cancelled, or the modern stream closed).
      const ac = new AbortController();
      const waiting = rejection(c.callTool('wait', { tag: 'direct' }, { signal: ac.signal }));
      await until(() => readLog(log).some((e) => e.tag === 'direct' && e.started), 30_000, 'the tool to start');
      ac.abort();
      t.match(await waiting, { code: 'ALBEDO_DEADLINE' });
      await until(() => readLog(log).some((e) => e.tag === 'direct' && 'aborted' in e), 30_000, 'the server to see the cancel');
      t.same(
        readLog(log).filter((e) => e.tag === 'direct' && 'aborted' in e),
        [{ tag: 'direct', aborted: true }],
        "the server's handler saw its request cancelled",
      );

      // Logging: at the level asked for and above, as `log` events of this connection.
      const logs: Array<{ level: string; logger?: string; data: unknown }> = [];
      c.on('log', (l) => logs.push(l));
      t.same(await c.request({ method: 'logging/setLevel', level: 'error' }), {});
      t.equal(text(await c.callTool('log_all', {})), 'logged');
      await until(() => logs.length >= 4, 10_000, 'the log messages');
      t.same(
        logs.map((l) => l.level),
        ['error', 'critical', 'alert', 'emergency'],
      );
      t.match(logs[0], { logger: 'flows', data: { level: 'error', secret: redacts ? '[redacted]' : 'no-secret-given' } });
      t.match(await rejection(c.request({ method: 'logging/setLevel', level: 'loud' as never })), {
        code: 'ALBEDO_INVALID_ARGUMENT',
        outcome: 'not_run',
      });

      // Completions: a prompt's argument and a template's variable; at most 100 values.
      t.same(
        await c.request({
          method: 'completion/complete',
          ref: { type: 'ref/prompt', name: 'pick' },
          argument: { name: 'color', value: 'g' },
        }),
        { completion: { values: ['green', 'grey', 'gold'], total: 3, hasMore: false } },
      );
      const many = (await c.request({
        method: 'completion/complete',
        ref: { type: 'ref/resource', uri: 'fixture://colors/{color}' },
        argument: { name: 'color', value: 'many' },
      })) as { completion: { values: string[]; hasMore?: boolean } };
      t.equal(many.completion.values.length, 100);
      t.equal(many.completion.hasMore, true);
      t.match(
        await rejection(
          c.request({ method: 'completion/complete', ref: { type: 'ref/nothing' } as never, argument: { name: 'x', value: '' } }),
        ),
        {
          code: 'ALBEDO_INVALID_ARGUMENT',
          outcome: 'not_run',
        },
      );

      // Subscriptions: an update of a subscribed resource comes as a `resource-updated` event.
      const updates: string[] = [];
      c.on('resource-updated', (uri) => updates.push(uri));
      t.same(await c.request({ method: 'resources/subscribe', uri: 'fixture://counter' }), {});
      await c.callTool('touch', { uri: 'fixture://counter' });
      await until(() => updates.includes('fixture://counter'), 10_000, 'the update');
      t.same(await c.request({ method: 'resources/unsubscribe', uri: 'fixture://counter' }), {});
      if (era === 'modern') {
        // The listen's filter no longer names it: an update after the unsubscribe is not routed to us.
        await c.callTool('touch', { uri: 'fixture://counter' });
        t.equal(text(await c.callTool('progress', { steps: 1 })), 'no progress token', 'a later exchange went through');
        t.same(updates, ['fixture://counter']);
      }
      t.match(await rejection(c.request({ method: 'tools/call', name: 'echo' } as never)), {
        code: 'ALBEDO_INVALID_ARGUMENT',
        outcome: 'not_run',
      });
    });
  }
}

t.test('a server dialled again is asked again for the log level and the subscriptions (stdio, both eras)', async (t) => {
  for (const era of ['legacy', 'modern'] as const) {
    const { c } = await setup(t, 'stdio', era);
    const logs: string[] = [];
    const updates: string[] = [];
    c.on('log', (l) => logs.push(l.level));
    c.on('resource-updated', (uri) => updates.push(uri));
    await c.request({ method: 'logging/setLevel', level: 'emergency' });
    await c.request({ method: 'resources/subscribe', uri: 'fixture://counter' });
    const dropped = new Promise((resolve) => c.once('dropped', resolve));
    await c.callTool('exit', {}).catch(() => {});
    await dropped;
    // The next call dials a new server process, which is told the level and the subscription before the call.
    t.equal(text(await c.callTool('log_all', {})), 'logged', `${era}: the server was dialled again`);
    await until(() => logs.length >= 1, 10_000, 'the log event');
    await c.callTool('touch', { uri: 'fixture://counter' });
    await until(() => updates.length >= 1, 10_000, 'the update');
    t.same(logs, ['emergency'], `${era}: the level held across the redial`);
    t.same(updates, ['fixture://counter'], `${era}: the subscription held across the redial`);
  }
});

t.test('a server that declares none of logging, completions, resources.subscribe: not found, not run, the capability named', async (t) => {
  for (const era of ['legacy', 'modern'] as const) {
    const { c } = await setup(t, 'stdio', era, ['--bare']);
    const ops = [
      [{ method: 'logging/setLevel', level: 'info' }, 'logging'],
      [{ method: 'completion/complete', ref: { type: 'ref/prompt', name: 'pick' }, argument: { name: 'color', value: '' } }, 'completions'],
      [{ method: 'resources/subscribe', uri: 'fixture://counter' }, 'resources.subscribe'],
    ] as const;
    for (const [op, capability] of ops) {
      t.match(
        await rejection(c.request(op as never)),
        { code: 'ALBEDO_NOT_FOUND', outcome: 'not_run', data: { capability } },
        `${era} ${op.method}`,
      );
    }
    t.equal(text(await c.callTool('progress', { steps: 1 })), 'no progress token', 'the connection is still there');
  }
});

t.test('a flood of progress is bounded per connection (100 a second), and nothing follows the call', async (t) => {
  const { a, c } = await setup(t, 'stdio', 'modern');
  let events = 0;
  a.kernel.on('transport', 'connection/progress', () => events++);
  let told = 0;
  const start = Date.now();
  t.equal(text(await c.callTool('progress', { steps: 1500 }, { onProgress: () => told++ })), 'done 1500');
  const windows = Math.floor((Date.now() - start) / 1000) + 2;
  t.ok(events <= 100 * windows && events < 1500, `${events} events relayed in at most ${windows} one-second windows`);
  t.equal(told, events, 'the caller saw each one relayed');
  const after = told;
  await c.callTool('progress', { steps: 5 });
  t.equal(told, after, 'a settled call hears nothing more');
});
