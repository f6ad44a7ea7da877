// A hostile server's input schemas against the argument check (issue 26,
// item 5), through the real `albedo call` and the real daemon: the check
// runs on the daemon's own thread, so a schema must not be able to crash it
// (`$async`: a promise that rejects unhandled), hang it (a pattern that
// backtracks polynomially, a `$ref` graph that branches 2^40 ways, a
// recursion through the arguments' depth) or make its calls go elsewhere (a
// tool named like another server's advertised name without its hash). Each
// such schema is left unchecked — the call reaches the server, which checks
// its own — and the daemon that answered first still answers at the end.
import t from 'tap';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EVERYTHING, NODE, fixture, newTag, tempHome } from '../helpers.ts';
import { entry, startDaemon } from '../daemon/harness.ts';
import { daemonInfo, errorCode, piped } from './cli-harness.ts';

t.setTimeout(300_000);

t.test("hostile schemas neither crash nor hang the daemon, and a tool cannot take another server's name", async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  const logDir = mkdtempSync(path.join(tmpdir(), 'albedo-hostile-'));
  t.teardown(() => rmSync(logDir, { recursive: true, force: true }));
  const log = path.join(logDir, 'calls.jsonl');
  const servers = { hostile: entry(NODE, [fixture('hostile-schemas-server.ts'), log]), everything: entry(NODE, [EVERYTHING, 'stdio']) };
  writeFileSync(path.join(e.home, 'extensions.json'), JSON.stringify({ mcp: { servers } }));
  const d = await startDaemon(t, e.home, { tag: e.tag });
  const received = (): string[] =>
    existsSync(log)
      ? readFileSync(log, 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l).name)
      : [];
  const call = (name: string, args: unknown) => piped(e, ['call', name, '--args', JSON.stringify(args)]);

  const reached = async (name: string, args: unknown, what: string) => {
    const r = await call(name, args);
    t.equal(r.code, 0, `${what}: the call went through (${r.stderr.trim()})`);
    t.match(r.stdout, `reached ${name.split('/')[1]}`, what);
  };
  await reached('hostile/async_schema', {}, 'an $async schema is not checked (and does not bring the daemon down)');
  await reached('hostile/slow_pattern', { s: `${'a'.repeat(200)}b` }, 'a pattern that backtracks polynomially is not run');
  await reached('hostile/branching_refs', { x: 1 }, 'a $ref graph branching 2^40 ways is given up on');
  let deep: Record<string, unknown> = { leaf: 1 };
  for (let i = 0; i < 40; i++) deep = { c: deep };
  const shallow = await call('hostile/deep_branching', { c: { c: {} } });
  t.equal(shallow.code, 2, 'a recursion that branches at every level is still checked for shallow arguments');
  t.match(shallow.stderr, /c\.c\.leaf is required/);
  await reached('hostile/deep_branching', deep, 'but given up on for arguments 40 levels deep');

  const shadow = await call('mcp_everything_echo', { message: 'meant for everything' });
  t.equal(shadow.code, 4, `a name two definitions answer to: exit 4 (${shadow.stderr.trim()})`);
  t.equal(errorCode(shadow.stderr), 'ALBEDO_NOT_FOUND');
  t.match(shadow.stderr, /more than one tool/);
  t.match(shadow.stderr, /everything\/echo/, "everything's echo is a candidate");
  t.match(shadow.stderr, /hostile\/mcp_everything_echo/, 'and the tool that took its name');
  const echo = await call('everything/echo', { message: 'settled' });
  t.equal(echo.code, 0, 'server/tool settles it');
  t.match(echo.stdout, 'Echo: settled');

  t.same(received(), ['async_schema', 'slow_pattern', 'branching_refs', 'deep_branching'], 'the shadowing tool was never called');
  t.equal(daemonInfo(e.home)?.pid, d.info.pid, 'the daemon that answered first still runs');
  t.equal(d.child.exitCode, null, 'it never exited');
  const status = await piped(e, ['daemon', 'status']);
  t.equal(status.code, 0, 'and it answers');
});
