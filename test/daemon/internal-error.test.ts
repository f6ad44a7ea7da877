// A defect in the daemon is never silent (issue 11's hardening review): a
// handler that throws something that is not an API error answers 500
// ALBEDO_INTERNAL with a fixed message, and the daemon's log gets one line
// with the error's name and stack frames — never its message, which may
// hold data. In process: the daemon's own app (createApp), with one route
// added that throws, since no request makes the real routes throw (that is
// the point); the routes' dependencies are never reached.
import t from 'tap';
import { createApp } from '../../daemon/app.ts';

function appWithDefect(log: (line: string) => void) {
  const app = createApp({
    reader: { kernel: {} } as never,
    writes: {} as never,
    registry: {} as never,
    logins: {} as never,
    version: '0.0.0-test',
    status: { home: '/nowhere', port: () => 1, startedAt: 0, token: 'not-used' },
    log,
  });
  app.get('/v1/defect', () => {
    // Lines in the message that look like frames must not reach the log either.
    throw new TypeError('secret-in-message-4k\n    at leak (secret-frame-9z)');
  });
  app.get('/v1/defect-async', async () => {
    await Promise.resolve();
    throw new RangeError('Maximum call stack size exceeded near secret-async-2m');
  });
  return app;
}

t.test(
  "a handler's defect: 500 ALBEDO_INTERNAL, a fixed message, and one log line with the name and frames, not the message",
  async (t) => {
    const lines: string[] = [];
    const app = appWithDefect((l) => lines.push(l));
    for (const [p, name] of [
      ['/v1/defect', 'TypeError'],
      ['/v1/defect-async', 'RangeError'],
    ] as const) {
      lines.length = 0;
      const r = await app.request(p);
      t.equal(r.status, 500, p);
      const body = (await r.json()) as { error: { code: string; message: string } };
      t.equal(body.error.code, 'ALBEDO_INTERNAL');
      t.notMatch(body.error.message, /secret/, 'the response holds nothing of the error');
      t.equal(lines.length, 1, `${p}: one line in the log`);
      t.match(lines[0], name, 'it names the error');
      t.match(lines[0], /internal-error\.test\.ts:\d+/, 'and where it was thrown');
      t.notMatch(lines[0], /secret/, 'never its message');
      t.notOk(lines[0]!.includes('\n'), 'one line');
    }
    lines.length = 0;
    t.equal((await app.request('/v1/nothing')).status, 404);
    t.same(lines, [], 'an API error (here a 404) is an answer, not a defect: no line');
  },
);
