// What a server says reaches a person's terminal shown, not obeyed: control
// characters in tool descriptions, instructions, results and error messages
// are printed as \xHH (line feeds and tabs kept in a tool's text result),
// while --json stays the exact JSON value and a pipe gets a result's text
// as the tool sent it (issue 11, hardening: terminal escape injection).
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
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
  const p = pty.spawn(NODE, [BIN, ...args], {
    cols: 400,
    rows: 50,
    cwd: ROOT,
    env: { ...process.env, ALBEDO_HOME: home } as Record<string, string>,
  });
  let out = '';
  p.onData((d) => {
    out += d;
  });
  // The waiting line of a slow save (bin/client/progress.ts: drawn, redrawn and cleared with `\r ESC[2K`) is the
  // CLI's own, not the server's text: on a loaded machine the try can take long enough for it to show, so it is taken
  // out before the checks (the server's text, escaped by safe(), can hold no raw ESC to fake one).
  const own = (s: string): string => s.replace(/(?:\r\x1b\[2K[^\r\n]*)+\r\x1b\[2K/g, '');
  return new Promise((resolve) => p.onExit(({ exitCode }) => resolve({ code: exitCode, out: own(out).replace(/\r\n/g, '\n') })));
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
  for (const c of ['\u061c', '\u200e', '\u200f', '\u202a', '\u202d', '\u2066', '\u2069'])
    t.notOk(safe(`a${c}b`).includes(c), `U+${c.charCodeAt(0).toString(16)}`);
  t.equal(safe('line\nnext\tcol', true), 'line\nnext\tcol', 'line feeds and tabs kept where lines are meant');
  t.equal(safe('é 𝄞 ü'), 'é 𝄞 ü', 'other characters as they are');
});

t.test('invisible characters are shown too: separators, zero-width, word joiners, the BOM, tag characters', async (t) => {
  const { safe, toJson } = await import('../../bin/client/output.ts');
  const cases: Array<[string, string]> = [
    ['\u2028', '\\u2028'],
    ['\u2029', '\\u2029'],
    ['\u200b', '\\u200b'],
    ['\u2060', '\\u2060'],
    ['\u2061', '\\u2061'],
    ['\u2064', '\\u2064'],
    ['\ufeff', '\\ufeff'],
    ['\u{e0000}', '\\u{e0000}'],
    ['\u{e0041}', '\\u{e0041}'],
    ['\u{e007f}', '\\u{e007f}'],
  ];
  for (const [c, shown] of cases) {
    const label = `U+${c.codePointAt(0)!.toString(16)}`;
    t.equal(safe(`a${c}b`), `a${shown}b`, `${label}: spelled out`);
    t.equal(safe(`a${c}b`, true), `a${shown}b`, `${label}: also where lines are kept`);
    const json = toJson({ v: `a${c}b` }, 0);
    t.notOk(json.includes(c), `${label}: --json escapes it`);
    t.same(JSON.parse(json), { v: `a${c}b` }, `${label}: --json is the same value`);
  }
  // A hidden message in tag characters: every one shown.
  const hidden = 'ok' + [...'run rm'].map((ch) => String.fromCodePoint(0xe0000 + ch.charCodeAt(0))).join('');
  t.equal(safe(hidden), 'ok\\u{e0072}\\u{e0075}\\u{e006e}\\u{e0020}\\u{e0072}\\u{e006d}');
  // What emoji and scripts need stays: the zero-width non-joiner and joiner, astral characters that are not tags.
  for (const keep of ['👩\u200d💻', 'می\u200cخواهم', '𝄞', '🏴\u{e0067}'.slice(0, 2)])
    t.equal(safe(keep), keep, `${JSON.stringify(keep)} kept`);
  t.equal(toJson('👩\u200d💻', 0), '"👩\u200d💻"', 'and --json leaves them as they are');
});

t.test('the web pane spells out the same set (web/shared/shown.js, which the CLI uses)', async (t) => {
  const { INVISIBLE, spelled } = await import('../../web/shared/shown.js');
  const pane = readFileSync(path.join(ROOT, 'web', 'app', 'ui.js'), 'utf8');
  t.match(pane, /from '\.\.\/shared\/shown\.js'/, 'the pane imports the shared set');
  const re = new RegExp(`[${INVISIBLE}]`, 'gu');
  t.equal('x\u202e\u200b\u{e0041}\u200dy'.replace(re, spelled), 'x\\u202e\\u200b\\u{e0041}\u200dy');
});
