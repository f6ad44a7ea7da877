// The leases of sessions opened over HTTP (issue 25, item 2; daemon/session-lease.ts) on a clock of the test's own: a
// lease runs out `ttlMs` after the last request naming the session ended, never while a request or an event stream holds
// it; a renewal may change the ttl; a lease that ran out is not revived by a late request; the ttls other than the
// default are kept in session-leases.json, and a restart leases the sessions it finds for their whole ttl from then.
// Every expiry here is the test's clock moving, so nothing depends on the machine's speed.
import t from 'tap';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '../helpers.ts';
import { LEASE_FILE, LEASE_TTL_MS, leaseTtl, SessionLeases, type LeaseClock } from '../../daemon/session-lease.ts';

/** A clock whose time moves only when the test says; its timers fire in order as it moves. */
function fakeClock() {
  let now = 1_000_000;
  let seq = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const clock: LeaseClock = {
    now: () => now,
    set: (fn, ms) => {
      timers.set(++seq, { at: now + ms, fn });
      return seq;
    },
    clear: (h) => void timers.delete(h as number),
  };
  const advance = (ms: number): void => {
    const end = now + ms;
    for (;;) {
      const next = [...timers.entries()].filter(([, x]) => x.at <= end).sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
      if (!next) break;
      timers.delete(next[0]);
      now = Math.max(now, next[1].at);
      next[1].fn();
    }
    now = end;
  };
  return { clock, advance, jump: (ms: number) => void (now += ms), pending: () => timers.size };
}

function leases(o: { ttl?: number; file?: string; log?: string[] } = {}) {
  const c = fakeClock();
  const expired: Array<[string, number]> = [];
  const l = new SessionLeases({
    defaultTtlMs: o.ttl ?? 1_000,
    onExpire: (id, ttl) => expired.push([id, ttl]),
    clock: c.clock,
    ...(o.file ? { file: o.file } : {}),
    log: (line) => o.log?.push(line),
  });
  return { l, expired, ...c };
}

t.test('the default lease is 5 minutes; ALBEDO_SESSION_LEASE_MS sets it within 200 ms to 1 h', async (t) => {
  t.equal(leaseTtl({}), LEASE_TTL_MS);
  t.equal(LEASE_TTL_MS, 300_000);
  t.equal(leaseTtl({ ALBEDO_SESSION_LEASE_MS: '1500' }), 1_500);
  for (const bad of ['0', '199', '3600001', '1.5', 'x', '']) {
    t.equal(leaseTtl({ ALBEDO_SESSION_LEASE_MS: bad }), LEASE_TTL_MS, `ignored: ${JSON.stringify(bad)}`);
  }
});

t.test('a lease nobody renews runs out once, ttl after it began', async (t) => {
  const { l, expired, advance, pending } = leases();
  l.add('s1');
  t.same(l.view('s1'), { ttlMs: 1_000, expiresAt: 1_001_000, streams: 0 });
  advance(999);
  t.same(expired, [], 'not before its ttl');
  advance(1);
  t.same(expired, [['s1', 1_000]], 'at its ttl');
  t.equal(l.view('s1'), null, 'gone');
  advance(10_000);
  t.same(expired.length, 1, 'once');
  t.equal(pending(), 0, 'no timer left');
  t.equal(l.view('nope'), null, 'an unleased session shows none');
});

t.test('a request in flight holds it, however long; the lease runs again from its end', async (t) => {
  const { l, expired, advance } = leases();
  l.add('s1');
  advance(500);
  const done = l.hold('s1');
  advance(60_000);
  t.same(expired, [], 'held for 60 ttls');
  t.equal(l.view('s1')!.expiresAt, 1_060_500 + 1_000, 'shown as ttl from now while held');
  done();
  done();
  advance(999);
  t.same(expired, [], 'a full ttl from the end of the request');
  advance(1);
  t.same(expired, [['s1', 1_000]]);
});

t.test('an event stream holds it while open, and is counted', async (t) => {
  const { l, expired, advance } = leases();
  l.add('s1');
  const a = l.hold('s1', 'streams');
  const b = l.hold('s1', 'streams');
  t.equal(l.view('s1')!.streams, 2);
  advance(30_000);
  a();
  t.equal(l.view('s1')!.streams, 1);
  advance(30_000);
  t.same(expired, [], 'one stream still holds it');
  b();
  t.equal(l.view('s1')!.streams, 0);
  advance(1_000);
  t.same(expired, [['s1', 1_000]], 'gone ttl after the last stream closed');
});

t.test('a renewal restarts it, and may change its ttl', async (t) => {
  const { l, expired, advance } = leases();
  l.add('s1');
  for (let i = 0; i < 10; i++) {
    advance(900);
    t.ok(l.renew('s1'));
  }
  t.same(expired, [], 'renewed within each ttl: kept across nine ttls');
  t.ok(l.renew('s1', 5_000));
  advance(4_999);
  t.same(expired, [], 'the longer ttl');
  t.ok(l.renew('s1', 2_000), 'a shorter one');
  advance(2_000);
  t.same(expired, [['s1', 2_000]], 'runs out at the shorter ttl, not the longer one armed before');
  t.notOk(l.renew('s1'), 'an expired lease is not renewed');
  t.notOk(l.renew('never'), 'nor an unknown one');
});

t.test('a request after the lease ran out (its timer not yet fired) does not revive it', async (t) => {
  const { l, expired, jump } = leases();
  l.add('s1');
  jump(1_000);
  const done = l.hold('s1');
  t.same(expired, [['s1', 1_000]], 'expired at the hold');
  done();
  t.equal(l.view('s1'), null);
});

t.test('a dropped lease (the session closed) never expires', async (t) => {
  const { l, expired, advance, pending } = leases();
  l.add('s1');
  const done = l.hold('s1');
  l.drop('s1');
  done();
  advance(10_000);
  t.same(expired, []);
  t.equal(pending(), 0);
});

t.test('session-leases.json keeps the ttls other than the default; a restart leases for the whole ttl from then', async (t) => {
  const dir = tempDir(t, 'albedo-lease-');
  const file = path.join(dir, LEASE_FILE);
  const first = leases({ file });
  first.l.add('short');
  t.notOk(existsSync(file), 'a default lease needs no record');
  first.l.add('long', 20_000);
  first.l.add('other', 15_000);
  t.same(JSON.parse(readFileSync(file, 'utf8')), { leases: { long: 20_000, other: 15_000 } });
  t.equal(statSync(file).mode & 0o777, 0o600);
  first.l.drop('other');
  t.same(JSON.parse(readFileSync(file, 'utf8')), { leases: { long: 20_000 } }, 'a closed session leaves it');

  // The daemon is killed; the next one restores the sessions (`gone` was not restored: its record is pruned).
  first.l.add('gone', 30_000);
  const next = leases({ file });
  next.l.restored(['short', 'long', 'unknown']);
  t.same(next.l.view('long'), { ttlMs: 20_000, expiresAt: 1_020_000, streams: 0 }, 'its ttl, from the restart');
  t.same(next.l.view('short'), { ttlMs: 1_000, expiresAt: 1_001_000, streams: 0 });
  t.same(next.l.view('unknown')!.ttlMs, 1_000, 'no record: the default');
  t.same(JSON.parse(readFileSync(file, 'utf8')), { leases: { long: 20_000 } }, 'pruned to the restored sessions');
  next.advance(1_000);
  t.same(
    next.expired.map(([id]) => id),
    ['short', 'unknown'],
  );
  next.advance(18_999);
  t.equal(next.expired.length, 2, 'the long one not yet');
  next.advance(1);
  t.same(next.expired, [
    ['short', 1_000],
    ['unknown', 1_000],
    ['long', 20_000],
  ]);
  t.notOk(existsSync(file), 'no lease other than the default left: no file');
});

t.test('a damaged session-leases.json: the default lease, said in the log, replaced', async (t) => {
  const dir = tempDir(t, 'albedo-lease-');
  const file = path.join(dir, LEASE_FILE);
  writeFileSync(file, '{"leases": ', { mode: 0o600 });
  const log: string[] = [];
  const { l } = leases({ file, log });
  l.restored(['a']);
  t.equal(l.view('a')!.ttlMs, 1_000);
  t.equal(log.length, 1, 'said');
  t.notOk(existsSync(file), 'rewritten (nothing to keep)');
  writeFileSync(file, JSON.stringify({ leases: { a: 'x', b: 1e12, c: 12_000 } }));
  const again = leases({ file });
  again.l.restored(['a', 'b', 'c']);
  t.same(
    ['a', 'b', 'c'].map((id) => again.l.view(id)!.ttlMs),
    [1_000, 1_000, 12_000],
    'values out of bounds are ignored',
  );
});
