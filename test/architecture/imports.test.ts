// Imports point one way (DESIGN.md): protocol ← kernel ← services ← api ← bin.
// Every relative import of every source file is checked against that order,
// so a shortcut (a service importing the embedding API, the kernel importing
// a service) fails here instead of rotting the layers.
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers.ts';

const LAYERS = ['protocol', 'kernel', 'services', 'api', 'daemon', 'bin'] as const;
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

t.test('every relative import points down the layers (protocol ← kernel ← services ← api ← daemon ← bin)', async (t) => {
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
