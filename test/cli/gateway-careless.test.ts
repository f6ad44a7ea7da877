// `albedo gateway` typed carelessly, against a real daemon: a list option that names no server (`--include ""`, as an
// unset shell variable gives) would save a gateway that composes nothing, and `--revoke ""` would name the route of
// every token; both are bad usage (exit 2) with nothing written or revoked. A gateway written by hand with
// `include: []` is said to serve "no server", never an empty cell. Another gateway's token id revokes nothing.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { newTag, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { errorCode, piped, type CliEnv } from './cli-harness.ts';

t.setTimeout(120_000);

t.test('albedo gateway: careless input', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  const file = path.join(e.home, 'extensions.json');
  writeFileSync(file, JSON.stringify({ gateways: { a: {}, none: { servers: { include: [] } } } }, null, 2));
  const d = await startDaemon(t, e.home, { tag: e.tag });
  const run = (...args: string[]) => piped(e, ['gateway', ...args]);
  const before = readFileSync(file);

  for (const args of [
    ['add', 'g', '--include', ''],
    ['add', 'g', '--include', ' , '],
    ['add', 'g', '--exclude', ''],
  ]) {
    const r = await run(...args);
    t.same([r.code, errorCode(r.stderr)], [2, 'ALBEDO_INVALID_ARGUMENT'], `${args.join(' ')}: ${r.stderr.trim()}`);
  }
  t.same(readFileSync(file), before, 'nothing written');

  const mine = (await d.call('POST', '/v1/gateways/a/tokens')).body;
  const theirs = (await d.call('POST', '/v1/gateways/none/tokens')).body;
  const empty = await run('token', 'a', '--revoke', '');
  t.same([empty.code, errorCode(empty.stderr)], [2, 'ALBEDO_INVALID_ARGUMENT'], `--revoke "": ${empty.stderr.trim()}`);
  const other = await run('token', 'a', '--revoke', theirs.id, '--json');
  t.same([other.code, errorCode(other.stderr)], [4, 'ALBEDO_NOT_FOUND'], "another gateway's token id: not found");
  const ids = async (name: string) => (await d.call('GET', `/v1/gateways/${name}`)).body.tokens.map((x: { id: string }) => x.id);
  t.same([await ids('a'), await ids('none')], [[mine.id], [theirs.id]], 'no token revoked');

  const list = await run('list');
  t.equal(list.code, 0);
  t.match(list.stdout, /^none\s+composed\s+no server\s+1\s+0/m, 'include: [] serves "no server"');
});
