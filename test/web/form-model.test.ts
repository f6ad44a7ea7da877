// The web form's data rules (web/app/form-model.js), without a browser:
// the command line the edit form shows for a saved command splits back, by
// the CLI's own splitter (protocol/command-line.ts, which the daemon's
// POST /v1/ui/command-line runs), to exactly the saved words — so an edit
// that leaves the line alone changes nothing, whatever the words hold; and
// the PUT / PATCH bodies follow the API's secret rules (a value stores,
// null removes, left out keeps).
import t from 'tap';
import fc from 'fast-check';
import { splitCommandLine } from '../../protocol/command-line.ts';
import { checkDraft, draftFromServer, emptyDraft, envRow, joinCommand, patchBody, putBody } from '../../web/app/form-model.js';

t.test('a saved command line, shown and split again, is the same words', async (t) => {
  // Mostly the characters a shell treats specially, some letters, and any other code point now and then.
  const char = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...'ab =\'"\\$`*?[]{}~#;&|<>()\n\t!%@:,./-') },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) });
  const word = fc.array(char, { maxLength: 12 }).map((cs) => cs.join('').replace(/\0/g, ''));
  fc.assert(fc.property(fc.array(word, { minLength: 1, maxLength: 6 }), (w) => {
    fc.pre(w[0] !== '');
    const r = splitCommandLine(joinCommand(w[0]!, w.slice(1)));
    return 'words' in r && JSON.stringify(r.words) === JSON.stringify(w);
  }), { numRuns: 2000 });
  t.equal(joinCommand('/usr/bin/x', ['--root', '/srv/my docs', "it's", 'a=b']), "/usr/bin/x --root '/srv/my docs' 'it'\\''s' a=b");
  t.equal(joinCommand('A=b', []), "'A=b'", 'a first word with = is quoted (a shell would take it for an assignment)');
});

t.test('the bodies follow the API\'s secret rules', async (t) => {
  const add = { ...emptyDraft(), url: ' https://mcp.example.com/mcp ', name: 'x', bearer: 'tok', headerName: 'X-Key', headerValue: 'v' };
  t.same(putBody(add, null), { url: 'https://mcp.example.com/mcp', secrets: { bearer: 'tok', header: { name: 'X-Key', value: 'v' } } });
  const stdio = { ...emptyDraft(), transport: 'stdio' as const, command: 'node s.js', name: 's', env: [envRow({ key: 'K', value: 'v' }), envRow()] };
  t.same(putBody(stdio, { command: 'node', args: ['s.js'] }), { command: 'node', args: ['s.js'], secrets: { env: { K: 'v' } } }, 'empty rows are left out');
  t.same(checkDraft(stdio), {}, 'nothing to refuse');

  const saved = {
    name: 's', config: { type: 'stdio', command: 'node', args: ['s.js'], env: { TAG: { env: 'T' } } },
    secrets: { bearer: false, header: null, env: ['KEEP', 'DROP'], oauth_client: false },
  };
  const d = draftFromServer(saved);
  t.same(d.named, [['TAG', 'T']], 'what it reads from the daemon\'s environment');
  t.same(d.env.map((r) => [r.key, r.stored]), [['KEEP', true], ['DROP', true]]);
  t.same(patchBody(d, saved, null), {}, 'nothing changed: an empty patch (the server is tried as it is)');
  d.env[1]!.remove = true;
  d.env[0]!.value = 'new';
  t.same(patchBody(d, saved, { command: 'node', args: ['s.js', '--x'] }), { args: ['s.js', '--x'], secrets: { env: { KEEP: 'new', DROP: null } } },
    'only the changed words; a value replaces, remove sends null, blank is left out');

  const http = { name: 'h', config: { type: 'http', url: 'https://h/mcp' }, secrets: { bearer: true, header: 'X-Key', env: [], oauth_client: false } };
  const e = draftFromServer(http);
  t.same([e.storedBearer, e.storedHeader, e.headerName], [true, 'X-Key', 'X-Key']);
  t.same(patchBody(e, http, null), {}, 'blank secrets keep the stored ones');
  t.same(checkDraft(e), {}, 'a stored header with a blank value is no problem');
  t.same(patchBody({ ...e, removeBearer: true, removeHeader: true }, http, null), { secrets: { bearer: null, header: null } });
});

t.test('what is refused before anything is sent', async (t) => {
  t.same(Object.keys(checkDraft(emptyDraft())).sort(), ['name', 'url']);
  const half = { ...emptyDraft(), url: 'https://h/mcp', name: 'h', headerValue: 'v' };
  t.same(Object.keys(checkDraft(half)), ['headerName'], 'a header value without a name');
  const bad = { ...emptyDraft(), transport: 'stdio' as const, command: 'x', name: 'x', env: [envRow({ key: '1X', value: 'v' }), envRow({ key: 'K' })] };
  t.same(Object.keys(checkDraft(bad)).map((k) => k.replace(/\d+/, 'N')), ['env-N-key', 'env-N-value'], 'a bad variable name, a value missing');
});
