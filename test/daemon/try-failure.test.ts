// A failed strict save's words (daemon/try-failure.ts, issue 26 item 3): the
// duration as a person reads it, the server's last stderr lines bounded with
// a crash's message kept ahead of its stack frames, and no protocol request
// named for the faults a person meets (silence, an exit, a refused port).
import t from 'tap';
import { AlbedoError } from '../../protocol/errors.ts';
import type { ResolvedServer } from '../../protocol/config.ts';
import { duration, failureMessage, lastLines, TAIL_LINES } from '../../daemon/try-failure.ts';

const stdio = {
  type: 'stdio',
  command: 'x',
  args: [],
  cwd: '/',
  env: {},
  startupTimeoutMs: 30_000,
  callTimeoutMs: 1,
  fingerprint: 'f',
} as ResolvedServer;
const http = {
  type: 'http',
  url: 'http://127.0.0.1:9/mcp?k=v',
  headers: {},
  startupTimeoutMs: 30_000,
  callTimeoutMs: 1,
  fingerprint: 'f',
  auth: null,
} as ResolvedServer;

t.test('durations', async (t) => {
  t.same([duration(30_000), duration(1_500), duration(800), duration(600_000)], ['30 s', '1.5 s', '800 ms', '600 s']);
});

t.test('the last stderr lines: bounded, blank lines dropped, stack frames dropped first', async (t) => {
  const crash = [
    '/srv/app.js:3',
    'TypeError: boom',
    ...Array.from({ length: 12 }, (_, i) => `    at f${i} (/srv/app.js:${i}:1)`),
    'Node.js v22',
  ];
  const kept = lastLines(crash.join('\n'));
  t.ok(kept.includes('TypeError: boom'), "the crash's message is kept");
  t.notOk(
    kept.some((l) => /^\s+at /.test(l)),
    'its frames went first',
  );
  const many = lastLines(Array.from({ length: 50 }, (_, i) => `line ${i}\n\n`).join(''));
  t.equal(many.length, TAIL_LINES);
  t.equal(many.at(-1), 'line 49', 'the last ones');
  t.equal(lastLines('x'.repeat(1_000))[0]!.length, 240, 'a long line is cut');
});

t.test('messages name what happened, not the protocol', async (t) => {
  const timeout = new AlbedoError('ALBEDO_TIMEOUT', 'the server answered neither server/discover nor initialize within 1500 ms', {
    data: { timeoutMs: 1_500, stderrTail: 'loading\n' },
  });
  const m = failureMessage('docs', timeout, stdio);
  t.equal(m, 'docs did not answer within 1.5 s; it was not saved\nits working directory: /\nits stderr ends:\nloading');
  const silent = failureMessage(
    'docs',
    new AlbedoError('ALBEDO_SERVER_EXITED', 'x', { data: { exit: 2, signal: null, stderrTail: '' } }),
    stdio,
  );
  t.equal(silent, 'docs exited with status 2 before it answered; it was not saved\nits working directory: /\nit wrote nothing on stderr');
  const refused = failureMessage(
    'web',
    new AlbedoError('ALBEDO_CONNECTION_CLOSED', 'server/discover: cannot reach', { data: { errno: 'ECONNREFUSED' } }),
    http,
  );
  t.equal(refused, 'http://127.0.0.1:9 refused the connection (nothing listens there); it was not saved', 'the origin only: no query');
  const status = failureMessage(
    'web',
    new AlbedoError('ALBEDO_HTTP_ERROR', 'initialize: …', { data: { status: 503, body: 'busy' } }),
    http,
  );
  t.equal(status, 'http://127.0.0.1:9 answered with HTTP status 503: busy; it was not saved');
  for (const msg of [m, silent, refused, status]) t.notMatch(msg, /server\/discover|initialize/);
});
