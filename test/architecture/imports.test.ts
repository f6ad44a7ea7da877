// Imports point one way: platform ← protocol ← kernel ← services ← api ← daemon ← bin.
// Every relative import of every source file is checked against that order,
// so a shortcut (a service importing the embedding API, the kernel importing
// a service) fails here instead of rotting the layers. Within services/, each
// folder is a room: no two rooms may import each other, even through others
// (a cycle), and the layers above reach a room only through its public.ts.
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers.ts';

const LAYERS = ['platform', 'protocol', 'kernel', 'services', 'api', 'daemon', 'bin'] as const;
type Layer = (typeof LAYERS)[number];
const rank = (l: Layer): number => LAYERS.indexOf(l);

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

function layerOf(file: string): Layer | undefined {
  const top = path.relative(ROOT, file).split(path.sep)[0];
  return (LAYERS as readonly string[]).includes(top!) ? (top as Layer) : undefined;
}

/** Relative module specifiers of `import … from '…'`, `export … from '…'` and `import('…')`. */
function importsOf(text: string): string[] {
  const out: string[] = [];
  const re = /(?:^|\n)\s*(?:import|export)\b(?:\{[^}]*\}|[^'"\n;{])*?(?:from\s*)?['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;
  for (let m; (m = re.exec(text));) out.push((m[1] ?? m[2])!);
  return out;
}

t.test('every relative import points down the layers (platform ← protocol ← kernel ← services ← api ← daemon ← bin)', async (t) => {
  const wrong: string[] = [];
  let checked = 0;
  for (const layer of LAYERS) {
    for (const file of files(path.join(ROOT, layer))) {
      for (const spec of importsOf(readFileSync(file, 'utf8'))) {
        const target = layerOf(path.resolve(path.dirname(file), spec));
        checked++;
        if (target && rank(target) > rank(layer)) wrong.push(`${path.relative(ROOT, file)} imports ${spec} (${layer} → ${target})`);
      }
    }
  }
  t.ok(checked > 100, `${checked} imports checked`);
  t.same(wrong, [], 'no import points up');
});

t.test('the checker catches an upward import', async (t) => {
  t.same(importsOf(`import { x } from '../../api/albedo.ts';\nexport * from './y.ts';\nconst m = await import('../z.ts');`), [
    '../../api/albedo.ts',
    './y.ts',
    '../z.ts',
  ]);
  // The formatter breaks a long import over lines; the checker still sees it.
  t.same(importsOf(`import {\n  a,\n  type b,\n} from '../../api/albedo.ts';\nimport t from 'tap';`), ['../../api/albedo.ts']);
});

/** Every relative import of the layers' files: importing file and imported file, relative to the root with `/`. */
function allImports(): Array<{ from: string; to: string }> {
  const out: Array<{ from: string; to: string }> = [];
  const rel = (p: string): string => path.relative(ROOT, p).split(path.sep).join('/');
  for (const layer of LAYERS) {
    for (const file of files(path.join(ROOT, layer))) {
      for (const spec of importsOf(readFileSync(file, 'utf8')))
        out.push({ from: rel(file), to: rel(path.resolve(path.dirname(file), spec)) });
    }
  }
  return out;
}

/** The room a file is in: `services/<name>` for a service's files, else its top folder. */
function roomOf(file: string): string {
  const parts = file.split('/');
  return parts[0] === 'services' && parts.length > 2 ? `services/${parts[1]}` : parts[0]!;
}

/** The folder a file is in (`bin/commands`, `services/catalogue/schema`). */
const folderOf = (file: string): string => path.posix.dirname(file);

/** The room → room edges of a list of imports (rooms as `of` says), each with one import that makes it. */
function roomEdges(imports: Array<{ from: string; to: string }>, of = roomOf): Map<string, Map<string, string>> {
  const edges = new Map<string, Map<string, string>>();
  for (const { from, to } of imports) {
    const a = of(from);
    const b = of(to);
    if (a === b) continue;
    if (!edges.has(a)) edges.set(a, new Map());
    if (!edges.get(a)!.has(b)) edges.get(a)!.set(b, `${from} → ${to}`);
  }
  return edges;
}

/** The cycles of a graph: its strongly connected components of more than one node (Tarjan), each sorted. */
export function cyclesOf(edges: Map<string, Map<string, string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const nodes = new Set([...edges.keys(), ...[...edges.values()].flatMap((m) => [...m.keys()])]);
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1) out.push(scc.sort());
  };
  for (const v of [...nodes].sort()) if (!index.has(v)) visit(v);
  return out;
}

t.test('no cycle between rooms: a services/ folder never imports, even through others, a folder that imports it', async (t) => {
  const edges = roomEdges(allImports());
  const cycles = cyclesOf(edges);
  // Each cycle with the imports that close it, to say where to cut.
  const shown = cycles.map((c) => c.flatMap((a) => c.filter((b) => edges.get(a)?.has(b)).map((b) => edges.get(a)!.get(b)!)));
  t.same(shown, [], 'no cycle');
  t.ok(
    [...edges.keys()].some((r) => r.startsWith('services/')),
    'the graph has the service rooms',
  );
});

t.test('no cycle between any two folders (bin/commands and bin/import, daemon and daemon/ui, …)', async (t) => {
  const edges = roomEdges(allImports(), folderOf);
  const cycles = cyclesOf(edges);
  const shown = cycles.map((c) => c.flatMap((a) => c.filter((b) => edges.get(a)?.has(b)).map((b) => edges.get(a)!.get(b)!)));
  t.same(shown, [], 'no cycle');
  t.ok(edges.has('bin/commands') && edges.has('services/catalogue'), 'the graph has nested folders');
});

t.test('the cycle checker catches a cycle, a long one too, and passes a graph without', async (t) => {
  const graph = (pairs: Array<[string, string]>): Map<string, Map<string, string>> =>
    roomEdges(pairs.map(([a, b]) => ({ from: `services/${a}/x.ts`, to: `services/${b}/y.ts` })));
  t.same(
    cyclesOf(
      graph([
        ['transport', 'negotiation'],
        ['negotiation', 'transport'],
      ]),
    ),
    [['services/negotiation', 'services/transport']],
  );
  t.same(
    cyclesOf(
      graph([
        ['a', 'b'],
        ['b', 'c'],
        ['c', 'a'],
        ['c', 'd'],
      ]),
    ),
    [['services/a', 'services/b', 'services/c']],
  );
  t.same(
    cyclesOf(
      graph([
        ['composer', 'catalogue'],
        ['transport', 'negotiation'],
        ['transport', 'oauth'],
      ]),
    ),
    [],
  );
  // Imports inside one room are no edge.
  t.same(cyclesOf(roomEdges([{ from: 'services/oauth/store.ts', to: 'services/oauth/flow.ts' }])), []);
});

/** The layers above services/ that must use a service through its contract (kernel messages) or its public module. */
const ABOVE_SERVICES = ['api', 'daemon', 'bin'];
const PUBLIC = /^services\/[^/]+\/public\.ts$/;

t.test("api/, daemon/ and bin/ import a service's files only through its public.ts", async (t) => {
  const wrong = allImports()
    .filter(({ from, to }) => ABOVE_SERVICES.includes(from.split('/')[0]!) && to.startsWith('services/') && !PUBLIC.test(to))
    .map(({ from, to }) => `${from} imports ${to}`);
  t.same(wrong, [], 'none reaches inside a service');
});

t.test("the public-module rule catches an import of a service's inner module", async (t) => {
  t.ok(PUBLIC.test('services/catalogue/public.ts'));
  t.notOk(PUBLIC.test('services/catalogue/tokens.ts'));
  t.notOk(PUBLIC.test('services/catalogue/schema/public.ts'), "a nested folder's public.ts is not the service's");
});
