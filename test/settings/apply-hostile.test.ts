// `settings/apply` as any worker can send it, not only the daemon: the plan
// crosses a thread, so the service checks what it is given and keeps its
// word on each field. A dry run writes nothing — a removal included; plans
// of the wrong shape are refused with a code and leave both files byte for
// byte, and the service goes on answering (its write queue is not wedged
// by a plan that threw). Real worker, real files.
import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kernel } from '../../kernel/kernel.ts';
import { rejection, tempHome } from '../helpers.ts';

const MODULE = fileURLToPath(new URL('../../services/settings/service.ts', import.meta.url));

t.test('settings/apply from a careless or hostile worker', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  const creds = path.join(home, 'creds.json');
  writeFileSync(file, `${JSON.stringify({ mcp: { servers: {} } }, null, 2)}\n`);
  const k = new Kernel();
  k.start({ name: 'settings', module: MODULE, options: { home, env: {}, watch: false } });
  t.teardown(() => k.stop(2_000));
  const apply = (params: unknown): Promise<unknown> => k.callAny('settings', 'settings/apply', params);

  await apply({ plan: { op: 'put', name: 'svc', entry: { command: '/bin/true', enabled: false }, secrets: { env: { K: 'kept-1' } } } });
  const files = (): [Buffer, Buffer | null] => [readFileSync(file), existsSync(creds) ? readFileSync(creds) : null];
  const before = files();

  const dry = (await apply({ plan: { op: 'remove', name: 'svc' }, dryRun: true })) as Record<string, unknown>;
  t.match(dry, { saved: false, change: null, tried: null, before: { server: { command: '/bin/true' } } }, 'a dry run of a removal');
  t.match(dry.server, { server: { command: '/bin/true' } }, 'the server in force after it: as before it');
  t.same(files(), before, 'a dry run removes nothing: both files byte for byte');
  t.same(Object.keys(((await k.call('settings', 'settings/get', {})) as { servers: object }).servers), ['svc']);
  const gone = await rejection(apply({ plan: { op: 'remove', name: 'nope' }, dryRun: true }));
  t.match(gone, { code: 'ALBEDO_NOT_FOUND', data: { server: 'nope' } }, 'a dry run of a removal of nothing: not found, as the removal');

  const refused: Array<[string, unknown, string]> = [
    ['no plan', {}, 'ALBEDO_INVALID_ARGUMENT'],
    ['an unknown op', { plan: { op: 'truncate', name: 'svc' } }, 'ALBEDO_INVALID_ARGUMENT'],
    ['a name that is not a string', { plan: { op: 'remove', name: { toString: null } } }, 'ALBEDO_INVALID_ARGUMENT'],
    ['an entry that is not an object', { plan: { op: 'put', name: 'x', entry: 'rm -rf /' } }, 'ALBEDO_INVALID_CONFIG'],
    ['a name that reaches a prototype', { plan: { op: 'put', name: '__proto__', entry: { command: 'x' } } }, 'ALBEDO_INVALID_CONFIG'],
    ['a patch that adds __proto__', { plan: { op: 'patch', name: 'svc', patch: JSON.parse('{"__proto__":{"command":"y"}}') } }, ''],
    ['a merge patch that is not an object', { plan: { op: 'patch', name: 'svc', patch: ['x'] } }, 'ALBEDO_INVALID_CONFIG'],
    ['secrets of the wrong shape', { plan: { op: 'patch', name: 'svc', patch: {}, secrets: { env: 'K=v' } } }, 'ALBEDO_INVALID_CONFIG'],
    ['a key to keep that is not stored', { plan: { op: 'patch', name: 'svc', patch: {}, keep: { env: 'KX' } } }, 'ALBEDO_INVALID_ARGUMENT'],
    ['keep env that is a number', { plan: { op: 'patch', name: 'svc', patch: {}, keep: { env: 5 } } }, 'ALBEDO_INVALID_ARGUMENT'],
    ['keep that is a string', { plan: { op: 'patch', name: 'svc', patch: {}, keep: 'all' } }, 'ALBEDO_INVALID_ARGUMENT'],
    [
      'a keep header that is a number',
      { plan: { op: 'put', name: 'svc', entry: { command: 'x' }, keep: { header: 3 } } },
      'ALBEDO_INVALID_ARGUMENT',
    ],
    ['sections of the wrong shape', { plan: { op: 'sections', patch: { retryMs: -1, servers: {} } } }, 'ALBEDO_INVALID_CONFIG'],
    // A dry run is checked as the write would be.
    ['a dry run of bad sections', { plan: { op: 'sections', patch: { retryMs: -1 } }, dryRun: true }, 'ALBEDO_INVALID_CONFIG'],
  ];
  for (const [what, params, code] of refused) {
    const e = await rejection(apply(params));
    if (code) t.equal(e.code, code, what);
    else t.match(e.code, /^ALBEDO_INVALID_(CONFIG|ARGUMENT)$/, what);
    t.same(files(), before, `${what}: both files byte for byte`);
  }
  t.equal(Object.getPrototypeOf({}).command, undefined, 'no prototype reached on this side');

  // The queue goes on: a save after all that is written.
  const after = (await apply({ plan: { op: 'patch', name: 'svc', patch: { args: ['--ok'] } } })) as { saved: boolean };
  t.equal(after.saved, true);
  t.same(JSON.parse(readFileSync(file, 'utf8')).mcp.servers.svc.args, ['--ok']);
  t.ok(readFileSync(creds, 'utf8').includes('kept-1'), 'the stored secret kept');
});
