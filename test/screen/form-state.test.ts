// The /mcp form's pure parts (bin/screen/form-state.ts, form-body.ts,
// text-input.ts): what each field shows (a secret masked, one • per
// character), the request a save sends (a new server's PUT body with its
// secrets; an edit's merge patch: blank keeps, `-` removes, `KEY=-` one env
// entry), the working directory (the screen's own, shown and editable; a
// `~` flagged when the field is left), the same field order for a new and
// an edited server, problems found before anything is sent — which never
// quote what was typed into an env field — and the line editor's keys.
import t from 'tap';
import { splitCommandLine } from '../../protocol/command-line.ts';
import type { Server } from '../../bin/screen/api.ts';
import { buildSave } from '../../bin/screen/form-body.ts';
import {
  editForm,
  fieldOfPath,
  fieldsOf,
  moveFocus,
  newForm,
  rowsOf,
  setText,
  shellWord,
  shownText,
  switchTransport,
  type FormState,
  type TextField,
} from '../../bin/screen/form-state.ts';
import { TILDE_PROBLEM } from '../../web/shared/labels.js';
import { editText, keyOf, splitKeys, textAt, view } from '../../bin/screen/text-input.ts';

const fill = (f: FormState, values: Partial<Record<TextField, string>>): FormState =>
  Object.entries(values).reduce((s, [k, v]) => setText(s, k as TextField, textAt(v)), f);

/** The body of a built request (a problem or no change fails the test). */
function bodyOf(r: ReturnType<typeof buildSave>): unknown {
  if (!('request' in r)) throw new Error(`no request: ${JSON.stringify(r)}`);
  return r.request.body;
}

const server = (config: Record<string, unknown>, secrets: Partial<Server['secrets']> = {}): Server => ({
  name: 'srv',
  enabled: true,
  config,
  secrets: { bearer: false, header: null, env: [], oauth_client: false, ...secrets },
  tools: null,
  description: '',
  lastError: null,
  state: 'configured',
  auth: null,
});

t.test('secrets are masked one • per character; the rest (the env field too) shows as typed', async (t) => {
  t.equal(shownText('bearer', 'tok 123'), '•••••••');
  t.equal(shownText('header', 'X-Key:  v a l'), 'X-Key:  •••••', 'the header name and the spaces after the colon show');
  t.equal(shownText('header', 'X-Ke'), 'X-Ke', 'no colon yet: only a name');
  t.equal(shownText('secretEnv', `A=x B="s p" C='q' D=a\\ b`), `A=• B=••••• C=••• D=••••`, 'each value up to its unquoted space');
  t.equal(shownText('secretEnv', 'A=x=y'), 'A=•••', 'an = in the value is the value');
  t.equal(shownText('env', 'A=x B="s p"'), 'A=x B="s p"', 'the env field: values not marked secret show');
  t.equal(shownText('url', 'https://h/\u001b[2J'), 'https://h/\ufffd[2J', 'a control character is never sent to the terminal');
  for (const text of ['A="x y" B=1', "K='a\"b'", 'T: v']) {
    t.equal([...shownText('secretEnv', text)].length, [...text].length, 'one cell per character (the cursor stays in place)');
  }
});

t.test('a new http server: the url, the name, a bearer token and one header, saved together', async (t) => {
  let f = fill(newForm(), { url: 'https://mcp.notion.com/mcp', bearer: 'tok-1', header: 'X-Tenant:  acme 7 ' });
  t.equal(f.fields.name.text, 'notion', 'the suggested name');
  t.same(buildSave(f), {
    request: {
      method: 'PUT',
      name: 'notion',
      body: { url: 'https://mcp.notion.com/mcp', secrets: { bearer: 'tok-1', header: { name: 'X-Tenant', value: 'acme 7' } } },
    },
  });
  f = fill(newForm(), { url: 'https://h.example/mcp' });
  t.same(buildSave(f), { request: { method: 'PUT', name: 'h', body: { url: 'https://h.example/mcp' } } }, 'no secret: none sent');
  const bad = buildSave(fill(newForm(), { url: 'ftp://x/y', name: '', bearer: 'a b', header: 'Authorization: Bearer z' }));
  t.match(bad, { problems: { url: /http/, name: /name/, bearer: /no spaces/, header: /bearer token field/ } });
  t.match(buildSave(fill(newForm(), { url: 'x', header: 'no colon' })), { problems: { url: /not a URL/, header: /Name: value/ } });
  t.match(
    buildSave(fill(newForm(), { url: 'https://h/', bearer: '${TOKEN}', header: 'X-K: ${KEY}' })),
    { problems: { bearer: /albedo mcp edit/, header: /albedo mcp edit/ } },
    'a ${VAR} is not stored as a token: the CLI names variables',
  );
});

t.test('a new stdio server: the command split as a shell would, env entries as secrets', async (t) => {
  const f = fill(switchTransport(newForm({ cwd: '/work' })), {
    command: `./srv.js --root '/srv/my docs'`,
    env: 'TAG=t1',
    secretEnv: `API_KEY="s3 cret"`,
  });
  t.equal(f.fields.name.text, 'srv', 'the name from the program');
  t.same(
    buildSave(f),
    {
      request: {
        method: 'PUT',
        name: 'srv',
        body: {
          command: '/work/srv.js',
          args: ['--root', '/srv/my docs'],
          cwd: '/work',
          secrets: { env: { API_KEY: 's3 cret', TAG: 't1' } },
        },
      },
    },
    'a relative program is made absolute, as in a shell there; the server runs in that directory; both env fields are stored',
  );
  t.match(buildSave(fill(f, { env: 'TAG=t1 API_KEY=x' })), { problems: { secretEnv: 'API_KEY is given in both env fields' } });
  t.match(buildSave(fill(f, { cwd: '' })), { problems: { cwd: /\.\/srv\.js is a relative path/ } }, 'no directory for ./srv.js');
  t.match(buildSave(fill(f, { cwd: '', command: '/abs/srv' })), { request: { body: { command: '/abs/srv' } } }, 'none needed: no cwd sent');
  t.notOk('cwd' in (bodyOf(buildSave(fill(f, { cwd: '', command: '/abs/srv' }))) as object));
  t.match(buildSave(fill(f, { cwd: '~/w' })), { problems: { cwd: TILDE_PROBLEM } });
  t.match(buildSave(fill(f, { command: 'srv --root=~/docs' })), { problems: { command: TILDE_PROBLEM } });
  t.match(buildSave(fill(f, { command: 'srv "open' })), { problems: { command: 'unbalanced double quote: close it' } });
  t.match(buildSave(fill(f, { command: 'srv | tee' })), { problems: { command: /operator \|/ } });
});

t.test('problems in the env fields never quote what was typed there', async (t) => {
  const f = fill(switchTransport(newForm()), { command: 'srv' });
  for (const [env, want] of [
    ['K=abc$SECRETPART', /\$variable/],
    ['K=abc|SECRETPART', /an operator/],
    ['K=a SECRETPART', /entry 2 is not KEY=value/],
    ['K=a*SECRETPART', /pattern character/],
    ['K=', /K: an empty value/],
    ['K=1 K=2', /K is given twice/],
    ['K=-', /a new server has none/],
    ['K="SECRETPART', /unbalanced/],
  ] as const) {
    for (const field of ['env', 'secretEnv'] as const) {
      const r = buildSave(fill(f, { [field]: env }));
      t.match(r, { problems: { [field]: want } }, `${field}: ${env}`);
      t.notMatch(JSON.stringify(r), /SECRETPART|abc/, `${field}: ${env}: the value is not in the problem`);
    }
  }
});

t.test('an edit sends a merge patch: blank keeps, - removes, KEY=- removes one entry, a lone - all', async (t) => {
  const web = editForm(server({ type: 'http', url: 'https://h/mcp', headers: {} }, { bearer: true, header: 'X-Tenant' }), '"v1"');
  t.equal(web.focus, 'url');
  t.same(buildSave(web), { unchanged: true }, 'nothing typed: nothing to send');
  t.same(buildSave(fill(web, { bearer: '-', header: '-' })), {
    request: { method: 'PATCH', name: 'srv', etag: '"v1"', body: { secrets: { bearer: null, header: null } } },
  });
  t.same(buildSave(fill(web, { url: 'https://h/v2', header: 'X-Tenant: new' })), {
    request: {
      method: 'PATCH',
      name: 'srv',
      etag: '"v1"',
      body: { url: 'https://h/v2', secrets: { header: { name: 'X-Tenant', value: 'new' } } },
    },
  });

  const named = editForm(server({ url: 'https://h/mcp', bearerTokenEnvVar: 'TOK', headers: { 'X-Tenant': { env: 'TEN' } } }), null);
  t.match(
    buildSave(fill(named, { bearer: 'typed' })),
    { request: { body: { bearerTokenEnvVar: null, secrets: { bearer: 'typed' } } } },
    'a typed token replaces a named one',
  );
  t.match(buildSave(fill(named, { bearer: '-' })), { request: { body: { bearerTokenEnvVar: null } } });
  t.match(
    buildSave(fill(named, { header: 'x-tenant: v' })),
    { request: { body: { headers: { 'X-Tenant': null }, secrets: { header: { name: 'x-tenant' } } } } },
    'a typed header replaces a named one of that name',
  );
  t.match(buildSave(fill(named, { header: '-' })), { problems: { header: 'nothing is stored to remove' } });

  const stdio = editForm(
    server({ type: 'stdio', command: '/bin/srv', args: ['a b', "it's"], env: { NAMED: { env: 'V' } } }, { env: ['A', 'B'] }),
    '"e"',
  );
  t.equal(stdio.fields.command.text, `/bin/srv 'a b' 'it'\\''s'`, 'the command line as it would be typed');
  t.same(bodyOf(buildSave(fill(stdio, { env: 'A=- NAMED=- C=new' }))), { env: { NAMED: null }, secrets: { env: { A: null, C: 'new' } } });
  t.same(
    bodyOf(buildSave(fill(stdio, { env: ' - ' }))),
    { env: { NAMED: null }, secrets: { env: { A: null, B: null } } },
    'a lone - removes them all',
  );
  t.match(buildSave(fill(stdio, { env: 'Z=-' })), { problems: { env: 'Z=-: the server has no variable Z' } });
  t.same(
    bodyOf(buildSave(fill(stdio, { command: '/bin/srv x' }))),
    { command: '/bin/srv', args: ['x'] },
    'a changed command line replaces the vector',
  );
  t.same(
    bodyOf(buildSave(fill(stdio, { secretEnv: 'A=new' }))),
    { secrets: { env: { A: 'new' } } },
    'the secret env field: the same rules',
  );
  t.match(buildSave(fill(stdio, { env: '-', secretEnv: 'A=x' })), { problems: { env: /leave the other env field blank/ } });

  // The working directory: shown as saved; changed, it is sent; emptied, removed (the server's own empty directory).
  const placed = editForm(server({ type: 'stdio', command: '/bin/srv', args: ['.'], cwd: '/srv/w' }), null);
  t.equal(placed.fields.cwd.text, '/srv/w');
  t.same(buildSave(placed), { unchanged: true });
  t.same(bodyOf(buildSave(fill(placed, { cwd: '/srv/v' }))), { cwd: '/srv/v' });
  t.match(buildSave(fill(placed, { cwd: '' })), { problems: { cwd: /\. is a relative path/ } }, 'emptied, with "." in the command');
  t.same(
    bodyOf(buildSave(fill(placed, { cwd: '', command: '/bin/srv /data' }))),
    { cwd: null, command: '/bin/srv', args: ['/data'] },
    'emptied: removed',
  );
  const byHand = editForm(server({ type: 'stdio', command: 'node', args: ['build/index.js'] }, { env: ['A'] }), null);
  t.same(bodyOf(buildSave(fill(byHand, { secretEnv: 'A=v' }))), { secrets: { env: { A: 'v' } } }, 'what was saved is not checked again');
});

t.test('a prefilled command line reads back as the same words', async (t) => {
  for (const words of [['/bin/x', 'a b', "it's", '$HOME', '*.ts', '~/d', 'A=1', '"q"', 'back\\slash', '{a,b}', '']]) {
    t.same(splitCommandLine(words.map(shellWord).join(' ')), { words }, words.join(' | '));
  }
});

t.test('the line editor and keys that arrive together', async (t) => {
  let s = textAt('abc');
  s = editText(s, '', keyOf({ leftArrow: true }))!;
  s = editText(s, 'X', keyOf())!;
  t.same(s, { text: 'abXc', cursor: 3 });
  t.same(editText(s, '', keyOf({ backspace: true })), { text: 'abc', cursor: 2 });
  t.same(editText(s, '', keyOf({ delete: true })), { text: 'abX', cursor: 3 });
  t.same(editText(s, 'a', keyOf({ ctrl: true })), { text: 'abXc', cursor: 0 }, 'ctrl+a: to the start');
  t.equal(editText(s, '', keyOf({ return: true })), null, 'enter is not an edit');
  t.same(
    splitKeys('ab\r', keyOf()).map((k) => [k.input, k.key.return]),
    [
      ['a', false],
      ['b', false],
      ['', true],
    ],
  );
  t.same(
    splitKeys('\u0001%\u0013', keyOf()).map((k) => [k.input, k.key.ctrl]),
    [
      ['a', true],
      ['%', false],
      ['s', true],
    ],
  );
  const v = view('x'.repeat(100), 100, 20);
  t.equal(v.at, ' ', 'the cursor at the end is visible');
  t.ok(v.before.startsWith('…') && (v.before + v.at + v.after).length <= 20, 'a long text scrolls, cut with …');
  t.same(view('short', 2, 20), { before: 'sh', at: 'o', after: 'rt' });
});

t.test('a refusal names the field it is about', async (t) => {
  t.equal(fieldOfPath(['body', 'secrets', 'bearer']), 'bearer');
  t.equal(fieldOfPath(['body', 'args', 2]), 'command');
  t.equal(fieldOfPath(['params', 'name']), 'name');
  t.equal(fieldOfPath(['headers', 'if-match']), null);
});

t.test('one field order for a new server and an edited one; a ~ is flagged when its field is left', async (t) => {
  const fresh = switchTransport(newForm({ cwd: '/here' }));
  const edit = editForm(server({ type: 'stdio', command: '/bin/srv', args: [] }), null);
  t.same(rowsOf(fresh), ['transport', 'command', 'cwd', 'name', 'env', 'secretEnv']);
  t.same(rowsOf(edit), rowsOf(fresh), 'the same rows, in the same order');
  t.same(fieldsOf(edit), ['command', 'cwd', 'env', 'secretEnv'], 'the transport and the name fixed on edit');
  const http = newForm();
  const httpEdit = editForm(server({ type: 'http', url: 'https://h/mcp' }), null);
  t.same(rowsOf(httpEdit), rowsOf(http));
  t.equal(fresh.fields.cwd.text, '/here', "the screen's directory, shown");

  let f: FormState = { ...fill(fresh, { cwd: '~/w' }), focus: 'cwd' };
  t.same(f.problems, {}, 'nothing said while typing');
  f = moveFocus(f, 1);
  t.same([f.focus, f.problems.cwd], ['name', TILDE_PROBLEM], 'said when the field is left');
  f = setText(f, 'cwd', { text: '/w', cursor: 2 });
  t.same(f.problems, {}, 'gone when the field changes');
  f = moveFocus({ ...fill(f, { command: 'srv ~/d' }), focus: 'command' }, -1);
  t.equal(f.problems.command, TILDE_PROBLEM, 'the command too');

  // The suggestion: never a name taken; the folder a relative path runs in.
  const taken = switchTransport(newForm({ cwd: '/home/u/weather-server', taken: ['fetch', 'weather'] }));
  t.equal(fill(taken, { command: 'uvx mcp-server-fetch' }).fields.name.text, 'fetch-2');
  t.equal(fill(taken, { command: 'node build/index.js' }).fields.name.text, 'weather-2');
  t.equal(fill(taken, { command: 'node build/index.js', cwd: '/srv/notes' }).fields.name.text, 'notes', 'it follows the directory');
});
