// What a gateway relays besides plain calls, between real upstream servers and real
// SDK clients (the official client 2.x, pinned to 2026-07-28 or speaking the 2025
// era): elicitation and sampling asked mid-call by a 2025-only upstream (the SDK 1.x
// server, fixtures/gateway-flows-server.ts --v1) reach a host of either era (a
// 2026-07-28 host as input_required rounds its client fulfils, a 2025 host as the
// server's own requests); a host without the capability gets the spec's refusal; a
// host's cancellation, progress and logging cross the gateway; two hosts asked at
// once never see each other's questions (a 2026-07-28 upstream's are routed exactly,
// a 2025 upstream's only when one call is in flight); a settings edit reaches a
// stdio host as list_changed.
import t, { type Test } from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { NODE, fixture, newTag, tempHome, until } from '../helpers.ts';
import { BIN, entry, sdkServer, srv, startDaemon, type Daemon } from '../daemon/harness.ts';

t.setTimeout(170_000);

const MODERN = '2026-07-28';
type Era = 'modern' | 'legacy';
type Way = 'http' | 'stdio';

interface Flows {
  d: Daemon;
  home: string;
  tag: string;
  /** The JSON lines an upstream wrote (what it asked and what it was told). */
  log(server: 'v1' | 'v2'): Array<Record<string, any>>;
}

async function flowsDaemon(t: Test, gateways: Record<string, unknown> = {}): Promise<Flows> {
  const tag = newTag();
  const home = tempHome(t);
  const file = (s: string): string => path.join(home, `${s}.log`);
  const servers = {
    v1: entry(NODE, [fixture('gateway-flows-server.ts'), '--v1', '--log', file('v1')]),
    v2: entry(NODE, [fixture('gateway-flows-server.ts'), '--v2', '--log', file('v2')]),
  };
  const all = { v1: { server: 'v1' }, v2: { server: 'v2' }, ...gateways };
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers }, gateways: all }), { mode: 0o600 });
  const d = await startDaemon(t, home, { tag });
  const log = (s: string): Array<Record<string, any>> => {
    try {
      return readFileSync(file(s), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    } catch {
      return [];
    }
  };
  return { d, home, tag, log };
}

interface Host {
  client: Client;
  /** The elicitation messages and sampling prompts this host was asked. */
  asked: string[];
}

/** A host of `era`, declaring elicitation and sampling unless `bare`, that answers each question with `answer`. */
async function host(t: Test, f: Flows, gateway: string, era: Era, way: Way, o: { bare?: boolean; answer?: string } = {}): Promise<Host> {
  const capabilities = o.bare ? {} : { elicitation: {}, sampling: {} };
  const client = new Client(
    { name: `host-${era}`, version: '1.0.0' },
    { capabilities, versionNegotiation: { mode: era === 'modern' ? { pin: MODERN } : 'legacy' } },
  );
  const asked: string[] = [];
  if (!o.bare) {
    client.setRequestHandler('elicitation/create', async (req) => {
      asked.push(String((req.params as { message?: string }).message));
      return { action: 'accept', content: { answer: o.answer ?? `answer from ${era}` } };
    });
    client.setRequestHandler('sampling/createMessage', async (req) => {
      const m = req.params.messages[0]!.content as { text?: string };
      asked.push(String(m.text));
      return { role: 'assistant', content: { type: 'text', text: `hi from ${era}` }, model: 'test-model' };
    });
  }
  if (way === 'http') {
    const url = new URL(`http://127.0.0.1:${f.d.info.port}/mcp/gateways/${gateway}`);
    await client.connect(
      new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${f.d.info.token}` } } }),
    );
  } else {
    const env = { ...process.env, ALBEDO_HOME: f.home, TEST_SERVER_TAG: f.tag } as Record<string, string>;
    await client.connect(new StdioClientTransport({ command: NODE, args: [BIN, 'gateway', gateway], env }));
  }
  t.equal(client.getNegotiatedProtocolVersion() === MODERN, era === 'modern', `a ${era} host`);
  return { client, asked };
}

const textOf = (r: unknown): string => (r as { content?: Array<{ text?: string }> } | undefined)?.content?.[0]?.text ?? '';
/** What a request came to: `{ resolved }` with its result, or the error it failed with. */
const outcome = (p: Promise<unknown>): Promise<any> =>
  p.then(
    (r) => ({ resolved: r }),
    (e) => e,
  );

t.test('elicitation and sampling from a 2025-only upstream reach a host of each era, both ways in', async (t) => {
  const f = await flowsDaemon(t);
  for (const way of ['http', 'stdio'] as const) {
    for (const era of ['modern', 'legacy'] as const) {
      const h = await host(t, f, 'v1', era, way);
      const who = `${way}-${era}`;
      const r = await outcome(h.client.callTool({ name: 'ask', arguments: { who } }));
      t.equal(textOf(r.resolved), `${who}: answer from ${era}`, `${who}: the upstream got the host's answer`);
      const s = await outcome(h.client.callTool({ name: 'sample', arguments: { who } }));
      t.equal(textOf(s.resolved), `${who}: model said hi from ${era}`, `${who}: the upstream got the host's sample`);
      t.same(h.asked, [`question for ${who}`, `sample for ${who}`], `${who}: the host was asked exactly its questions`);
      await h.client.close();
    }
  }
});

t.test('a host without the capability gets the spec’s refusal; the upstream hears it', async (t) => {
  const f = await flowsDaemon(t);
  // A 2025 host: the upstream's own request is refused as Method not found, and its result says so.
  const legacy = await host(t, f, 'v1', 'legacy', 'http', { bare: true });
  const r = await legacy.client.callTool({ name: 'ask', arguments: { who: 'bare-legacy' } });
  t.equal(textOf(r), 'bare-legacy: error -32601', 'the upstream was told Method not found, and its result says so');
  await legacy.client.close();
  // A 2026-07-28 host: its request fails with -32021 (missing client capability); the upstream heard -32601.
  const modern = await host(t, f, 'v1', 'modern', 'http', { bare: true });
  const err = await outcome(modern.client.callTool({ name: 'ask', arguments: { who: 'bare-modern' } }));
  t.equal(err?.code, -32021, 'the 2026-07-28 host: missing required client capability');
  await until(() => f.log('v1').some((l) => l.who === 'bare-modern' && l.error !== undefined), 60_000, 'the upstream’s refusal');
  t.equal(f.log('v1').find((l) => l.who === 'bare-modern' && l.error !== undefined)?.error, -32601, 'the 2025 upstream heard -32601');
  // A 2026-07-28 upstream asking a 2026-07-28 host that cannot answer: -32021 too.
  const m2 = await host(t, f, 'v2', 'modern', 'http', { bare: true });
  const err2 = await outcome(m2.client.callTool({ name: 'ask', arguments: { who: 'bare-modern-v2' } }));
  t.equal(err2?.code, -32021, 'the 2026-07-28 upstream’s question: missing required client capability');
  await m2.client.close();
  await modern.client.close();
});

t.test('a host’s cancellation reaches the upstream call', async (t) => {
  const f = await flowsDaemon(t);
  for (const [way, era] of [
    ['http', 'modern'],
    ['http', 'legacy'],
    ['stdio', 'modern'],
    ['stdio', 'legacy'],
  ] as const) {
    const h = await host(t, f, 'v1', era, way);
    const ac = new AbortController();
    const tag = `cancel-${way}-${era}`;
    const call = outcome(h.client.callTool({ name: 'wait', arguments: { tag } }, { signal: ac.signal }));
    await until(() => f.log('v1').some((l) => l.tag === tag && l.started), 60_000, `${way} ${era}: the upstream call started`);
    ac.abort();
    const err = await call;
    t.notOk(err && 'resolved' in err, `${way} ${era}: the host's call ended unanswered`);
    await until(() => f.log('v1').some((l) => l.tag === tag && 'aborted' in l), 60_000, `${way} ${era}: the upstream call ended`);
    t.equal(f.log('v1').find((l) => l.tag === tag && 'aborted' in l)?.aborted, true, `${way} ${era}: the upstream call was cancelled`);
    await h.client.close();
  }
});

t.test('progress from the upstream reaches a host that gave a token, in both eras', async (t) => {
  const f = await flowsDaemon(t);
  for (const way of ['http', 'stdio'] as const) {
    for (const era of ['modern', 'legacy'] as const) {
      const h = await host(t, f, 'v1', era, way);
      const got: number[] = [];
      // The upstream answers once the test opens the gate: the SDK client drops progress it reads after the answer.
      const gate = path.join(f.home, `gate-${way}-${era}`);
      const call = h.client.callTool({ name: 'progress', arguments: { steps: 3, gate } }, { onprogress: (p) => void got.push(p.progress) });
      await until(() => got.length >= 3, 60_000, `${way} ${era}: the progress notifications`);
      writeFileSync(gate, '');
      t.equal(textOf(await call), 'done 3', `${way} ${era}: the call answered`);
      t.same(got, [1, 2, 3], `${way} ${era}: every progress notification reached the host, in order`);
      await h.client.close();
    }
  }
});

t.test('an upstream tool’s log message reaches a 2025 host', async (t) => {
  const f = await flowsDaemon(t);
  for (const way of ['http', 'stdio'] as const) {
    const h = await host(t, f, 'v1', 'legacy', way);
    const messages: Array<{ level: string; logger?: string; data: unknown }> = [];
    h.client.setNotificationHandler('notifications/message', (n) => void messages.push(n.params as never));
    const r = await h.client.callTool({ name: 'log', arguments: { who: way } });
    t.equal(textOf(r), `logged for ${way}`, `${way}: the call answered`);
    await until(() => messages.length > 0, 60_000, `${way}: the log message`);
    t.same(
      messages.map((m) => [m.level, m.logger, m.data]),
      [['info', 'gwflows', `log for ${way}`]],
      `${way}: the upstream's log message, as it sent it`,
    );
    await h.client.close();
  }
});

t.test('two hosts asked at once by a 2026-07-28 upstream: each sees its own question only', async (t) => {
  const f = await flowsDaemon(t);
  const cases = [
    ['http', 'modern', 'modern'],
    ['http', 'modern', 'legacy'],
    ['stdio', 'legacy', 'legacy'],
  ] as const;
  for (const [way, eraA, eraB] of cases) {
    const group = `${way}-${eraA}-${eraB}`;
    const a = await host(t, f, 'v2', eraA, way, { answer: 'A says' });
    const b = await host(t, f, 'v2', eraB, way, { answer: 'B says' });
    const who = { a: `A-${group}`, b: `B-${group}` };
    // Both calls are in flight before either is asked (the upstream waits for the two to arrive). A 2025 host is
    // asked with a request of the gateway's own, a 2026-07-28 host with an input_required round.
    const [ra, rb] = await Promise.all([
      outcome(a.client.callTool({ name: 'ask', arguments: { who: who.a, group, together: 2 } })),
      outcome(b.client.callTool({ name: 'ask', arguments: { who: who.b, group, together: 2 } })),
    ]);
    t.same(a.asked, [`question for ${who.a}`], `${group}: A saw only its question`);
    t.same(b.asked, [`question for ${who.b}`], `${group}: B saw only its question`);
    t.equal(textOf(ra.resolved), `${who.a}: A says`, `${group}: A’s answer went to A’s call, with A’s state`);
    t.equal(textOf(rb.resolved), `${who.b}: B says`, `${group}: B’s answer went to B’s call, with B’s state`);
    await a.client.close();
    await b.client.close();
  }
});

t.test('two hosts and a 2025 upstream: routed while one call is in flight, refused (never guessed) with two', async (t) => {
  const f = await flowsDaemon(t);
  const a = await host(t, f, 'v1', 'legacy', 'http', { answer: 'A says' });
  const b = await host(t, f, 'v1', 'modern', 'http', { answer: 'B says' });
  // One at a time: each host is asked its own question.
  t.equal(textOf(await a.client.callTool({ name: 'ask', arguments: { who: 'A1' } })), 'A1: A says', 'A alone: its answer');
  t.equal(textOf(await b.client.callTool({ name: 'ask', arguments: { who: 'B1' } })), 'B1: B says', 'B alone: its answer');
  t.same(a.asked, ['question for A1'], 'A saw only its question');
  t.same(b.asked, ['question for B1'], 'B saw only its question');
  // Both in flight when the upstream asks (its request names neither call): no host can be told apart, so none is asked.
  const [ra, rb] = await Promise.all([
    outcome(a.client.callTool({ name: 'ask', arguments: { who: 'A2', group: 'two', together: 2 } })),
    outcome(b.client.callTool({ name: 'ask', arguments: { who: 'B2', group: 'two', together: 2 } })),
  ]);
  t.notOk(a.asked.includes('question for B2'), 'A never saw B’s question');
  t.notOk(b.asked.includes('question for A2'), 'B never saw A’s question');
  t.same(a.asked, ['question for A1'], 'A was not asked a question it could not be told was its own');
  t.same(b.asked, ['question for B1'], 'B neither');
  t.equal(textOf(ra.resolved), 'A2: error -32601', 'A’s upstream call was refused, and its result says so');
  t.equal(textOf(rb.resolved), 'B2: error -32601', 'B’s upstream call was refused too, and its result says so');
  const told = f.log('v1').filter((l) => l.who === 'A2' || l.who === 'B2');
  t.notOk(
    told.some((l) => l.answer !== undefined),
    'the upstream got no answer meant for another call',
  );
  await a.client.close();
  await b.client.close();
});

t.test('a settings edit reaches a connected stdio host as tools/list_changed', async (t) => {
  const f = await flowsDaemon(t, { all: { servers: { exclude: ['v2'] } } });
  for (const era of ['legacy', 'modern'] as const) {
    const h = await host(t, f, 'all', era, 'stdio');
    let changed = 0;
    h.client.setNotificationHandler('notifications/tools/list_changed', () => void changed++);
    const before = (await h.client.listTools()).tools.map((x) => x.name);
    const sub = era === 'modern' ? await h.client.listen({ toolsListChanged: true }) : undefined;
    const put = await f.d.call('PUT', srv(`extra_${era}`), { body: sdkServer() });
    t.equal(put.status, 201, 'a server added');
    await until(() => changed > 0, 60_000, `${era}: list_changed`);
    const now = (await h.client.listTools()).tools.map((x) => x.name);
    t.ok(now.length > before.length, `${era}: the new server's tools are listed`);
    await sub?.close();
    await h.client.close();
  }
});
