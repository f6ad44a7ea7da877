// No line of code, markup or styles is wider than the formatter's width
// (.prettierrc.json, printWidth 140). Prettier wraps code but not comments,
// long strings or regular expressions: those are wrapped by hand, and this
// keeps them so. A line may overflow only by what cannot be wrapped: a URL,
// or a row of a markdown table (in a comment).
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers.ts';
import { projectFiles } from './tracked.ts';

const WIDTH: number = JSON.parse(readFileSync(path.join(ROOT, '.prettierrc.json'), 'utf8')).printWidth;
const EXTS = ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.css', '.html', '.py'];
const URL = /\b(?:https?|file):\/\/[^\s'"`)<>\]]+/g;

/** Characters as a reader counts them (a code point is one, as in an editor's column). */
const widthOf = (line: string): number => [...line].length;

/** Whether a line's overflow is a URL (the line fits with each URL counted as one character) or it is a markdown table row. */
function excused(line: string): boolean {
  const body = line.trim().replace(/^(?:\*|\/\/)\s*/, '');
  if (body.startsWith('|') && body.endsWith('|')) return true;
  return widthOf(line.replace(URL, 'U')) <= WIDTH;
}

/** The lines of `text` wider than the width and not excused, as `line N (W)`. */
export function overLong(text: string): string[] {
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    const w = widthOf(line.replace(/\r$/, ''));
    if (w > WIDTH && !excused(line)) out.push(`line ${i + 1} (${w})`);
  });
  return out;
}

t.test(`no line of code, markup or styles is over ${WIDTH} characters`, async (t) => {
  t.equal(WIDTH, 140, "the formatter's width");
  const files = projectFiles(EXTS);
  t.ok(files.length > 200, `${files.length} files read`);
  const found: string[] = [];
  for (const f of files) for (const l of overLong(readFileSync(path.join(ROOT, f), 'utf8'))) found.push(`${f} ${l}`);
  t.same(found, [], 'comments and strings wrapped by hand where the formatter does not');
});

t.test('the check catches an over-long line, and only that (self-test)', async (t) => {
  const at = (n: number, c = 'x'): string => c.repeat(n);
  const over = (line: string): string[] => [`line 1 (${[...line].length})`];
  t.same(overLong(`// ${at(WIDTH - 3)}`), [], 'exactly the width');
  t.same(overLong(`ok\n// ${at(WIDTH - 2)}`), [`line 2 (${WIDTH + 1})`], 'one character over');
  const str = `  const why = \`${at(WIDTH)}\`;`;
  t.same(overLong(str), over(str), 'a long string');
  const re = `const re = /${at(WIDTH)}/;`;
  t.same(overLong(re), over(re), 'a long regular expression');
  t.same(overLong(`// ${'—'.repeat(WIDTH - 3)}`), [], 'a character outside ASCII counts once');
  t.same(overLong(` * see https://example.com/${at(WIDTH)}`), [], 'a URL');
  const beyond = `// ${at(WIDTH - 20)} https://example.com/${at(60)} ${at(30)}`;
  t.same(overLong(beyond), over(beyond), 'text beyond a URL');
  t.same(overLong(` * | claude | ${at(WIDTH)} | mcpServers |`), [], 'a markdown table row');
});
