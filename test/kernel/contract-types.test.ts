/**
 * The compiler refuses a service whose handler breaks its message map. The
 * type test beside this file (contract-types.ts) proves each kind of error
 * under `tsc --noEmit`; this one runs the compiler on a tiny service module
 * written as an embedder writes a replacement (`albedo/service`), so a
 * loosening of kernel/service.ts is caught by the test run too.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { ROOT } from '../helpers.ts';

// The compiler's own executable (TypeScript 7 is native): run through Node, the test runner's hooks would load its launcher.
const exePath = pathToFileURL(path.join(ROOT, 'node_modules', 'typescript', 'lib', 'getExePath.js')).href;
const TSC = ((await import(exePath)) as { default: () => string }).default();

/** An oauth service module whose one handler returns `result`, importing defineService as an embedder does. */
const moduleWith = (result: string): string => `import { defineService } from 'albedo/service';
export default defineService('oauth', {
  handlers: {
    'oauth/sign-in': async (p) => (${result}),
  },
});
`;

interface Diagnostic {
  file: string;
  line: number;
  code: string;
}

/** Compiles the files with the project's settings, this package installed beside them; the errors, by file, line and code. */
async function compile(
  t: { teardown(fn: () => unknown): void },
  files: Record<string, string>,
): Promise<{ exitCode: number; errors: Diagnostic[] }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'albedo-contract-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const tsconfig = {
    extends: path.join(ROOT, 'tsconfig.json'),
    compilerOptions: { typeRoots: [path.join(ROOT, 'node_modules', '@types')] },
    include: Object.keys(files),
  };
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  mkdirSync(path.join(dir, 'node_modules'));
  symlinkSync(ROOT, path.join(dir, 'node_modules', 'albedo'));
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  const run = await promisify(execFile)(TSC, ['-p', dir, '--pretty', 'false'], { cwd: dir }).then(
    (r) => ({ exitCode: 0, stdout: r.stdout }),
    (err: { code: number; stdout: string }) => ({ exitCode: err.code, stdout: err.stdout }),
  );
  const errors = [...run.stdout.matchAll(/^(.+?)\((\d+),\d+\): error (TS\d+)/gm)].map((m) => ({
    file: path.basename(m[1]),
    line: Number(m[2]),
    code: m[3],
  }));
  return { exitCode: run.exitCode, errors };
}

t.test('tsc refuses a handler whose result is not its map entry, and accepts the right one', async (t) => {
  const { exitCode, errors } = await compile(t, {
    // AuthStatus: the map's result for oauth/sign-in.
    'right.ts': moduleWith("{ server: p.auth.name, url: p.serverUrl, state: 'none' as const }"),
    // A status whose state is a number: not an AuthStatus.
    'wrong.ts': moduleWith('{ server: p.auth.name, url: p.serverUrl, state: p.timeoutMs }'),
  });
  t.not(exitCode, 0, 'the compile fails');
  t.same(errors, [{ file: 'wrong.ts', line: 4, code: 'TS2322' }], 'one error, at the wrong handler, and none in the right module');
});
