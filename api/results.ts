/**
 * Result budgets (issue 13, item 2): what one call's result may put in the
 * model's context, the rest kept (api/result-store.ts) to read page by page.
 *
 * The blocks of a result — a tool result's `content`, a resource read's
 * `contents`, a prompt's `messages` — are taken in order while they fit.
 * The first one that does not is cut: text keeps its start, cut at a clean
 * boundary, and is kept whole; an image, audio or blob is replaced by a note
 * with its type and size and kept as base64. Every later block that does not
 * fit goes, together, into one more kept part (JSON), with one note at the
 * end: a result cannot multiply notes, however many blocks it has. Each
 * block counts its characters and an overhead. `structuredContent` is
 * counted on its own (a harness sends it or the text): kept whole when its
 * JSON fits, else replaced by a summary. A tool's `isError` result keeps its
 * first text block whole (within the hard cap). Nothing is dropped
 * silently: every cut is in a note and in `_meta["albedo/cut"]`.
 */
import { MAX_RESULT_HINT_CHARS } from '../protocol/composer.ts';
import { CHARS_PER_TOKEN } from '../services/catalogue/public.ts';
import { MIN_PAGE, cutAt, type Kept, type ResultPage } from './result-store.ts';

export { ResultStore, type ResultPage } from './result-store.ts';

/** What a block costs beyond its text: its JSON wrapping ({"type":"text","text":""} is 24 characters). */
const BLOCK_OVERHEAD = 24;

type Block = Record<string, unknown>;
const isObj = (v: unknown): v is Block => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface BudgetOptions {
  /** The budget, in characters. */
  chars: number;
  /** Keeps a cut part; returns its id. */
  keep: (part: Omit<Kept, 'id' | 'page'>) => string;
  /** The name of the tool that reads on (in the notes). */
  reader: string;
}

/** One cut, as `_meta["albedo/cut"]` lists it. */
export interface Cut {
  id: string;
  what: string;
  mimeType?: string;
  shown: number;
  /** Characters kept (for a blob, of its base64). */
  total: number;
  /** A blob's size in bytes. */
  bytes?: number;
}

const size = (n: number): string =>
  n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} bytes`;

/** The bytes a base64 string decodes to. */
const decoded = (b64: string): number =>
  Math.max(0, Math.floor((b64.length * 3) / 4) - (b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0));

function noteText(c: Cut, reader: string): string {
  if (c.shown > 0) {
    return (
      `[Albedo: this ${c.what} was cut at ${c.shown} of ${c.total} characters to fit the result budget. ` +
      `The rest is kept as result ${c.id}: call ${reader} with id "${c.id}" and offset ${c.shown} to read on.]`
    );
  }
  if (c.bytes !== undefined) {
    return (
      `[Albedo: a ${c.what}${c.mimeType ? ` (${c.mimeType})` : ''} of ${size(c.bytes)} was left out of the context ` +
      `(over the result budget). It is kept as result ${c.id}: ${reader} with id "${c.id}" returns it as base64, page by page.]`
    );
  }
  return (
    `[Albedo: ${c.what} (${size(c.total)} as JSON) did not fit the result budget. They are kept as result ${c.id}: ` +
    `${reader} with id "${c.id}" returns them as JSON, page by page.]`
  );
}

/** How one list of blocks is read and rebuilt (content, contents, messages). */
interface Shape {
  /** The text of a text-like block, or undefined. */
  text(b: Block): string | undefined;
  withText(b: Block, text: string): Block;
  /** A blob-like block's base64 and type, or undefined. */
  blob(b: Block): { data: string; what: string; mimeType?: string } | undefined;
  /** A block holding a note in this list's form. */
  note(text: string, b?: Block): Block;
  /** What the leftovers are called in a note. */
  rest: string;
}

const CONTENT: Shape = {
  text: (b) =>
    b.type === 'text' && typeof b.text === 'string'
      ? b.text
      : b.type === 'resource' && isObj(b.resource) && typeof b.resource.text === 'string'
        ? b.resource.text
        : undefined,
  withText: (b, text) => (b.type === 'resource' ? { ...b, resource: { ...(b.resource as Block), text } } : { ...b, text }),
  blob: (b) =>
    (b.type === 'image' || b.type === 'audio') && typeof b.data === 'string'
      ? { data: b.data, what: b.type, ...(typeof b.mimeType === 'string' ? { mimeType: b.mimeType } : {}) }
      : b.type === 'resource' && isObj(b.resource) && typeof b.resource.blob === 'string'
        ? { data: b.resource.blob, what: 'resource', ...(typeof b.resource.mimeType === 'string' ? { mimeType: b.resource.mimeType } : {}) }
        : undefined,
  note: (text) => ({ type: 'text', text }),
  rest: 'content blocks',
};

const CONTENTS: Shape = {
  text: (b) => (typeof b.text === 'string' ? b.text : undefined),
  withText: (b, text) => ({ ...b, text }),
  blob: (b) =>
    typeof b.blob === 'string'
      ? { data: b.blob, what: 'resource', ...(typeof b.mimeType === 'string' ? { mimeType: b.mimeType } : {}) }
      : undefined,
  // A resource's note keeps its uri and says it is text now (the blob's type no longer applies).
  note: (text, b) => ({ ...(b && typeof b.uri === 'string' ? { uri: b.uri } : {}), mimeType: 'text/plain', text }),
  rest: 'resource contents',
};

const MESSAGES: Shape = {
  text: (m) => (isObj(m.content) && m.content.type === 'text' && typeof m.content.text === 'string' ? m.content.text : undefined),
  withText: (m, text) => ({ ...m, content: { ...(m.content as Block), text } }),
  blob: (m) => (isObj(m.content) ? CONTENT.blob(m.content) : undefined),
  note: (text, m) => ({ role: m && typeof m.role === 'string' ? m.role : 'user', content: { type: 'text', text } }),
  rest: 'prompt messages',
};

/** What a block costs the context: its text, its base64, or its JSON; plus the overhead. */
function costOf(b: unknown, shape: Shape): number {
  if (!isObj(b)) return (JSON.stringify(b) ?? '').length + BLOCK_OVERHEAD;
  const t = shape.text(b);
  if (t !== undefined) return t.length + BLOCK_OVERHEAD;
  const blob = shape.blob(b);
  return (blob ? blob.data.length : (JSON.stringify(b) ?? '').length) + BLOCK_OVERHEAD;
}

interface Run {
  left: number;
  cuts: Cut[];
  o: BudgetOptions;
}

/** `blocks` within what is left of the budget (the caller tells from `run.cuts` whether anything was cut). */
function fitBlocks(blocks: unknown[], shape: Shape, run: Run, firstWhole: boolean): unknown[] {
  const out: unknown[] = [];
  const rest: unknown[] = [];
  let cutOne = false;
  let first = firstWhole;
  for (const b of blocks) {
    const c = costOf(b, shape);
    const text = isObj(b) ? shape.text(b) : undefined;
    // An error's first message is never cut (within the hard cap): the model must see why the tool failed.
    const whole = first && text !== undefined && text.length <= MAX_RESULT_HINT_CHARS;
    if (text !== undefined) first = false;
    if (c <= run.left || whole) {
      run.left = Math.max(0, run.left - c);
      out.push(b);
      continue;
    }
    if (cutOne || !isObj(b)) {
      rest.push(b);
      continue;
    }
    cutOne = true;
    const blob = shape.blob(b);
    if (text !== undefined) {
      const room = run.left - BLOCK_OVERHEAD;
      const end = room >= MIN_PAGE / 2 ? cutAt(text, 0, room) : 0;
      const id = run.o.keep({ kind: 'text', what: 'text', data: text, shown: end });
      const cut: Cut = { id, what: 'text', shown: end, total: text.length };
      run.cuts.push(cut);
      if (end > 0) out.push(shape.withText(b, text.slice(0, end)));
      out.push(shape.note(noteText(cut, run.o.reader), b));
    } else if (blob) {
      const id = run.o.keep({
        kind: 'base64',
        what: blob.what,
        data: blob.data,
        shown: 0,
        ...(blob.mimeType ? { mimeType: blob.mimeType } : {}),
      });
      const cut: Cut = {
        id,
        what: blob.what,
        shown: 0,
        total: blob.data.length,
        bytes: decoded(blob.data),
        ...(blob.mimeType ? { mimeType: blob.mimeType } : {}),
      };
      run.cuts.push(cut);
      out.push(shape.note(noteText(cut, run.o.reader), b));
    } else {
      rest.push(b);
      continue;
    }
    run.left = 0;
  }
  if (rest.length) {
    const json = JSON.stringify(rest);
    const what = `${rest.length} more ${shape.rest}`;
    const id = run.o.keep({ kind: 'json', what, data: json, shown: 0, mimeType: 'application/json' });
    const cut: Cut = { id, what, shown: 0, total: json.length, mimeType: 'application/json' };
    run.cuts.push(cut);
    out.push(shape.note(noteText(cut, run.o.reader)));
  }
  return out;
}

/**
 * `result` within the budget: the same object when it fits, else a copy
 * with cut parts and notes, and `_meta["albedo/cut"]` listing the cuts.
 */
export function budgetResult(result: unknown, o: BudgetOptions): unknown {
  if (!isObj(result)) return result;
  const run: Run = { left: o.chars, cuts: [], o };
  const out: Block = { ...result };
  for (const [key, shape] of [
    ['content', CONTENT],
    ['contents', CONTENTS],
    ['messages', MESSAGES],
  ] as const) {
    if (!Array.isArray(result[key])) continue;
    const before = run.cuts.length;
    const fitted = fitBlocks(result[key] as unknown[], shape, run, key === 'content' && result.isError === true);
    if (run.cuts.length > before) out[key] = fitted;
  }
  if (result.structuredContent !== undefined) {
    const json = JSON.stringify(result.structuredContent);
    if (json !== undefined && json.length > o.chars) {
      const id = o.keep({ kind: 'json', what: 'structuredContent', data: json, shown: 0, mimeType: 'application/json' });
      const cut: Cut = { id, what: 'structuredContent', shown: 0, total: json.length, mimeType: 'application/json' };
      run.cuts.push(cut);
      delete out.structuredContent;
      const text =
        `${summary(result.structuredContent)} [Albedo: it is kept as result ${id}: ` +
        `${o.reader} with id "${id}" returns it as JSON, page by page.]`;
      out.content = [...(Array.isArray(out.content) ? out.content : []), { type: 'text', text }];
    }
  }
  if (!run.cuts.length) return result;
  const meta = isObj(result._meta) ? result._meta : {};
  out._meta = { ...meta, 'albedo/cut': run.cuts };
  return out;
}

/** A line about a structured value too large to show: its shape and size (key names bounded). */
function summary(v: unknown): string {
  const json = JSON.stringify(v) ?? '';
  if (Array.isArray(v))
    return `[Albedo: the structured content, an array of ${v.length} items (${size(json.length)} as JSON), did not fit the result budget.]`;
  if (isObj(v)) {
    const keys = Object.keys(v);
    const shown = keys
      .slice(0, 20)
      .map((k) => JSON.stringify(k.length > 64 ? `${k.slice(0, 64)}…` : k))
      .join(', ');
    return (
      `[Albedo: the structured content, an object with ${keys.length} keys (${shown}${keys.length > 20 ? ', …' : ''}; ` +
      `${size(json.length)} as JSON), did not fit the result budget.]`
    );
  }
  return `[Albedo: the structured content (${size(json.length)} as JSON) did not fit the result budget.]`;
}

/** Characters for a budget in estimated tokens. */
export const charsOf = (tokens: number): number => tokens * CHARS_PER_TOKEN;

/** A page as mcp_read_result's tool result: the characters as they are, then a note of where the page sits. */
export function pageResult(p: ResultPage): { content: Array<{ type: 'text'; text: string }>; structuredContent: Record<string, unknown> } {
  const end = p.offset + p.data.length;
  const where =
    p.next === null
      ? `[Albedo: characters ${p.offset}–${end} of ${p.total} of result ${p.id}; this is the end.]`
      : `[Albedo: characters ${p.offset}–${end} of ${p.total} of result ${p.id}; ` +
        `call mcp_read_result with offset ${p.next} for the next page.]`;
  const { data: _d, ...facts } = p;
  return {
    content: [
      { type: 'text', text: p.data },
      { type: 'text', text: where },
    ],
    structuredContent: { ...facts, end },
  };
}
