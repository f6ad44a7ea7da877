// The daemon's ACP attachments without a daemon: tokens kept as digests and
// compared whole, one live lease per session, an expired lease renewing until
// another attach takes the session (then ALBEDO_ATTACHMENT_LOST), the lease
// knob's bounds; the editor's entries translated (stdio) or refused (HTTP, SSE)
// with the entry's path; the session gateway's paths. A clock of our own says
// when a lease ends, so nothing here depends on the machine's speed.
import t from 'tap';
import { Attachments, leaseTimes, LEASE_MS } from '../../daemon/acp/attachments.ts';
import { AcpRefusal, toOverlay } from '../../daemon/acp/sessions.ts';
import { mcpTarget } from '../../daemon/mcp-mount.ts';
import { AlbedoError } from '../../protocol/errors.ts';

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    return AlbedoError.is(err) ? err.code : (err as { code?: string }).code;
  }
  return undefined;
};

t.test('leases: 20 s and a renewal every 5 s; ALBEDO_ACP_LEASE_MS shortens within bounds', async (t) => {
  t.same(leaseTimes({}), { leaseMs: LEASE_MS, renewMs: 5_000 });
  t.same(leaseTimes({ ALBEDO_ACP_LEASE_MS: '1000' }), { leaseMs: 1_000, renewMs: 250 });
  for (const bad of ['0', '-5', '199', '20001', 'abc', '1.5', ''])
    t.same(leaseTimes({ ALBEDO_ACP_LEASE_MS: bad }).leaseMs, LEASE_MS, `ignored: ${JSON.stringify(bad)}`);
});

t.test('one attachment per session; expiry frees it; the old token is then lost', async (t) => {
  let now = 1_000;
  const a = new Attachments({ leaseMs: 1_000, renewMs: 250, now: () => now });
  const first = a.attach('s1');
  t.match(first, /^albatt_[A-Za-z0-9_-]{43}$/, 'albatt_ + 32 bytes base64url');
  t.ok(a.attached('s1'));
  t.equal(
    codeOf(() => a.attach('s1')),
    'ALBEDO_ATTACHMENT_HELD',
    'a live lease refuses a second attach',
  );
  t.equal(
    codeOf(() => a.renew('s1', first)),
    undefined,
    'its own token renews',
  );
  t.equal(
    codeOf(() => a.renew('s1', first.slice(0, -1) + (first.endsWith('A') ? 'B' : 'A'))),
    'ALBEDO_ATTACHMENT_LOST',
    'a near miss',
  );
  t.equal(
    codeOf(() => a.renew('s1', undefined)),
    'ALBEDO_ATTACHMENT_LOST',
    'no token',
  );
  t.equal(
    codeOf(() => a.renew('s2', first)),
    'ALBEDO_ATTACHMENT_LOST',
    'another session',
  );
  now += 1_000;
  t.notOk(a.attached('s1'), 'expired');
  t.equal(
    codeOf(() => a.renew('s1', first)),
    undefined,
    'expired but not taken: it still renews',
  );
  t.equal(
    codeOf(() => a.attach('s1')),
    'ALBEDO_ATTACHMENT_HELD',
    'and holds again',
  );
  now += 1_001;
  const second = a.attach('s1');
  t.not(second, first);
  t.equal(
    codeOf(() => a.renew('s1', first)),
    'ALBEDO_ATTACHMENT_LOST',
    'taken: the first token is lost',
  );
  t.equal(
    codeOf(() => a.release('s1', first)),
    'ALBEDO_ATTACHMENT_LOST',
    'and cannot release',
  );
  a.release('s1', second);
  t.notOk(a.attached('s1'), 'released');
  t.equal(
    codeOf(() => a.renew('s1', second)),
    'ALBEDO_ATTACHMENT_LOST',
    'a released token is lost',
  );
  const third = a.attach('s1');
  a.free('s1', 'albatt_other');
  t.ok(a.attached('s1'), 'free with another token leaves it');
  a.free('s1', third);
  t.notOk(a.attached('s1'), 'free with its token frees it');
});

t.test('gateway tokens: per attachment, gone when it is released, replaced or dropped', async (t) => {
  let now = 1_000;
  const a = new Attachments({ leaseMs: 1_000, renewMs: 250, now: () => now });
  const first = a.attach('s1');
  const g1 = a.gatewayToken('s1', first);
  const g2 = a.gatewayToken('s1', first);
  t.ok(a.gatewayMatches('s1', g1) && a.gatewayMatches('s1', g2), 'each agent’s token holds');
  t.notOk(a.gatewayMatches('s2', g1), 'not another session’s');
  t.notOk(a.gatewayMatches('s1', 'albsgw_x'), 'not a guess');
  t.equal(
    codeOf(() => a.gatewayToken('s1', 'albatt_other')),
    'ALBEDO_ATTACHMENT_LOST',
    'only the holder is given one',
  );
  now += 1_001;
  a.renew('s1', first);
  t.ok(a.gatewayMatches('s1', g1), 'kept across renewals (an expired lease renewed too)');
  now += 1_001;
  const second = a.attach('s1');
  t.notOk(a.gatewayMatches('s1', g1) || a.gatewayMatches('s1', g2), 'a takeover revokes the former holder’s');
  const g3 = a.gatewayToken('s1', second);
  t.ok(a.gatewayMatches('s1', g3), 'the new holder’s holds');
  a.release('s1', second);
  t.notOk(a.gatewayMatches('s1', g3), 'a release revokes it');
  const third = a.attach('s1');
  const g4 = a.gatewayToken('s1', third);
  a.drop('s1');
  t.notOk(a.gatewayMatches('s1', g4), 'gone with the session');
});

t.test("the editor's entries: stdio translated, HTTP and SSE refused at their index", async (t) => {
  const out = toOverlay(
    [
      { name: 'a', command: '/bin/a', args: ['x'], env: [{ name: 'K', value: 'v', _meta: null }] },
      { name: 'b', command: '/bin/b', args: null, env: null },
      { name: 'c', command: '/bin/c', type: 'stdio' },
    ],
    ['body', 'mcpServers'],
  );
  t.same(out, [
    { name: 'a', command: '/bin/a', args: ['x'], env: [{ name: 'K', value: 'v' }] },
    { name: 'b', command: '/bin/b', args: [], env: [] },
    { name: 'c', command: '/bin/c', args: [], env: [] },
  ]);
  for (const type of ['http', 'sse'] as const) {
    let e: unknown;
    try {
      toOverlay(
        [
          { name: 'a', command: '/bin/a', args: [], env: [] },
          { type, name: 'h', url: 'http://127.0.0.1:1/mcp', headers: [{ name: 'Authorization', value: 'Bearer sekrit' }] },
        ],
        ['body', 'mcpServers'],
      );
    } catch (err) {
      e = err;
    }
    t.ok(e instanceof AcpRefusal, type);
    const r = e as AcpRefusal;
    t.match(r, { code: 'ALBEDO_OVERLAY_FAILED', outcome: 'not_run', path: ['body', 'mcpServers', 1] });
    t.same(r.fields, { server: 'h', reason: 'unsupported' });
    const body = JSON.stringify({ message: r.message, fields: r.fields, data: r.data });
    t.notMatch(body, /sekrit/, 'no header value in what is answered');
  }
});

t.test('the session gateway’s paths', async (t) => {
  const id = '0b7c8d2e-1f3a-4b5c-9d6e-7f8091a2b3c4';
  t.same(mcpTarget(`/mcp/sessions/${id}`), { kind: 'session', id });
  t.same(mcpTarget(`/mcp/sessions/${id}/stdio`), { kind: 'session-stdio', id });
  for (const p of ['/mcp/sessions/', `/mcp/sessions/${id}/x`, `/mcp/sessions/${id}/stdio/x`, '/mcp/sessions/a%2Fb', '/mcp/sessions/..'])
    t.equal(mcpTarget(p), null, p);
});
