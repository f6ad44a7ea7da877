// `albedo probe` shows what a server says, never obeys it (issue 20, item
// 6): serverInfo, instructions, tool and prompt names and descriptions, a
// warning quoting the server, a tool's result, an error quoting the
// server's stderr — hostile to a terminal (OSC title and clipboard, CSI, a
// bare CR, bidirectional controls) — reach stdout and stderr escaped as the
// daemon-backed commands escape them, and --json is their encoder's JSON:
// the exact values, no raw control character.
import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ROOT, NODE, fixture, newTag, taggedPids } from '../helpers.ts';

t.setTimeout(170_000);

const BIN = path.join(ROOT, 'bin', 'albedo.ts');
const SERVER = fixture('terminal-hostile-server.ts');
/** As the server sends it: OSC 0 and 2 (titles, BEL- and ST-terminated), OSC 52 (clipboard), CSI (C0 and C1), CR, bidi controls, DEL. */
const EVIL = '\x1b]0;T0\x07\x1b]2;T2\x1b\\\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x9b31m\rX\u202egnp.exe\u2066\x7f';
/** Any control character a terminal would act on (all but line feed and tab), DEL, C1, and the bidirectional controls. */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

function probe(args: string[], serverArgs: string[] = []): { code: number | null; stdout: string; stderr: string; tag: string } {
  const tag = newTag();
  const r = spawnSync(NODE, [BIN, 'probe', '--env', `ALBEDO_TEST_TAG=${tag}`, ...args, '--', NODE, SERVER, ...serverArgs], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, tag };
}

function clean(t: Test, what: string, r: { stdout: string; stderr: string; tag: string }): void {
  t.notMatch(r.stdout, RAW, `${what}: no raw control character on stdout`);
  t.notMatch(r.stderr, RAW, `${what}: none on stderr`);
  t.same(taggedPids(r.tag), [], `${what}: the server was reaped`);
}

t.test('the human output shows every word of the server escaped', async (t) => {
  const r = probe([]);
  t.equal(r.code, 0, r.stderr);
  clean(t, 'summary', r);
  for (const shown of [
    '\\x1b]0;T0\\x07',
    '\\x1b]2;T2\\x1b\\',
    '\\x1b]52;c;cm0gLXJmIH4=\\x07',
    '\\x9b31m',
    '\\x0dX',
    '\\u202egnp.exe',
    '\\u2066',
  ]) {
    t.ok(r.stdout.includes(shown), `spelled out: ${shown}`);
  }
  t.match(r.stdout, /^server {3}Title\\x1b/m, 'serverInfo');
  t.match(r.stdout, /^instructions {2}Read me\\x1b.*done$/m, 'instructions');
  t.match(r.stdout, /^ {2}tool\\x1b.* {2}desc\\x1b.*end$/m, 'a tool, name and description, on one line');
  t.match(r.stdout, /^ {2}prompt\\x1b/m, 'a prompt');
  t.match(r.stdout, /^warning: tools\/list: .*repeated cursor/m, 'the warning quoting the cursor');

  const call = probe(['--call', `tool${EVIL}`]);
  t.equal(call.code, 0, call.stderr);
  clean(t, '--call', call);
  t.match(call.stdout, /tools\/call tool\\x1b/, 'the tool named as asked, escaped');
  t.ok(call.stdout.includes('result\\u001b]0;T0'), 'its result, as JSON');
  t.ok(call.stdout.includes('\\u202egnp.exe'), 'no bidirectional control in the result either');
});

t.test('--json: the exact values, through the encoder of the other commands', async (t) => {
  const r = probe(['--json', '--call', `tool${EVIL}`]);
  t.equal(r.code, 0, r.stderr);
  clean(t, '--json', r);
  t.equal(r.stdout.trim().split('\n').length, 1, 'one line');
  const out = JSON.parse(r.stdout);
  t.same(out.serverInfo, { name: `srv${EVIL}`, title: `Title${EVIL}`, version: `1${EVIL}` });
  t.equal(out.instructions, `Read me${EVIL}done`);
  t.equal(out.tools[0].name, `tool${EVIL}`);
  t.equal(out.tools[0].description, `desc${EVIL}end`);
  t.equal(out.prompts[0].name, `prompt${EVIL}`);
  t.ok(
    out.warnings.some((w: string) => w.includes('repeated cursor')),
    'the warning',
  );
  t.equal(out.result.content[0].text, `result${EVIL}`);
});

t.test("error lines: the stderr tail and a server's error message, escaped, one line", async (t) => {
  const exited = probe([], ['exit']);
  t.equal(exited.code, 1);
  clean(t, 'exit', exited);
  t.match(exited.stderr, /^albedo probe: ALBEDO_SERVER_EXITED: .*boom\\x1b\]0;T0\\x07.*last\\x1b/);
  t.equal(exited.stderr.trim().split('\n').length, 1, 'one line');

  const refused = probe(['--read', 'x://y']);
  t.equal(refused.code, 1);
  clean(t, 'server error', refused);
  t.match(refused.stderr, /^albedo probe: ALBEDO_/);
  t.equal(refused.stderr.trim().split('\n').length, 1, 'one line');
});
