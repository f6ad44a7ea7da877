// What a server says reaches a person's terminal shown, not obeyed: control
// characters in tool descriptions, instructions, results and error messages
// are printed as \xHH (line feeds and tabs kept in a tool's text result),
// while --json stays the exact JSON value and a pipe gets a result's text
// as the tool sent it (issue 11, hardening: terminal escape injection).
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import pty from 'node-pty';
import { NODE, ROOT, newTag, tempHome } from '../helpers.ts';
import { BIN, entry, startDaemon } from '../daemon/harness.ts';
import { errorCode, piped } from './cli-harness.ts';

t.setTimeout(170_000);

/** As test/cli/fixtures/hostile-server.ts sends it. */
const HOSTILE = '\x1b]0;PWNED\x07\x1b[2J\x9b31m\rX\x7f';
const SHOWN = '\\x1b]0;PWNED\\x07\\x1b[2J\\x9b31m\\x0dX\\x7f';
/** In a one-line cell, where every run of white space (the \r too) is one space. */
const SHOWN_IN_CELL = SHOWN.replace('\\x0d', ' ');
const SERVER = path.join(import.meta.dirname, 'fixtures', 'hostile-server.ts');
/** Any control character but a line feed and a tab. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/** Runs `albedo ARGS` in a terminal and returns exactly what it wrote (the terminal's \r\n as \n). */
function raw(home: string, args: string[]): Promise<{ code: number; out: string }> {
  const p = pty.spawn(NODE, [BIN, ...args], { cols: 400, rows: 50, cwd: ROOT, env: { ...process.env, ALBEDO_HOME: home } as Record<string, string> });
  let out = '';
  p.onData((d) => { out += d; });
  return new Promise((resolve) => p.onExit(({ exitCode }) => resolve({ code: exitCode, out: out.replace(/\r\n/g, '\n') })));
}

t.test('descriptions, instructions, results and errors from a server are shown escaped on a terminal', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers: { hostile: entry(NODE, [SERVER]) } } }));
  await startDaemon(t, home, { tag });

  const tools = await raw(home, ['tools']);
  t.equal(tools.code, 0, tools.out);
  t.notMatch(tools.out, CONTROL, 'albedo tools: no control character reaches the terminal');
  t.ok(tools.out.includes(`Looks fine${SHOWN_IN_CELL}then not`), 'the description is shown with its control characters spelled out');

  const call = await raw(home, ['call', 'hostile/evil']);
  t.equal(call.code, 0, call.out);
  t.notMatch(call.out, CONTROL, 'albedo call: none either');
  t.equal(call.out, `first line\n\tindented${SHOWN}end\n`, 'its line feed and tab kept, the rest spelled out');

  const json = await raw(home, ['call', 'hostile/evil', '--json']);
  t.equal(json.code, 0);
  t.notMatch(json.out, CONTROL, '--json: JSON escapes');
  t.equal(JSON.parse(json.out).content[0].text, `first line\n\tindented${HOSTILE}end`, '--json: the exact value');

  const pipe = await piped({ home, tag }, ['call', 'hostile/evil']);
  t.equal(pipe.code, 0);
  t.equal(pipe.stdout, `first line\n\tindented${HOSTILE}end\n`, 'to a pipe, the text as the tool sent it');

  const show = await raw(home, ['mcp', 'show', 'hostile']);
  t.equal(show.code, 0, show.out);
  t.notMatch(show.out, CONTROL, 'albedo mcp show: none');
  t.ok(show.out.includes(`Harmless words${SHOWN_IN_CELL} and more.`), 'the instructions, spelled out');
  for (const args of [['mcp', 'list'], ['status']]) {
    const r = await raw(home, args);
    t.equal(r.code, 0, r.out);
    t.notMatch(r.out, CONTROL, `albedo ${args.join(' ')}: none`);
  }

  // An error message that quotes the server: its stderr, hostile too.
  const spelled = HOSTILE.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  const script = `process.stderr.write('boom${spelled}\\n'); process.exit(1)`;
  const failed = await raw(home, ['mcp', 'add', 'exits', '--', NODE, '-e', script]);
  t.equal(failed.code, 1, failed.out);
  t.equal(errorCode(failed.out), 'ALBEDO_SERVER_EXITED');
  t.notMatch(failed.out, CONTROL, 'the error line: none');
  t.equal(failed.out.trim().split('\n').length, 1, 'and it is one line');
});

t.test('bidirectional controls are shown, not obeyed (a reversed "exe.png" stays visible)', async (t) => {
  const { safe } = await import('../../bin/client/output.ts');
  t.equal(safe('FAKE $ \u202egnp.exe'), 'FAKE $ \\u202egnp.exe');
  for (const c of ['\u061c', '\u200e', '\u200f', '\u202a', '\u202d', '\u2066', '\u2069']) t.notOk(safe(`a${c}b`).includes(c), `U+${c.charCodeAt(0).toString(16)}`);
  t.equal(safe('line\nnext\tcol', true), 'line\nnext\tcol', 'line feeds and tabs kept where lines are meant');
  t.equal(safe('é 𝄞 ü'), 'é 𝄞 ü', 'other characters as they are');
});
