// Retry-After as the HTTP link reports it (services/transport/http-util.ts): delta-seconds or an HTTP-date in any
// of its three forms, parsed into ms from now; anything invalid is ignored; only 408, 429 and 5xx report it.
import t from 'tap';
import { retryAfterMs, statusData } from '../../services/transport/http-util.ts';

const NOW = Date.parse('2026-03-01T12:00:00Z');

t.test('delta-seconds and HTTP-dates', async (t) => {
  const at = (v: string | string[] | undefined): number | undefined => retryAfterMs({ 'retry-after': v }, NOW);
  t.equal(at('2'), 2_000);
  t.equal(at(' 120 '), 120_000, 'white space around it');
  t.equal(at('0'), 0);
  t.equal(at('Sun, 01 Mar 2026 12:00:30 GMT'), 30_000, 'IMF-fixdate');
  t.equal(at('Sunday, 01-Mar-26 12:01:00 GMT'), 60_000, 'RFC 850');
  t.equal(at('Sun Mar  1 12:00:05 2026'), 5_000, 'asctime, which is GMT');
  t.equal(at('Sun, 01 Mar 2026 11:00:00 GMT'), 0, 'a date already past: no wait');
  t.equal(at(['3', '3']), 3_000, 'the same value twice');
  for (const bad of [
    undefined,
    '',
    '-1',
    '1.5',
    '2 seconds',
    '0x10',
    'soon',
    '2026-03-01T12:00:30Z',
    'Sun, 01 Mar 2026 12:00:30 UTC',
    ['1', '2'],
  ]) {
    t.equal(at(bad as string | string[] | undefined), undefined, `ignored: ${JSON.stringify(bad)}`);
  }
  t.equal(at('1234567890123456'), undefined, 'an absurd number of seconds');
});

t.test('only a status that may pass reports it', async (t) => {
  const headers = { 'retry-after': '2' };
  for (const status of [408, 429, 500, 502, 503, 504]) t.same(statusData(status, 'b', headers), { status, body: 'b', retryAfterMs: 2_000 });
  for (const status of [400, 401, 403, 404, 409]) t.same(statusData(status, 'b', headers), { status, body: 'b' }, `${status}`);
  t.same(statusData(503, '', {}), { status: 503, body: '' }, 'none given');
  t.same(statusData(503, '', { 'retry-after': 'later' }), { status: 503, body: '' }, 'invalid');
});
