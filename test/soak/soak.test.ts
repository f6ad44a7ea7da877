// The soak (issue 25 item 5), test-sized: 10 sessions × 4 real stdio servers
// (the shared test/fixtures/composer-changing-server.ts whose tool list a
// storm toggles, one shared sdk-server.ts, two per-session servers) and a
// shared HTTP server behind a real OAuth authorization server
// (test/fixtures/oauth-stack.ts, access tokens living TTL seconds, signed in
// once before the rounds), rounds of session churn, a few thousand calls
// (`whoami` on the signed-in server from every session among them),
// list_changed storms and a server SIGKILLed every third round, through
// bench/soak.ts's driver; each round's calls start at least a token lifetime
// after the last round's ended, so every round crosses an expiry. After
// warm-up (3 rounds) everything stays within its bound (sizes, never times):
//
// - server processes in the last round: exactly the shared ones plus the per-session ones of the open sessions
//   (churned sessions leave no orphan); none once every session is closed;
// - open fds: within FD_SLACK of the warm-up sample;
// - LMDB store: under LMDB_MB, and within LMDB_GROWTH_MB of the warm-up sample;
// - heap used, after GC (the driver GCs before each sample), of the main isolate and summed over the transport workers:
//   each within HEAP_GROWTH_MB of the warm-up sample;
// - calls: all but FAILED_SHARE of them answered (a call may meet a server just killed), and so of the
//   signed-in server's alone;
// - sign-in expiry: a refresh_token grant at the authorization server for every round after warm-up at least
//   (each crossed an expiry), and the server still signed in after the rounds (its refreshes held: no sign-in
//   needed again).
//
// A leaky run (churned sessions left open), and one whose refresh tokens the authorization server forgets
// (the refresh is refused), are caught by the same checks.
import t from 'tap';
import { runSoak, type SoakOptions, type SoakResult } from '../../bench/soak.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { tempHome } from '../helpers.ts';

t.setTimeout(300_000);
t.teardown(closeCatalogueStores);

const WARM = 3;
const FD_SLACK = 16;
const LMDB_MB = 16;
const LMDB_GROWTH_MB = 2;
const HEAP_GROWTH_MB = 24;
const FAILED_SHARE = 0.01;
/** Access token lifetime, seconds: a few, so that the run crosses an expiry every round. */
const TTL = 3;

/** Every bound the soak broke, by name (empty when it stayed within them all). */
function violations(r: SoakResult): string[] {
  const warm = r.samples[WARM - 1]!;
  const last = r.samples.at(-1)!;
  const out: string[] = [];
  if (last.servers !== r.expectedServers) out.push(`servers ${last.servers} ≠ ${r.expectedServers}`);
  if (r.afterClose.servers !== 0 || r.afterClose.processes !== 0) out.push(`left after close ${JSON.stringify(r.afterClose)}`);
  if (last.fds > warm.fds + FD_SLACK) out.push(`fds ${warm.fds} → ${last.fds}`);
  if (last.lmdbMb > LMDB_MB || last.lmdbMb > warm.lmdbMb + LMDB_GROWTH_MB) out.push(`lmdb ${warm.lmdbMb} → ${last.lmdbMb} MB`);
  if (last.heapMb > warm.heapMb + HEAP_GROWTH_MB) out.push(`heap ${warm.heapMb} → ${last.heapMb} MB`);
  if (last.workerHeapMb > warm.workerHeapMb + HEAP_GROWTH_MB) out.push(`worker heaps ${warm.workerHeapMb} → ${last.workerHeapMb} MB`);
  if (last.failed > last.calls * FAILED_SHARE) out.push(`failed ${last.failed} of ${last.calls}`);
  if (last.refreshGrants - warm.refreshGrants < last.round - warm.round)
    out.push(`refreshes ${warm.refreshGrants} → ${last.refreshGrants}`);
  if (r.signInAtEnd !== 'signed_in') out.push(`sign-in ended ${r.signInAtEnd}`);
  if (last.signedInCalls === 0 || last.signedInFailed > last.signedInCalls * FAILED_SHARE)
    out.push(`signed-in failed ${last.signedInFailed} of ${last.signedInCalls}`);
  return out;
}

const base: Omit<SoakOptions, 'home'> = {
  sessions: 10,
  shared: 1,
  perSession: 2,
  rounds: 10,
  calls: 400,
  churn: 2,
  storm: 5,
  crashEvery: 3,
  signIn: { accessTokenTtl: TTL },
};

t.test('10 sessions × 4 servers + a signed-in one: churn, calls, storms, crashes and expiries stay within the bounds', async (t) => {
  const r = await runSoak({ ...base, home: tempHome(t), log: t.comment });
  const last = r.samples.at(-1)!;
  t.ok(last.calls >= 4_000, 'a few thousand calls made');
  t.ok(last.signedInCalls >= base.rounds * base.sessions, 'every session called the signed-in server, every round');
  t.ok(last.refreshGrants >= base.rounds, `an expiry crossed every round: ${last.refreshGrants} refreshes`);
  t.equal(r.samples.length, base.rounds);
  t.same(violations(r), [], 'every bound held');
});

t.test('the checks catch a leak (churned sessions left open) and a refused refresh (refresh tokens forgotten)', async (t) => {
  const leaky = { ...base, sessions: 3, rounds: WARM + 1, calls: 30, churn: 1, storm: 1, crashEvery: 0, leakSessions: true };
  const r = await runSoak({ ...leaky, signIn: { accessTokenTtl: TTL, revokeAfterRound: 1 }, home: tempHome(t) });
  const found = violations(r);
  const has = (p: string): boolean => found.some((v) => v.startsWith(p));
  t.ok(has('servers '), `the process count is over the open sessions: ${found.join('; ')}`);
  t.ok(has('refreshes '), 'no refresh after warm-up');
  t.ok(has('signed-in failed '), "the signed-in server's calls failed");
  t.ok(has('sign-in ended '), 'and the sign-in did not hold');
});
