// The web form's data rules (web/app/form-model.js), without a browser:
// the command line the edit form shows for a saved command splits back, by
// the CLI's own splitter (protocol/command-line.ts, which the daemon's
// POST /v1/ui/command-line runs), to exactly the saved words — so an edit
// that leaves the line alone changes nothing, whatever the words hold; and
// the PUT / PATCH bodies follow the API's secret rules (a value stores,
// null removes, left out keeps); the working directory is sent as typed
// (emptied on edit: removed), a relative program made absolute against it;
// a field's problem goes when that field changes.
import t from 'tap';
import fc from 'fast-check';
import { splitCommandLine } from '../../protocol/command-line.ts';
import {
  checkDraft,
  draftFromServer,
  emptyDraft,
  envRow,
  inDir,
  joinCommand,
  leftFieldProblem,
  patchBody,
  problemsAfter,
  putBody,
} from '../../web/app/form-model.js';
import { TILDE_PROBLEM } from '../../web/shared/labels.js';

t.test('a saved command line, shown and split again, is the same words', async (t) => {
  // Mostly the characters a shell treats specially, some letters, and any other code point now and then.
  const char = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...'ab =\'"\\$`*?[]{}~#;&|<>()\n\t!%@:,./-') },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  );
  const word = fc.array(char, { maxLength: 12 }).map((cs) => cs.join('').replace(/\0/g, ''));
  fc.assert(
    fc.property(fc.array(word, { minLength: 1, maxLength: 6 }), (w) => {
      fc.pre(w[0] !== '');
      const r = splitCommandLine(joinCommand(w[0]!, w.slice(1)));
      return 'words' in r && JSON.stringify(r.words) === JSON.stringify(w);
    }),
    { numRuns: 2000 },
  );
  t.equal(joinCommand('/usr/bin/x', ['--root', '/srv/my docs', "it's", 'a=b']), "/usr/bin/x --root '/srv/my docs' 'it'\\''s' a=b");
  t.equal(joinCommand('A=b', []), "'A=b'", 'a first word with = is quoted (a shell would take it for an assignment)');
});

t.test("the bodies follow the API's secret rules", async (t) => {
  const add = { ...emptyDraft(), url: ' https://mcp.example.com/mcp ', name: 'x', bearer: 'tok', headerName: 'X-Key', headerValue: 'v' };
  t.same(putBody(add, null), { url: 'https://mcp.example.com/mcp', secrets: { bearer: 'tok', header: { name: 'X-Key', value: 'v' } } });
  const stdio = {
    ...emptyDraft(),
    transport: 'stdio' as const,
    command: 'node s.js',
    cwd: '/srv/s',
    name: 's',
    env: [envRow({ key: 'K', value: 'v' }), envRow()],
  };
  t.same(
    putBody(stdio, { command: 'node', args: ['s.js'] }),
    { command: 'node', args: ['s.js'], cwd: '/srv/s', secrets: { env: { K: 'v' } } },
    'empty rows are left out',
  );
  t.same(checkDraft(stdio), {}, 'nothing to refuse');

  const saved = {
    name: 's',
    config: { type: 'stdio', command: 'node', args: ['s.js'], env: { TAG: { env: 'T' } } },
    secrets: { bearer: false, header: null, env: ['KEEP', 'DROP'], oauth_client: false },
  };
  const d = draftFromServer(saved);
  t.same(d.named, [['TAG', 'T']], "what it reads from the daemon's environment");
  t.same(
    d.env.map((r) => [r.key, r.stored]),
    [
      ['KEEP', true],
      ['DROP', true],
    ],
  );
  t.same(patchBody(d, saved, null), {}, 'nothing changed: an empty patch (the server is tried as it is)');
  t.same(checkDraft(d, saved), {}, 'a saved line is not checked again (no cwd, a relative s.js: written by hand)');
  t.same(patchBody({ ...d, cwd: '/srv/s' }, saved, null), { cwd: '/srv/s' }, 'a working directory given');
  t.same(
    patchBody(
      draftFromServer({ ...saved, config: { ...saved.config, cwd: '/srv/s' } }),
      { ...saved, config: { ...saved.config, cwd: '/srv/s' } },
      null,
    ),
    {},
  );
  t.same(
    patchBody({ ...d, cwd: '' }, { ...saved, config: { ...saved.config, cwd: '/srv/s' } }, null),
    { cwd: null },
    "emptied: removed, the server's own empty directory again",
  );
  d.env[1]!.remove = true;
  d.env[0]!.value = 'new';
  t.same(
    patchBody(d, saved, { command: 'node', args: ['s.js', '--x'] }),
    { args: ['s.js', '--x'], secrets: { env: { KEEP: 'new', DROP: null } } },
    'only the changed words; a value replaces, remove sends null, blank is left out',
  );

  const http = {
    name: 'h',
    config: { type: 'http', url: 'https://h/mcp' },
    secrets: { bearer: true, header: 'X-Key', env: [], oauth_client: false },
  };
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
  const bad = {
    ...emptyDraft(),
    transport: 'stdio' as const,
    command: 'x',
    name: 'x',
    env: [envRow({ key: '1X', value: 'v' }), envRow({ key: 'K' })],
  };
  t.same(
    Object.keys(checkDraft(bad)).map((k) => k.replace(/\d+/, 'N')),
    ['env-N-key', 'env-N-value'],
    'a bad variable name, a value missing',
  );
});

t.test('the working directory: a full path; a ~ flagged; a relative path in the command needs one', async (t) => {
  const d = { ...emptyDraft(), transport: 'stdio' as const, name: 'w' };
  t.match(
    checkDraft({ ...d, command: 'node build/index.js' }),
    { cwd: /build\/index\.js is a relative path/ },
    'no directory for build/index.js',
  );
  t.same(checkDraft({ ...d, command: 'node build/index.js', cwd: '/srv/weather' }), {});
  t.same(checkDraft({ ...d, command: 'node /srv/weather/build/index.js' }), {}, 'absolute: no directory needed');
  t.same(checkDraft({ ...d, command: 'srv', cwd: '~/w' }), { cwd: TILDE_PROBLEM });
  t.match(checkDraft({ ...d, command: 'srv', cwd: 'w' }), { cwd: /full path/ });
  t.same(checkDraft({ ...d, command: 'srv ~/docs', cwd: '/w' }), { command: TILDE_PROBLEM });
  t.equal(leftFieldProblem('cwd', '~/x'), TILDE_PROBLEM, 'said when the field is left');
  t.equal(leftFieldProblem('command', 'srv ~/x'), TILDE_PROBLEM);
  t.equal(leftFieldProblem('cwd', ''), '');

  t.equal(inDir('/srv/w', './bin/srv'), '/srv/w/bin/srv', 'a relative program is taken from the working directory');
  t.equal(inDir('/srv/w', '../x/srv'), '/srv/x/srv');
  t.equal(inDir('/srv/w', 'node'), 'node', 'a bare name is looked up on PATH');
  t.equal(inDir('', './srv'), './srv', 'no directory: as typed');
  t.same(putBody({ ...d, command: './srv', cwd: '/w/' }, { command: './srv', args: [] }), { command: '/w/srv', args: [], cwd: '/w/' });
});

t.test("a field's problem goes when that field changes, and only then", async (t) => {
  const d = {
    ...emptyDraft(),
    transport: 'stdio' as const,
    command: 'node build/index.js',
    name: '',
    env: [envRow({ key: '1X', value: 'v' })],
  };
  const problems = checkDraft(d);
  const key = `env-${d.env[0]!.id}-key`;
  t.same(Object.keys(problems).sort(), ['cwd', 'name', key].sort());
  t.same(Object.keys(problemsAfter(problems, d, { ...d, cwd: '/w' })).sort(), ['name', key].sort(), 'the working directory typed');
  t.same(
    Object.keys(problemsAfter(problems, d, { ...d, command: 'node /w/index.js' })).sort(),
    ['name', key].sort(),
    "the command changed: the working directory's problem was about it",
  );
  t.same(Object.keys(problemsAfter(problems, d, { ...d, name: 'w' })).sort(), ['cwd', key].sort());
  t.same(Object.keys(problemsAfter(problems, d, { ...d, env: [{ ...d.env[0]!, key: 'X' }] })).sort(), ['cwd', 'name']);
  t.same(problemsAfter(problems, d, { ...d, env: [] }), { cwd: problems.cwd, name: problems.name }, 'a row removed takes its problems');
  t.same(problemsAfter(problems, d, { ...d }), problems, 'nothing changed: all stay');
  t.same(problemsAfter(problems, d, { ...d, transport: 'http' }), {}, 'the other transport: none');
});
