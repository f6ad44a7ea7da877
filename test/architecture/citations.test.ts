// Every document the code and the docs cite is in the repository: a clone
// must be able to follow each pointer. The design notes outside it (the
// shared DESIGN.md, HOST.md and the seed documents, reached as ../shared)
// are not in a clone, so no source or doc file may name them; what the code
// relies on is in docs/design.md, and a citation of it must name one of its
// sections ("docs/design.md, "Sign-in"" or a link to design.md#sign-in).
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers.ts';
import { projectFiles } from './tracked.ts';

const SELF = 'test/architecture/citations.test.ts';
/** Source and doc files: everything a reader of the repository reads. */
const EXTS = ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.md', '.html', '.css', '.json', '.c', '.py', '.sh'];

/** Names of documents outside the repository, each with why it is refused. */
const OUTSIDE: Array<[RegExp, string]> = [
  [/\b(?:DESIGN|HOST|STYLE)\.md\b/g, 'a design note outside the repository'],
  // "seed 000", "Seed 002", "seed\n// 000" (a comment wrapped between the two words).
  [/\bseeds?(?:[\s*/#]|\bno\.?)*\d{3}\b/gi, 'a seed document'],
  [/\bseeds\//gi, 'the seed documents folder'],
  [/\b\d{3}_[0-9a-f]{16}\.txt\b/gi, 'a seed document'],
  [/\bthe seed(?:'s)?\b(?!\s+(?:of|for|value|number)\b)/gi, 'a seed document'],
];

/**
 * Where a text names a document outside the repository: one line per place
 * (`line N: what`). A `../shared` path counts unless it leads to a file of
 * the repository (web/app's imports of web/shared/ do).
 */
export function citationsIn(file: string, text: string): string[] {
  const found: string[] = [];
  const lineOf = (i: number): number => text.slice(0, i).split('\n').length;
  for (const [re, what] of OUTSIDE) {
    for (const m of text.matchAll(re)) found.push(`line ${lineOf(m.index)}: ${JSON.stringify(m[0])}, ${what}`);
  }
  for (const m of text.matchAll(/(?:\.\.\/)+shared\b[\w./-]*/g)) {
    const target = path.resolve(ROOT, path.dirname(file), m[0]);
    const inside = target.startsWith(ROOT) && existsSync(target);
    if (!inside) found.push(`line ${lineOf(m.index)}: ${JSON.stringify(m[0])}, a path outside the repository`);
  }
  return found.sort();
}

/** The section names of a markdown document: its headings, and each heading's anchor as GitHub makes it. */
function sectionsOf(markdown: string): { titles: Set<string>; anchors: Set<string> } {
  const titles = new Set<string>();
  const anchors = new Set<string>();
  for (const m of markdown.matchAll(/^#{1,6}\s+(.+?)\s*$/gm)) {
    const title = m[1]!.replace(/`/g, '');
    titles.add(title);
    anchors.add(
      title
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    );
  }
  return { titles, anchors };
}

/**
 * The places where `text` cites docs/design.md and names no section of it:
 * a code comment's `docs/design.md, "Title"` (or `docs/design.md ("Title")`),
 * a comment wrapped inside the title included, and a markdown link to
 * `design.md#anchor`.
 */
export function unknownSections(text: string, design: string): string[] {
  const { titles, anchors } = sectionsOf(design);
  const bad: string[] = [];
  // A title wrapped over comment lines reads as one line.
  const flat = text.replace(/\s*\n\s*(?:\*(?!\/)|\/\/)?\s*/g, ' ');
  for (const m of flat.matchAll(/docs\/design\.md(?:,|\s*\()\s*"([^"]+)"/g)) if (!titles.has(m[1]!)) bad.push(`"${m[1]}"`);
  for (const m of text.matchAll(/\]\((?:\.\/|docs\/)?design\.md#([^)\s]+)\)/g)) if (!anchors.has(m[1]!)) bad.push(`#${m[1]}`);
  return bad;
}

t.test('no source or doc file names a document outside the repository', async (t) => {
  const files = projectFiles(EXTS).filter((f) => f !== SELF && f !== 'package-lock.json');
  t.ok(files.length > 200, `${files.length} files read`);
  const found: string[] = [];
  for (const f of files) for (const c of citationsIn(f, readFileSync(path.join(ROOT, f), 'utf8'))) found.push(`${f} ${c}`);
  t.same(found, [], 'each pointer leads to a file of the repository (what the code relies on is in docs/design.md)');
});

t.test('every citation of docs/design.md names one of its sections', async (t) => {
  const design = readFileSync(path.join(ROOT, 'docs', 'design.md'), 'utf8');
  const files = projectFiles(EXTS).filter((f) => f !== SELF);
  const bad: string[] = [];
  let cited = 0;
  for (const f of files) {
    const text = readFileSync(path.join(ROOT, f), 'utf8');
    if (!text.includes('design.md')) continue;
    cited++;
    for (const b of unknownSections(text, design)) bad.push(`${f}: ${b}`);
  }
  t.ok(cited > 20, `${cited} files cite docs/design.md`);
  t.same(bad, [], 'no citation names a section docs/design.md does not have');
});

t.test('the checks catch what they are for (self-test)', async (t) => {
  const refused = [
    '// as DESIGN.md asks',
    ' * (HOST.md "A session, step by step")',
    '/** (seed 000 "Saved catalogues") */',
    '// issue 12; seed\n// 000 "Sign in with OAuth"',
    "Modern by the seed's rule",
    'seed 002: ten minutes',
    'see ../shared/seeds/README.md',
    'read 002_06dc95e34e51af02.txt',
    'the living successor of `../shared/DESIGN.md`',
  ];
  for (const text of refused) t.not(citationsIn('docs/x.md', text).length, 0, `refused: ${JSON.stringify(text)}`);
  const kept = [
    "import { toolsLabel } from '../shared/labels.js';",
    '(docs/design.md, "Saved catalogues")',
    'fc.sample(identity, { numRuns: 200, seed: 42 })',
    'Deterministic for a seed.',
    'const seed = await createAlbedo({ home });',
    'web/shared/labels.js',
  ];
  for (const text of kept) t.same(citationsIn('web/app/tools.js', text), [], `kept: ${JSON.stringify(text)}`);

  const design = '# D\n\n## Sign-in\n\n### A session, step by step\n';
  t.same(unknownSections('(docs/design.md, "Sign-in") and [x](design.md#a-session-step-by-step)', design), []);
  t.same(unknownSections(' * (docs/design.md, "A session,\n * step by step")', design), [], 'a title wrapped in a comment');
  t.same(unknownSections('(docs/design.md, "Sign in with OAuth") [y](design.md#saved-catalogues)', design), [
    '"Sign in with OAuth"',
    '#saved-catalogues',
  ]);
});
