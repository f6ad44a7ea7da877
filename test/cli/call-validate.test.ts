// Arguments checked before the call (issue 26, item 5), through the real
// `albedo call` and the real daemon: a missing or mistyped argument exits 2
// naming it (not the API's body.arguments path), and the call never reaches
// the server (the fixture appends every tools/call it gets to a file);
// invalid JSON says where it breaks, a non-object what it is; a schema the
// check cannot compile or must not run lets the call through as before; a
// 2020-12 schema is checked by that draft's rules. server-everything's echo
// is refused here too, where it used to come back as the server's -32602
// text with exit 6.
import t from 'tap';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EVERYTHING, NODE, fixture, newTag, tempHome } from '../helpers.ts';
import { entry, startDaemon } from '../daemon/harness.ts';
import { errorCode, piped } from './cli-harness.ts';

t.setTimeout(300_000);

t.test("albedo call checks --args against the tool's schema before anything is sent", async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  const logDir = mkdtempSync(path.join(tmpdir(), 'albedo-calls-'));
  t.teardown(() => rmSync(logDir, { recursive: true, force: true }));
  const log = path.join(logDir, 'calls.jsonl');
  const servers = { checked: entry(NODE, [fixture('checked-args-server.ts'), log]), everything: entry(NODE, [EVERYTHING, 'stdio']) };
  writeFileSync(path.join(e.home, 'extensions.json'), JSON.stringify({ mcp: { servers } }));
  await startDaemon(t, e.home, { tag: e.tag });
  const received = (): Array<{ name: string; arguments: Record<string, unknown> }> =>
    existsSync(log)
      ? readFileSync(log, 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];
  const call = (name: string, args: string) => piped(e, ['call', name, '--args', args]);

  const refused = async (name: string, args: string, field: RegExp, what: string) => {
    const r = await call(name, args);
    t.equal(r.code, 2, `${what}: exit 2 (${r.stderr.trim()})`);
    t.equal(errorCode(r.stderr), 'ALBEDO_INVALID_ARGUMENT', what);
    t.match(r.stderr, field, `${what}: names the argument`);
    t.notMatch(r.stderr, /body\.|\(at /, `${what}: no API path`);
    t.equal(r.stdout, '', `${what}: nothing on stdout`);
    return r;
  };
  await refused('checked/record', '{}', /message is required/, 'a missing required argument');
  await refused('checked/record', '{"message":"m","count":"2"}', /count must be an integer/, 'a wrong type');
  await refused(
    'checked/record',
    '{"message":"m","options":{"mode":"quick"}}',
    /options\.mode must be one of "fast", "slow"/,
    'a nested enum',
  );
  await refused('checked/pair2020', '{"a":"1"}', /b is required/, 'a 2020-12 keyword draft-07 lacks');
  t.same(received(), [], 'none of them reached the server');

  const echo = await refused('everything/echo', '{}', /message is required/, "server-everything's echo without its message");
  t.notMatch(echo.stderr, /-32602/, "the server's own refusal never came");

  const bad = await call('checked/record', '{"message": "m",\n "count": 2,,}');
  t.equal(bad.code, 2);
  t.match(
    bad.stderr,
    /--args is not valid JSON: .* at line 2, column 13: .*"count": 2, <-- here ,}/,
    'where the JSON breaks, with an excerpt',
  );
  const cut = await call('checked/record', '{"message": 3');
  t.match(cut.stderr, /line 1, column 14/);
  for (const [args, what] of [
    ['[1,2]', 'an array'],
    ['42', 'a number'],
    ['"text"', 'a string'],
    ['null', 'null'],
    ['true', 'true or false'],
  ]) {
    const r = await call('checked/record', args);
    t.equal(r.code, 2, args);
    t.match(r.stderr, new RegExp(`must be a JSON object .*not ${what}$`, 'm'), `${args}: ${what}`);
  }
  t.same(received(), [], 'still nothing sent');

  const sent = async (name: string, args: string, what: string) => {
    const r = await call(name, args);
    t.equal(r.code, 0, `${what}: ${r.stderr}`);
    t.match(r.stdout, `recorded ${name.split('/')[1]}`, what);
  };
  await sent('checked/record', '{"message":"m","count":2}', 'arguments that match');
  await sent('checked/pair2020', '{"a":"1","b":"2"}', 'the 2020-12 schema satisfied');
  await sent('checked/draft04', '{}', 'a draft-04 schema is not checked');
  await sent('checked/remote_ref', '{}', 'a schema with a remote $ref is not checked');
  await sent('checked/risky_pattern', '{}', 'a schema with a risky pattern is not checked');
  t.same(
    received().map((c) => c.name),
    ['record', 'pair2020', 'draft04', 'remote_ref', 'risky_pattern'],
    'exactly those reached the server',
  );
  t.same(received()[0]!.arguments, { message: 'm', count: 2 });
});
