// The redactor cannot be cut around (protocol/redact.ts): for any secrets
// placed whole in any text, any window kept (head or tail, any length) and
// any cut made before the text reached us, no fragment of a secret survives.
// Secrets are drawn from one alphabet and the text around them from
// another, so a secret's character in the output can only be a leak.
import t from 'tap';
import fc from 'fast-check';
import { MIN_SECRET_LENGTH, REDACTED, Redactor, redact, redactThenCut, secretValues } from '../../protocol/redact.ts';
import { WarnLimiter } from '../../services/transport/warn-limiter.ts';

const SECRET_CHARS = [...'abcdefghijklmnopqrstuvwxyz0123456789-_"\\/&<>+'];
const FILLER_CHARS = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZ .:'];

const secretArb = fc.string({ unit: fc.constantFrom(...SECRET_CHARS), minLength: MIN_SECRET_LENGTH, maxLength: 40 });
const fillerArb = fc.string({ unit: fc.constantFrom(...FILLER_CHARS), maxLength: 60 });

const u4 = (s: string, upper: boolean): string =>
  [...s]
    .map((c) => {
      const h = c.charCodeAt(0).toString(16).padStart(4, '0');
      return `\\u${upper ? h.toUpperCase() : h}`;
    })
    .join('');
const html = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const jsonOf = (s: string): string => JSON.stringify(s).slice(1, -1);
/** How a server may have encoded a secret it prints (the forms protocol/redact-forms.ts lists). */
const ENCODINGS = {
  none: (s: string) => s,
  uri: (s: string) => encodeURIComponent(s),
  uriLower: (s: string) => encodeURIComponent(s).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
  form: (s: string) => new URLSearchParams([['', s]]).toString().slice(1),
  php: (s: string) => jsonOf(s).replace(/\//g, '\\/'),
  go: (s: string) => jsonOf(s).replace(/&/g, '\\u0026').replace(/</g, '\\u003c').replace(/>/g, '\\u003e'),
  html,
  unicode: (s: string) => u4(s, false),
  unicodeUpper: (s: string) => u4(s, true),
};

/** Secrets, and a text of filler and whole secrets in any order (side by side, repeated). */
const caseArb = fc.array(secretArb, { minLength: 1, maxLength: 3 }).chain((secrets) =>
  fc.record({
    secrets: fc.constant(secrets),
    pieces: fc.array(fc.oneof(fillerArb, fc.constantFrom(...secrets)), { minLength: 1, maxLength: 12 }),
    keep: fc.constantFrom('head' as const, 'tail' as const),
    max: fc.nat({ max: 400 }),
    // Where a cut made before us (the stderr window, a capped body) fell, as a share of the text; 1 for none.
    preCut: fc.oneof(fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true })),
    json: fc.boolean(),
    encoding: fc.constantFrom(...(Object.keys(ENCODINGS) as (keyof typeof ENCODINGS)[])),
  }),
);

/** The output with each [redacted] replaced by a character in neither alphabet. */
const shown = (out: string): string => out.split(REDACTED).join('\u0000');

/**
 * The bound: no substring of a secret as long as `bound` survives. Raw text
 * gets 1 (no character of a secret at all); text printed as JSON gets 2,
 * since the quotes JSON puts around it are the secrets' alphabet too.
 */
function leaks(out: string, secrets: string[], bound: number): string | undefined {
  const text = shown(out);
  for (const s of secrets) {
    for (const form of [s, JSON.stringify(s).slice(1, -1)]) {
      for (let i = 0; i + bound <= form.length; i++) {
        const piece = form.slice(i, i + bound);
        if (text.includes(piece)) return piece;
      }
    }
  }
  return undefined;
}

t.test('no fragment of a secret survives any cut', async (t) => {
  fc.assert(
    fc.property(caseArb, (c) => {
      const encode = ENCODINGS[c.encoding];
      let text = c.pieces.map((p) => (c.secrets.includes(p) ? encode(p) : p)).join('');
      if (c.json && c.encoding === 'none') text = JSON.stringify(text);
      let cut = false;
      if (c.preCut < 1) {
        // Cut before it reached us, on the far side of what is kept.
        const at = Math.floor(c.preCut * text.length);
        text = c.keep === 'head' ? text.slice(0, at) : text.slice(at);
        cut = true;
      }
      const out = redactThenCut(text, c.secrets, { keep: c.keep, max: c.max, cut });
      // An encoded secret is looked for as encoded, four characters at a time (its escapes share the filler's letters).
      const piece = c.encoding === 'none' ? leaks(out, c.secrets, c.json ? 2 : 1) : leaks(out, c.secrets.map(encode), 4);
      if (piece !== undefined) throw new Error(`${JSON.stringify(piece)} survived in ${JSON.stringify(out)}`);
      // Never longer than asked; a [redacted] is never split.
      if (out.length > c.max) throw new Error(`${out.length} characters kept of ${c.max}`);
      if (/\[reda(?!cted\])|(?<!\[)redacted\]/.test(out.replace(/\[redacted\]/g, ''))) throw new Error(`a split marker in ${out}`);
    }),
    { numRuns: 3000 },
  );
});

t.test('redact: overlapping and side-by-side secrets are one span; JSON-escaped and white-space-folded forms too', async (t) => {
  t.equal(redact('x abcdefghij y', ['abcdef', 'defghij']), 'x [redacted] y', 'overlap: no tail of the second left');
  t.equal(redact('abcdwxyz', ['abcd', 'wxyz']), '[redacted]', 'side by side');
  t.equal(redact(JSON.stringify('k="sk\\1"'), ['sk\\1"x', 'k="sk\\1"']), '"[redacted]"', 'as JSON prints it');
  t.equal(redact('key: -----BEGIN KEY----- abc -----END', ['-----BEGIN KEY-----\nabc']), 'key: [redacted] -----END', 'folded');
  t.equal(redact('on 1 abc', ['on', '1', 'abc']), 'on 1 abc', 'shorter than the minimum: left');
});

t.test('redactThenCut: what is kept, at each end', async (t) => {
  const s = 'sk-live-0123456789';
  t.equal(redactThenCut(`AAAA ${s} BBBB`, [s], { keep: 'head', max: 100 }), 'AAAA [redacted] BBBB', 'nothing to cut');
  t.equal(redactThenCut(`AAAA ${s} BBBB`, [s], { keep: 'head', max: 12 }), 'AAAA ', 'the marker is not split; it is left out');
  t.equal(
    redactThenCut(`${s.slice(7)} tail`, [s], { keep: 'tail', max: 100, cut: true }),
    ' tail',
    'the end of a secret the earlier cut broke is dropped',
  );
  t.equal(redactThenCut(`head ${s.slice(0, 5)}`, [s], { keep: 'head', max: 100, cut: true }), 'head ', 'its start, at a head');
  t.equal(
    redactThenCut(`x${'A'.repeat(300)}${s}`, [s], { keep: 'tail', max: 15 }),
    `AAAAA${REDACTED}`,
    'a long text: only the kept end is searched',
  );
});

t.test("secretValues: the credential after any scheme; Basic's user:pass and password", async (t) => {
  const basic = `Basic ${Buffer.from('alice:hunter2pass').toString('base64')}`;
  const server = { type: 'http', url: 'https://x/', headers: { Authorization: basic, 'X-Api-Key': 'Token abcdEFGH1234' } } as never;
  const values = secretValues(server);
  for (const v of ['alice:hunter2pass', 'hunter2pass', 'abcdEFGH1234', Buffer.from('alice:hunter2pass').toString('base64')]) {
    t.ok(values.includes(v), v);
  }
  t.equal(
    redact('auth failed for alice, password hunter2pass; invalid token abcdEFGH1234', values),
    'auth failed for alice, password [redacted]; invalid token [redacted]',
  );
});

t.test('Redactor: live values added; error data walked (keys too), bounded', async (t) => {
  const r = new Redactor(['configured-1']);
  t.equal(r.redact('a tok-abcdef b'), 'a tok-abcdef b');
  r.add(['tok-abcdef', undefined]);
  t.equal(r.redact('a tok-abcdef b configured-1'), 'a [redacted] b [redacted]');
  const deep: Record<string, unknown> = { 'tok-abcdef': ['x tok-abcdef', { y: encodeURIComponent('configured-1') }], n: 1 };
  t.same(r.data(deep), { '[redacted]': ['x [redacted]', { y: '[redacted]' }], n: 1 });
  let nested: unknown = 'tok-abcdef';
  for (let i = 0; i < 500; i++) nested = [nested];
  t.notOk(JSON.stringify(r.data(nested)).includes('tok-abcdef'), 'too deep: replaced, not shown');
});

t.test('redact: a form that overlaps itself many times is one span', async (t) => {
  t.equal(redact(`x${'a'.repeat(200_000)}y`, ['aaaa']), `x${REDACTED}y`);
  t.equal(redact('ababababab', ['abab']), REDACTED, 'self-overlapping matches merge');
});

t.test('WarnLimiter: a message given as a function is made only when it is shown', async (t) => {
  const w = new WarnLimiter(() => 0);
  let made = 0;
  const notes = Array.from({ length: 10 }, () =>
    w.admit(() => {
      made++;
      return 'm';
    }),
  );
  t.equal(notes.filter(Boolean).length, made, 'only the warnings shown were quoted');
  t.ok(made < 10);
});
