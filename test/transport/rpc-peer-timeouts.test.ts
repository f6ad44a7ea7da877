// RpcPeer's request timeouts and aborts, against a link that records what it is given: one timer
// serves every pending request, so a later, shorter deadline, a timer left armed for a request
// already answered, a signal shared by two requests and the event loop's liveness are pinned here.
import t from 'tap';
import { RpcPeer, type PeerLink } from '../../services/transport/rpc-peer.ts';
import { AlbedoError } from '../../protocol/errors.ts';

interface Sent {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
}

function peerWithLink(): { peer: RpcPeer; sent: Sent[] } {
  const sent: Sent[] = [];
  const link: PeerLink = {
    send: (m) => {
      sent.push(m as Sent);
    },
  };
  const peer = new RpcPeer(link, { onRequest: () => ({}), onNotification: () => {}, onJunk: () => {} });
  return { peer, sent };
}

const answer = (peer: RpcPeer, id: number, result: Record<string, unknown> = {}): void =>
  peer.receive(JSON.stringify({ jsonrpc: '2.0', id, result }));

const cancelled = (sent: Sent[]): unknown[] => sent.filter((m) => m.method === 'notifications/cancelled').map((m) => m.params?.requestId);

/** Timers holding the event loop open (tap's own included: compared before and after). */
const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

t.test('a shorter deadline after a longer one still fires first, and the longer request lives on', async (t) => {
  const { peer, sent } = peerWithLink();
  const long = peer.request('long', undefined, { timeoutMs: 60_000 });
  const short = peer.request('short', undefined, { timeoutMs: 20 });
  await t.rejects(short, { code: 'ALBEDO_TIMEOUT', outcome: 'unknown', data: { method: 'short', timeoutMs: 20 } });
  t.same(cancelled(sent), [2], 'the server is told the short one was cancelled');
  t.equal(peer.inFlight, 1);
  answer(peer, 1, { ok: true });
  t.same(await long, { ok: true });
});

t.test('a timer armed for a request already answered does not lose a later deadline', async (t) => {
  const { peer } = peerWithLink();
  const first = peer.request('first', undefined, { timeoutMs: 30 });
  answer(peer, 1);
  await first;
  const second = peer.request('second', undefined, { timeoutMs: 80 });
  await t.rejects(second, { code: 'ALBEDO_TIMEOUT', data: { method: 'second' } });
  const third = peer.request('third', undefined, { timeoutMs: 10 });
  await t.rejects(third, { code: 'ALBEDO_TIMEOUT', data: { method: 'third' } });
});

t.test('requests that are all settled leave no timer holding the event loop', async (t) => {
  const before = timers();
  const { peer } = peerWithLink();
  const a = peer.request('a', undefined, { timeoutMs: 60_000 });
  const b = peer.request('b', undefined, { timeoutMs: 60_000 });
  t.ok(timers() > before, 'a pending request holds the loop, as its own timer did');
  answer(peer, 1);
  answer(peer, 2);
  await Promise.all([a, b]);
  t.equal(timers(), before, 'none once they are answered');
  const listen = peer.request('subscriptions/listen', undefined, { timeoutMs: Infinity });
  t.equal(timers(), before, 'a request without a deadline arms nothing');
  const c = peer.request('c', undefined, { timeoutMs: 60_000 });
  peer.close(new AlbedoError('ALBEDO_CONNECTION_CLOSED', 'closed', { outcome: 'unknown' }));
  await t.rejects(listen, { code: 'ALBEDO_CONNECTION_CLOSED' });
  await t.rejects(c, { code: 'ALBEDO_CONNECTION_CLOSED' });
  t.equal(timers(), before, 'none after close');
});

t.test('one signal shared by two requests aborts both; a signal aborted before the request fails it at once', async (t) => {
  const { peer, sent } = peerWithLink();
  const ac = new AbortController();
  const a = peer.request('a', undefined, { timeoutMs: 60_000, signal: ac.signal });
  const b = peer.request('b', undefined, { timeoutMs: 60_000, signal: ac.signal });
  ac.abort(new Error('caller left'));
  await t.rejects(a, { code: 'ALBEDO_TIMEOUT', outcome: 'unknown' });
  await t.rejects(b, { code: 'ALBEDO_TIMEOUT', outcome: 'unknown' });
  t.same(cancelled(sent), [1, 2]);
  const c = peer.request('c', undefined, { timeoutMs: 60_000, signal: ac.signal, cancelOnTimeout: false });
  await t.rejects(c, { code: 'ALBEDO_TIMEOUT' });
  t.same(cancelled(sent), [1, 2], 'cancelOnTimeout: false sends no cancellation');
  t.equal(peer.inFlight, 0);
  const d = peer.request('d', undefined, { timeoutMs: 60_000, signal: new AbortController().signal });
  answer(peer, 4, { n: 4 });
  t.same(await d, { n: 4 }, 'an answered request is not aborted later');
});
