// Result budgets (issue 13, item 2) through the embedding API over a real
// SDK server (test/fixtures/results-server.ts) and server-filesystem: a
// result over its budget is cut at a clean boundary with a note, the rest is
// kept and read back page by page through mcp_read_result to the last byte;
// images over the budget become a note (and a 50 MB one, over the 16 MiB
// frame cap, a clear error); structured content over the budget is replaced
// by a summary; an error's first message is never cut; budgets come from the
// session, the server's settings and the tool's own _meta hint.
import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AlbedoSession } from '../../api/sessions.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { ROOT, albedoFor, fixture, newTag, rejection } from '../helpers.ts';
import { sessionHome } from '../fixtures/session-home.ts';
import { bigStructure, bigText } from '../fixtures/results-data.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

type Result = { content: Array<Record<string, any>>; structuredContent?: unknown; isError?: boolean; _meta?: Record<string, any> };
type Cut = { id: string; what: string; shown: number; total: number; mimeType?: string; bytes?: number };

const cutsOf = (r: Result): Cut[] => r._meta?.['albedo/cut'] ?? [];

/** Reads a kept part from `from` to its end through the model's tool, page by page; returns the pages joined and how many there were. */
async function readAll(s: AlbedoSession, id: string, from: number): Promise<{ text: string; pages: number }> {
  let offset: number | null = from;
  const parts: string[] = [];
  let pages = 0;
  while (offset !== null) {
    const r = (await s.call('mcp_read_result', { id, offset })) as Result;
    parts.push(r.content[0]!.text);
    offset = (r.structuredContent as { next: number | null }).next;
    pages++;
  }
  return { text: parts.join(''), pages };
}

async function setup(t: Test, extra: Record<string, unknown> = {}) {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({
    results: { ...h.stdio(fixture('results-server.ts')), ...extra },
    filesystem: h.stdio(path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js'), [h.dir]),
  });
  return { albedo: await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 }), dir: h.dir };
}

t.test('a large text result: cut cleanly, noted, and read back whole', async (t) => {
  const { albedo, dir } = await setup(t);
  const s = await albedo.sessions.open();
  t.equal(s.tools().at(-1)!.name, 'mcp_read_result', 'every session advertises mcp_read_result');

  const small = (await s.call('results/text', { chars: 1_000 })) as Result;
  t.same(small.content, [{ type: 'text', text: bigText(1_000) }], 'a result within the budget is untouched');
  t.same(cutsOf(small), []);

  // About the largest text the 16 MiB frame carries (JSON escapes and multi-byte characters take the rest).
  const original = bigText(Math.floor(15.2 * 1024 * 1024));
  const r = (await s.call('results/text', { chars: original.length })) as Result;
  const [cut] = cutsOf(r);
  t.match(cut, { what: 'text', total: original.length }, 'the cut is in _meta');
  const shown = r.content[0]!.text as string;
  t.ok(
    shown.length <= 100_000 && shown.length >= 80_000,
    `about the default budget (25,000 tokens ≈ 100,000 characters) shown: ${shown.length}`,
  );
  t.ok(shown.endsWith('\n') || shown.endsWith(' '), 'cut at a line break or a space');
  t.equal(shown, original.slice(0, shown.length), 'the shown part is the start of the original');
  t.equal(cut!.shown, shown.length);
  t.match(r.content[1], { type: 'text', text: new RegExp(`${cut!.id}.*offset ${shown.length}`) }, 'a note says what to read next');
  const rest = await readAll(s, cut!.id, cut!.shown);
  t.equal(shown + rest.text, original, `read back to the last byte in ${rest.pages} pages`);
  t.ok(rest.pages > 100, 'page by page');

  const page = s.readResult(cut!.id, 10, 5_000);
  t.equal(page.data, original.slice(10, 10 + page.data.length), 'the API reads any offset');
  t.ok(page.data.length <= 5_000 && page.next === 10 + page.data.length);
  t.match(await rejection(s.call('mcp_read_result', { id: 'r-nothing', offset: 0 })), { code: 'ALBEDO_NOT_FOUND', outcome: 'not_run' });
  t.match(await rejection(s.call('mcp_read_result', { id: cut!.id, offset: original.length + 1 })), { code: 'ALBEDO_INVALID_ARGUMENT' });
  t.match(await rejection(s.call('mcp_read_result', { offset: 0 })), { code: 'ALBEDO_INVALID_ARGUMENT' });

  // Two text blocks: the first fills the budget, the second is kept whole and named.
  const two = (await s.call('results/two_texts', { a: 90_000, b: 50_000 })) as Result;
  const cuts = cutsOf(two);
  t.equal(cuts.length, 1);
  t.equal(two.content[0]!.text, bigText(90_000), 'the first block fits whole');
  t.equal(two.content[1]!.text, bigText(50_000).toUpperCase().slice(0, cuts[0]!.shown), 'the second is cut where the budget ends');
  t.equal(two.content[1]!.text + (await readAll(s, cuts[0]!.id, cuts[0]!.shown)).text, bigText(50_000).toUpperCase());

  // A real server reading a real file: server-filesystem sends the text twice (content and structuredContent); both are cut.
  const file = bigText(3 * 1024 * 1024);
  writeFileSync(path.join(dir, 'big.txt'), file);
  const fs = (await s.call('filesystem/read_text_file', { path: path.join(dir, 'big.txt') })) as Result;
  t.same(
    cutsOf(fs).map((c) => c.what),
    ['text', 'structuredContent'],
  );
  t.equal(fs.content[0]!.text + (await readAll(s, cutsOf(fs)[0]!.id, cutsOf(fs)[0]!.shown)).text, file, 'the file reads back whole');
  t.same(JSON.parse((await readAll(s, cutsOf(fs)[1]!.id, 0)).text), { content: file }, 'and so does its structured copy');

  await s.close();
  t.throws(() => s.readResult(cut!.id), { code: 'ALBEDO_CLOSED' }, 'kept parts go with the session');
});

t.test('images, structured content, errors', async (t) => {
  const { albedo } = await setup(t);
  const s = await albedo.sessions.open();
  const img = (await s.call('results/image', { bytes: 1_000_000 })) as Result;
  const [ic] = cutsOf(img);
  t.match(ic, { what: 'image', mimeType: 'image/png', shown: 0 }, 'an image over the budget is kept');
  t.equal(img.content.length, 1);
  t.match(
    img.content[0],
    { type: 'text', text: /image \(image\/png\) of 976\.6 KiB/ },
    'and replaced by a note with its type and size (decoded)',
  );
  t.equal(ic!.bytes, 1_000_000);
  const data = (await readAll(s, ic!.id, 0)).text;
  t.ok(
    Buffer.from(data, 'base64').equals(Buffer.from(Array.from({ length: 1_000_000 }, (_, i) => (i * 31 + 7) & 0xff))),
    'its bytes read back',
  );
  const tiny = (await s.call('results/image', { bytes: 1_000 })) as Result;
  t.match(tiny.content[0], { type: 'image', mimeType: 'image/png' }, 'a small image stays');

  const huge = await rejection(s.call('results/image', { bytes: 50 * 1024 * 1024 }, { timeoutMs: 120_000 }));
  t.match(huge, { code: 'ALBEDO_FRAME_TOO_LARGE' }, '50 MB is over the 16 MiB frame cap: a clear error');
  t.match(await s.call('results/text', { chars: 10 }), { content: [{ text: bigText(10) }] }, 'and the session goes on');

  const st = (await s.call('results/structured', { kb: 200 })) as Result;
  t.equal(st.structuredContent, undefined, 'structured content over the budget is not in the result');
  const [sc] = cutsOf(st);
  t.match(sc, { what: 'structuredContent', mimeType: 'application/json' });
  t.match(st.content.at(-1), { type: 'text', text: /object with 2 keys \("rows", "total"/ }, 'a summary says what it was');
  t.same(JSON.parse((await readAll(s, sc!.id, 0)).text), bigStructure(200), 'and it reads back equal');
  const fits = (await s.call('results/structured', { kb: 10 })) as Result;
  t.same(fits.structuredContent, bigStructure(10), 'structured content that fits is kept whole');

  const err = (await s.call('results/error', { chars: 150_000 })) as Result;
  t.equal(err.isError, true);
  t.equal(err.content[0]!.text, bigText(150_000), "an error's first message is never cut");
  t.equal(cutsOf(err).length, 1, 'the rest is');
});

t.test("budgets: the session, the server, the tool's hint", async (t) => {
  const { albedo } = await setup(t);
  const tight = await albedo.sessions.open({ resultBudget: 1_000 });
  const r = (await tight.call('results/text', { chars: 20_000 })) as Result;
  t.ok(
    r.content[0]!.text.length <= 4_000 && r.content[0]!.text.length > 3_000,
    `session budget 1,000 tokens: ${r.content[0]!.text.length} characters shown`,
  );
  const hinted = (await (await albedo.sessions.open()).call('results/hinted', { chars: 20_000 })) as Result;
  t.ok(hinted.content[0]!.text.length <= 5_000 && hinted.content[0]!.text.length > 4_000, "the tool's maxResultSizeChars hint: 5,000");
  t.match(await rejection(albedo.sessions.open({ resultBudget: 10 })), { code: 'ALBEDO_INVALID_ARGUMENT' });
});

t.test("a server's own resultBudget", async (t) => {
  const { albedo } = await setup(t, { resultBudget: 500 });
  const s = await albedo.sessions.open({ resultBudget: 100_000 });
  const r = (await s.call('results/text', { chars: 20_000 })) as Result;
  t.ok(r.content[0]!.text.length <= 2_000, `the server says 500 tokens: ${r.content[0]!.text.length} characters shown`);
  const other = (await s.call('filesystem/list_allowed_directories', {})) as Result;
  t.same(cutsOf(other), [], "other servers keep the session's budget");
});

t.test('many small blocks: one cut, one part for the rest, never a note per block', async (t) => {
  const { albedo } = await setup(t);
  const s = await albedo.sessions.open({ resultBudget: 1_000 });
  const r = (await s.call('results/blocks', { n: 20_000, chars: 5 })) as Result;
  const text = r.content.map((b) => JSON.stringify(b)).join('');
  t.ok(text.length < 4_000 + 1_000, `what reaches the context stays within the budget and its notes: ${text.length} characters`);
  const cuts = cutsOf(r);
  t.ok(cuts.length <= 2, `${cuts.length} cuts`);
  const rest = cuts.at(-1)!;
  t.match(rest, { what: /^\d+ more content blocks$/, mimeType: 'application/json' });
  const kept = JSON.parse((await readAll(s, rest.id, 0)).text) as Array<{ text: string }>;
  const shownBlocks = r.content.filter((b) => !/^\[Albedo:/.test(b.text));
  const cutBlock = cuts.length === 2 ? [(await readAll(s, cuts[0]!.id, 0)).text] : [];
  const all = [
    ...shownBlocks.slice(0, shownBlocks.length - (cuts.length === 2 && cuts[0]!.shown > 0 ? 1 : 0)).map((b) => b.text),
    ...cutBlock,
    ...kept.map((b) => b.text),
  ];
  t.same(
    all,
    Array.from({ length: 20_000 }, (_, i) => bigText(5 + (i % 3))),
    'every block is there, in order, shown or kept',
  );
});

t.test("prompts are budgeted too; the server's budget wins over a tool's hint; pages follow the cut's budget", async (t) => {
  const { albedo } = await setup(t, { resultBudget: 500 });
  const s = await albedo.sessions.open();
  const p = (await s.call(s.allTools().find((x) => /get_prompt/.test(x.name) && x.description.includes('"results"'))!.name, {
    name: 'long',
    arguments: { chars: '50000' },
  })) as any;
  const cut = cutsOf(p)[0]!;
  t.match(cut, { what: 'text', total: 50_000 });
  t.ok(p.messages[0].content.text.length <= 2_000, 'the prompt message is cut');
  t.match(p.messages.at(-1), { role: 'user', content: { type: 'text', text: new RegExp(cut.id) } }, 'with a note');
  t.equal(p.messages[0].content.text + (await readAll(s, cut.id, cut.shown)).text, bigText(50_000));

  const hinted = (await s.call('results/hinted', { chars: 20_000 })) as Result;
  t.ok(
    hinted.content[0]!.text.length <= 2_000,
    `the user's 500 tokens beat the tool's 5,000-character hint: ${hinted.content[0]!.text.length}`,
  );
  const hc = cutsOf(hinted)[0]!;
  const page = (await s.call('mcp_read_result', { id: hc.id, offset: hc.shown })) as Result;
  t.ok(page.content[0]!.text.length <= 2_000, `a page is the cut's budget, not the session's: ${page.content[0]!.text.length}`);
  t.throws(() => s.readResult(hc.id, 0, Number.NaN), { code: 'ALBEDO_INVALID_ARGUMENT' });
  t.throws(() => s.readResult(hc.id, 0, 1.5), { code: 'ALBEDO_INVALID_ARGUMENT' });
});
