// Gateways in the settings (issue 22): the top-level `gateways` section of
// extensions.json validated like the rest — every issue names its gateway
// and its path from the top of the file, names checked (gatewayNameProblem)
// before any object is built from them, a pass-through that also composes
// refused — and put in force without a prototype; a hand edit of a gateway
// fires `settings/changed` naming it; the `sections` save (settings/apply)
// replaces or removes one gateway, written as given, every other key and
// section kept in place (JSON and TOML), and refuses a bad patch or a
// gateway changed since it was read with the file byte for byte as it was.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'smol-toml';
import { parseSettingsDocument } from '../../services/settings/file.ts';
import { SettingsStore } from '../../services/settings/store.ts';
import { applyPlan } from '../../services/settings/apply.ts';
import { tomlCodec } from '../../services/settings/toml-codec.ts';
import type { ApplyParams, SettingsChangedEvent, SettingsEvents } from '../../protocol/services/settings.ts';
import type { SettingsIssue } from '../../protocol/settings.ts';
import { rejection, tempHome, until } from '../helpers.ts';

const DOC = {
  mcp: { servers: { filesystem: { command: '/bin/true' } } },
  gateways: {
    claude: { servers: { exclude: ['x'] }, profile: 'anthropic', tools: 'auto' },
    fs: { server: 'filesystem' },
    later: { server: 'not-configured-yet', enabled: false },
  },
};

t.test('a gateways section parses: defaults filled in, file order, no prototype; an unknown server is no file error', async (t) => {
  const r = parseSettingsDocument(DOC);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  const g = r.settings.gateways;
  t.equal(Object.getPrototypeOf(g), null, 'gateways has no prototype');
  t.same(Object.keys(g), ['claude', 'fs', 'later']);
  t.same(g.claude, { servers: { exclude: ['x'] }, profile: 'anthropic', tools: 'auto', enabled: true });
  t.same(g.fs, { server: 'filesystem', enabled: true });
  t.same(g.later, { server: 'not-configured-yet', enabled: false });
  const none = parseSettingsDocument({ mcp: {} });
  t.ok(none.ok && Object.keys(none.settings.gateways).length === 0, 'no section: no gateways');
});

type Case = [string, unknown, { gateway?: string; path: Array<string | number> }];
const gw = (name: string, def: unknown): unknown => ({ gateways: { [name]: def } });
const CASES: Case[] = [
  ['name with a space', gw('a b', {}), { gateway: 'a b', path: ['gateways', 'a b'] }],
  ['name starting with -', gw('-x', {}), { gateway: '-x', path: ['gateways', '-x'] }],
  ['name too long', gw('a'.repeat(65), {}), { gateway: 'a'.repeat(65), path: ['gateways', 'a'.repeat(65)] }],
  ['name empty', gw('', {}), { gateway: '', path: ['gateways', ''] }],
  ['reserved name add', gw('add', {}), { gateway: 'add', path: ['gateways', 'add'] }],
  ['reserved name token', gw('token', {}), { gateway: 'token', path: ['gateways', 'token'] }],
  [
    'pass-through with servers',
    gw('p', { server: 's', servers: { include: ['a'] } }),
    { gateway: 'p', path: ['gateways', 'p', 'servers'] },
  ],
  ['pass-through with tools', gw('p', { server: 's', tools: 'all' }), { gateway: 'p', path: ['gateways', 'p', 'tools'] }],
  ['pass-through with profile', gw('p', { server: 's', profile: 'openai' }), { gateway: 'p', path: ['gateways', 'p', 'profile'] }],
  ['unknown key', gw('c', { tool: 'all' }), { gateway: 'c', path: ['gateways', 'c'] }],
  ['tools not a mode', gw('c', { tools: 'some' }), { gateway: 'c', path: ['gateways', 'c', 'tools'] }],
  ['contextBudget too small', gw('c', { contextBudget: 10 }), { gateway: 'c', path: ['gateways', 'c', 'contextBudget'] }],
  ['include not strings', gw('c', { servers: { include: [1] } }), { gateway: 'c', path: ['gateways', 'c', 'servers', 'include', 0] }],
  ['server empty', gw('c', { server: '' }), { gateway: 'c', path: ['gateways', 'c', 'server'] }],
  ['enabled not boolean', gw('c', { enabled: 'yes' }), { gateway: 'c', path: ['gateways', 'c', 'enabled'] }],
  ['a gateway not an object', gw('c', 'filesystem'), { gateway: 'c', path: ['gateways', 'c'] }],
  ['gateways not an object', { gateways: ['c'] }, { path: ['gateways'] }],
];

t.test("every gateway's error names the gateway and its path", async (t) => {
  for (const [what, doc, want] of CASES) {
    const r = parseSettingsDocument(doc);
    if (r.ok) {
      t.fail(`${what}: accepted`);
      continue;
    }
    const hit = r.issues.find(
      (i: SettingsIssue) => i.server === null && i.gateway === want.gateway && JSON.stringify(i.path) === JSON.stringify(want.path),
    );
    t.ok(hit, `${what}: an issue for ${want.path.join('.')}`, { issues: r.issues });
  }
  const proto = parseSettingsDocument(JSON.parse('{"gateways":{"__proto__":{"server":"x"},"ok":{}}}'));
  t.notOk(proto.ok, '__proto__ as a name is refused, by name');
  if (!proto.ok)
    t.same(
      proto.issues.map((i) => i.gateway),
      ['__proto__'],
    );
  t.equal(({} as Record<string, unknown>).server, undefined, 'nothing reached a prototype');
});

type Ev = { [E in keyof SettingsEvents]: [E, SettingsEvents[E]] }[keyof SettingsEvents];

t.test('a hand edit of a gateway fires settings/changed naming it; a broken one settings/invalid naming it', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  writeFileSync(file, JSON.stringify(DOC, null, 2));
  const events: Ev[] = [];
  const s = await new SettingsStore({ home, env: {}, debounceMs: 50, onEvent: (n, p) => events.push([n, p] as Ev) }).open(true);
  t.teardown(() => s.close());
  const first = events.find((e) => e[0] === 'settings/changed')![1] as SettingsChangedEvent;
  t.same(first.gateways, ['claude', 'fs', 'later'], 'the first read: every gateway is new');
  t.same(Object.keys(s.get().gateways), ['claude', 'fs', 'later'], 'settings/get carries them');

  const next = async <E extends Ev[0]>(name: E, from: number): Promise<SettingsEvents[E]> => {
    await until(() => events.slice(from).some((e) => e[0] === name), 15_000, name);
    return events.slice(from).find((e) => e[0] === name)![1] as SettingsEvents[E];
  };
  let n = events.length;
  const edited = { ...DOC, gateways: { claude: { ...DOC.gateways.claude, tools: 'deferred' }, fs: DOC.gateways.fs, web: {} } };
  writeFileSync(file, JSON.stringify(edited, null, 2));
  const changed = await next('settings/changed', n);
  t.same([changed.cause, changed.gateways, changed.servers], ['file', ['claude', 'web', 'later'], []], 'changed, added, removed');
  t.same(s.get().gateways.claude!.tools, 'deferred');

  n = events.length;
  writeFileSync(file, JSON.stringify({ ...edited, mcp: { servers: { filesystem: { command: '/bin/false' } } } }, null, 2));
  const server = await next('settings/changed', n);
  t.same([server.servers.map((c) => c.name), server.gateways], [['filesystem'], []], 'a server edit names no gateway');

  n = events.length;
  writeFileSync(file, JSON.stringify({ ...edited, gateways: { ...edited.gateways, fs: { server: 'filesystem', tools: 'all' } } }));
  const invalid = await next('settings/invalid', n);
  t.same(
    invalid.issues.map((i) => [i.gateway, i.path]),
    [['fs', ['gateways', 'fs', 'tools']]],
    'the issue names the gateway',
  );
  t.same(s.get().gateways.fs, { server: 'filesystem', enabled: true }, 'the last valid settings stay in force');
});

const noCall = { call: () => Promise.reject(new Error('no save service here')), signal: new AbortController().signal } as never;
const sections = (patch: unknown, extra: Partial<ApplyParams['plan']> = {}): ApplyParams =>
  ({ plan: { op: 'sections', patch, ...extra } }) as ApplyParams;

t.test('settings/apply sections: a gateway set or removed, written as given, the rest of the file kept', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  const start = { skills: { dir: '/x' }, gateways: { b: { server: 'x' }, a: {} }, mcp: { retryMs: 1000 }, enabled: { other: 1 } };
  writeFileSync(file, JSON.stringify(start));
  const s = await new SettingsStore({ home, env: {} }).open(false);
  const doc = (): any => JSON.parse(readFileSync(file, 'utf8'));

  const r = await applyPlan(s, sections({ gateways: { a: { tools: 'auto' }, c: { server: 'fs', resultBudget: 500 } } }), noCall);
  t.same([r.saved, Object.keys(r.gateways!)], [true, ['b', 'a', 'c']]);
  t.same(Object.keys(doc()), ['skills', 'gateways', 'mcp', 'enabled'], 'sections in their places');
  t.same(
    doc().gateways,
    { b: { server: 'x' }, a: { tools: 'auto' }, c: { server: 'fs', resultBudget: 500 } },
    'replaced in place, added last, as given',
  );
  t.same([doc().skills, doc().mcp, doc().enabled], [start.skills, start.mcp, start.enabled], 'other sections as they were');

  await applyPlan(s, sections({ gateways: { b: null } }), noCall);
  t.same(doc().gateways, { a: { tools: 'auto' }, c: { server: 'fs', resultBudget: 500 } }, 'null removes');
  t.same(Object.keys(s.get().gateways), ['a', 'c']);

  const before = readFileSync(file);
  const bad: Array<[string, unknown]> = [
    ['a reserved name', { gateways: { list: {} } }],
    ['a bad name', { gateways: { 'a/b': {} } }],
    ['a pass-through that composes', { gateways: { a: { server: 'fs', servers: { include: ['x'] } } } }],
    ['an unknown key', { gateways: { a: { budget: 1 } } }],
  ];
  for (const [what, patch] of bad) {
    const e = await rejection(applyPlan(s, sections(patch), noCall));
    t.equal(e.code, 'ALBEDO_INVALID_CONFIG', what);
    t.same(readFileSync(file), before, `${what}: the file byte for byte as it was`);
  }
  const stale = await rejection(
    applyPlan(s, sections({ gateways: { a: { tools: 'all' } } }, { expect: { gateway: 'a', definition: null } }), noCall),
  );
  t.same([stale.code, (stale.data as { gateway: string }).gateway], ['ALBEDO_EDIT_CONFLICT', 'a'], 'planned on another definition');
  t.same(readFileSync(file), before, 'nothing written');
  const fresh = await applyPlan(
    s,
    sections({ gateways: { a: { tools: 'all' } } }, { expect: { gateway: 'a', definition: { tools: 'auto', enabled: true } } }),
    noCall,
  );
  t.equal(fresh.gateways!.a!.tools, 'all', 'planned on the definition in force: written');
});

t.test('extensions.toml: a gateway written as a table, the other tables kept', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.toml');
  writeFileSync(file, '[mcp]\nretryMs = 5000\n\n[other-extension]\ntheme = "dark"\n');
  const s = await new SettingsStore({ home, env: {}, codec: tomlCodec }).open(false);
  await applyPlan(s, sections({ gateways: { claude: { servers: { exclude: ['x'] }, tools: 'auto' } } }), noCall);
  const doc = parse(readFileSync(file, 'utf8'));
  t.same(doc, {
    mcp: { retryMs: 5000 },
    'other-extension': { theme: 'dark' },
    gateways: { claude: { servers: { exclude: ['x'] }, tools: 'auto' } },
  });
  t.same(s.get().gateways.claude, { servers: { exclude: ['x'] }, tools: 'auto', enabled: true });
  await applyPlan(s, sections({ gateways: { claude: null } }), noCall);
  t.same(parse(readFileSync(file, 'utf8')).gateways, {}, 'removed; the section stays, as written');
});
