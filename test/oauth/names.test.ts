// Server names are keys of creds.json (`mcp.<name>.oauth`): issue 10, item
// 1. `__proto__`, `constructor` and `prototype` are refused as names (given,
// or derived from a bare `http://__proto__/`) with ALBEDO_INVALID_CONFIG,
// before anything runs or is stored; and the store itself treats every name
// as a plain own key, so even a record written under such a name (by hand,
// or through the store directly) never reaches Object.prototype and keeps
// the file valid JSON with the other records intact.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { FileCredsStore, type OAuthRecord } from '../../services/oauth/store.ts';
import { createAlbedo } from '../../api/albedo.ts';
import { rejection, tempHome } from '../helpers.ts';

const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];

/** Where a record written through a prototype key would have landed: Object.prototype, Object (`constructor`), the built-in methods. */
function polluted(): string[] {
  const out: string[] = [];
  if (({} as Record<string, unknown>).oauth !== undefined) out.push('({}).oauth');
  const places: Array<[string, object]> = [
    ['Object.prototype', Object.prototype],
    ['Object', Object],
    ['Function.prototype', Function.prototype],
    ...PROTO_KEYS.filter((k) => k !== '__proto__' && k !== 'constructor' && k !== 'prototype').map((k): [string, object] => [
      `Object.prototype.${k}`,
      (Object.prototype as unknown as Record<string, object>)[k]!,
    ]),
  ];
  for (const [what, o] of places) if (Object.hasOwn(o, 'oauth')) out.push(`${what}.oauth`);
  return out;
}

const rec = (url: string, account: string): OAuthRecord => ({
  url,
  state: 'needs_sign_in',
  reason: 'not_signed_in',
  account,
  updatedAt: 0,
});

t.test("the store keeps records named like Object.prototype's properties as plain keys", async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'creds.json');
  writeFileSync(file, JSON.stringify({ other: { keep: 'me' }, mcp: { ordinary: { oauth: rec('http://o/mcp', 'ordinary') } } }));
  const store = new FileCredsStore(file);
  for (const name of PROTO_KEYS) {
    await store.update(name, `http://${name}/mcp`, (cur) => ({
      record: { ...(cur ?? rec(`http://${name}/mcp`, name)) },
      value: undefined,
    }));
  }
  t.same(polluted(), [], 'after the writes');
  const doc = JSON.parse(readFileSync(file, 'utf8')) as { other: unknown; mcp: Record<string, { oauth?: OAuthRecord }> };
  t.same(doc.other, { keep: 'me' }, 'other content kept');
  t.same(Object.keys(doc.mcp).sort(), ['ordinary', ...PROTO_KEYS].sort(), 'each name is its own key in the file');
  t.equal(doc.mcp.ordinary!.oauth!.account, 'ordinary', 'the other record is intact');

  // Read back by a store that only has the file.
  const again = new FileCredsStore(file);
  for (const name of PROTO_KEYS) t.equal((await again.get(name, `http://${name}/mcp`))?.account, name, `${name}: read back`);
  t.equal(await again.get('__proto__', 'http://other/mcp'), undefined, 'a record for another URL is still absent');
  t.equal(
    await again.get('isPrototypeOf', 'http://isPrototypeOf/mcp'),
    undefined,
    'a name never written is absent, not a prototype member',
  );
  const all = await again.all();
  t.same(Object.keys(all).sort(), ['ordinary', ...PROTO_KEYS].sort(), 'all() lists every record by name');
  t.equal(all['__proto__']?.account, '__proto__');

  // Deleting one removes only it.
  await store.update('__proto__', 'http://__proto__/mcp', () => ({ record: null, value: undefined }));
  const after = JSON.parse(readFileSync(file, 'utf8')) as { mcp: Record<string, unknown> };
  t.same(Object.keys(after.mcp).sort(), ['ordinary', ...PROTO_KEYS.filter((n) => n !== '__proto__')].sort(), 'only that record went');
  t.same(polluted(), [], 'after the delete');
});

t.test('a hand-written creds.json with a __proto__ record is read as data', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'creds.json');
  // JSON.parse makes "__proto__" an own key; a lookup through assignment or `??=` would reach the prototype instead.
  const proto = JSON.stringify(rec('http://x/mcp', 'proto'));
  writeFileSync(file, `{"mcp": {"__proto__": {"oauth": ${proto}}, "b": {"oauth": ${JSON.stringify(rec('http://b/mcp', 'b'))}}}}`);
  const albedo = await createAlbedo({ home, transportWorkers: 1 });
  t.teardown(() => albedo.close());
  const statuses = await albedo.authStatuses();
  t.same(
    statuses.map((s) => [s.server, s.account]).sort(),
    [
      ['__proto__', 'proto'],
      ['b', 'b'],
    ],
    'both records are listed',
  );
  await new FileCredsStore(file).update('b', 'http://b/mcp', (cur) => ({ record: { ...cur!, account: 'b2' }, value: undefined }));
  const doc = JSON.parse(readFileSync(file, 'utf8')) as { mcp: Record<string, { oauth: OAuthRecord }> };
  t.ok(Object.hasOwn(doc.mcp, '__proto__'), 'the __proto__ record survived a write of another record');
  t.equal(doc.mcp['__proto__']!.oauth.account, 'proto');
  t.equal(doc.mcp.b!.oauth.account, 'b2');
  t.same(polluted(), [], 'after reading and writing');
});

t.test('the names __proto__, constructor, prototype are refused before anything runs or is stored', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'creds.json');
  writeFileSync(file, JSON.stringify({ mcp: { kept: { oauth: rec('http://127.0.0.1:9/kept', 'kept') } } }));
  const before = readFileSync(file, 'utf8');
  const albedo = await createAlbedo({
    home,
    transportWorkers: 1,
    authorize: () => {
      throw new Error('the browser must not be opened');
    },
  });
  t.teardown(() => albedo.close());
  // Port 9 (discard): nothing listens, so any attempt to reach it would fail with a network error, not ALBEDO_INVALID_CONFIG.
  const url = 'http://127.0.0.1:9/mcp';
  for (const name of ['__proto__', 'constructor', 'prototype']) {
    for (const [what, p] of [
      ['signIn', () => albedo.signIn({ url }, { name })],
      ['authStatus', () => albedo.authStatus({ url }, { name })],
      ['signOut', () => albedo.signOut({ url }, { name })],
      ['connect', () => albedo.connect({ url }, { name })],
    ] as const) {
      const err = await rejection(p());
      t.equal(err.code, 'ALBEDO_INVALID_CONFIG', `${what} with the name ${name}: ${err.message}`);
      t.equal(err.outcome, 'not_run');
    }
  }
  // Names derived from a bare URL: its host.
  for (const bare of ['http://__proto__/', 'http://constructor/', 'http://prototype']) {
    const err = await rejection(albedo.authStatus({ url: bare }));
    t.equal(err.code, 'ALBEDO_INVALID_CONFIG', `the default name of ${bare}`);
    t.equal((await rejection(albedo.signOut({ url: bare }))).code, 'ALBEDO_INVALID_CONFIG');
  }
  // Only those three: a name that merely contains one, or another member's name, stays valid.
  t.equal((await albedo.authStatus({ url: 'http://prototype/mcp' })).server, 'prototype/mcp');
  t.equal((await albedo.authStatus({ url }, { name: 'toString' })).state, 'none', 'toString is an ordinary name (and has no record)');
  t.equal(readFileSync(file, 'utf8'), before, 'creds.json is unchanged');
  t.same(polluted(), [], 'after the refusals');
});
