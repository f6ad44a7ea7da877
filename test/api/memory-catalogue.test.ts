// The memory catalogue (examples/services/memory-catalogue.ts) is a
// replacement for the built-in catalogue service: the composer acts on its
// answers and error codes, so it must answer each message as the built-in one
// does. The same calls, good and bad, go to both, each in a real worker of
// its own kernel; every answer (or error's code, outcome and data) must be
// the same.
import t from 'tap';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kernel } from '../../kernel/kernel.ts';
import type { SavedCatalogue } from '../../protocol/catalogue.ts';
import { MAX_LOOKUPS, MAX_NORMALISE_BATCH } from '../../protocol/services/catalogue.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { tempHome } from '../helpers.ts';

t.teardown(closeCatalogueStores);

const BUILT_IN = fileURLToPath(new URL('../../services/catalogue/service.ts', import.meta.url));
const MEMORY = fileURLToPath(new URL('../../examples/services/memory-catalogue.ts', import.meta.url));

const row = (over: Record<string, unknown> = {}): SavedCatalogue =>
  ({
    server: 'docs',
    fingerprint: 'fp1',
    era: 'modern',
    protocolVersion: '2026-07-28',
    serverInfo: { name: 'docs', version: '1.0.0' },
    capabilities: { tools: { listChanged: true } },
    instructions: null,
    catalogue: { tools: [{ name: 'search', inputSchema: { type: 'object' } }], resources: [], resourceTemplates: [], prompts: [] },
    savedAt: 1,
    ...over,
  }) as SavedCatalogue;

const lookups = (n: number): Array<{ server: string; fingerprint: string }> =>
  Array.from({ length: n }, () => ({ server: 'docs', fingerprint: 'fp1' }));

// In order: each call sees what the ones before it saved.
const CALLS: Array<[string, unknown]> = [
  ['catalogue/current', { servers: [{ server: 'docs', fingerprint: 'fp1' }] }],
  ['catalogue/put', { row: row() }],
  ['catalogue/put', { row: row({ savedAt: 2 }) }],
  [
    'catalogue/current',
    {
      servers: [
        { server: 'docs', fingerprint: 'fp1' },
        { server: 'docs', fingerprint: 'other' },
      ],
    },
  ],
  ['catalogue/current', { servers: lookups(MAX_LOOKUPS) }],
  ['catalogue/current', { servers: lookups(MAX_LOOKUPS + 1) }],
  ['catalogue/current', { servers: [{ server: 'docs' }] }],
  ['catalogue/current', { servers: [null] }],
  ['catalogue/current', { servers: null }],
  ['catalogue/current', null],
  ['catalogue/put', { row: row({ fingerprint: 7 }) }],
  ['catalogue/put', { row: row({ catalogue: { tools: [{ name: 5 }], resources: [], resourceTemplates: [], prompts: [] } }) }],
  ['catalogue/put', { row: row({ extra: true }) }],
  ['catalogue/put', { row: null }],
  ['catalogue/put', {}],
  ['catalogue/remove', { server: '' }],
  ['catalogue/remove', { server: 42 }],
  ['catalogue/normalise', { schemas: [{ type: 'object', properties: { q: { type: 'string' } } }, false, 'x'], profile: 'openai' }],
  ['catalogue/normalise', { schemas: [], profile: 'openai-lax' }],
  ['catalogue/normalise', { schemas: [], profile: {} }],
  ['catalogue/normalise', { schemas: { type: 'object' }, profile: 'portable' }],
  ['catalogue/normalise', { schemas: Array(MAX_NORMALISE_BATCH + 1).fill({}), profile: 'portable' }],
  ['catalogue/profiles', {}],
  ['catalogue/stats', { loopDelay: 'sometimes' }],
  ['catalogue/missing', {}],
  ['constructor', {}],
  ['catalogue/remove', { server: 'docs' }],
  ['catalogue/remove', { server: 'docs' }],
  ['catalogue/current', { servers: [{ server: 'docs', fingerprint: 'fp1' }] }],
];

async function answers(t: { teardown(fn: () => unknown): void }, module: string): Promise<unknown[]> {
  const k = new Kernel();
  t.teardown(() => k.stop(5_000));
  k.start({ name: 'catalogue', module, options: { storePath: path.join(tempHome(t as never), 'store') } });
  const out: unknown[] = [];
  for (const [method, params] of CALLS) {
    out.push(
      await k.callAny('catalogue', method, params).then(
        (value) => ({ value }),
        (e: { code?: string; outcome?: string; data?: unknown }) => ({ code: e.code, outcome: e.outcome, data: e.data }),
      ),
    );
  }
  return out;
}

t.test('every call, good or bad, is answered as the built-in catalogue answers it', async (t) => {
  const [builtIn, memory] = await Promise.all([answers(t, BUILT_IN), answers(t, MEMORY)]);
  CALLS.forEach(([method, params], i) => {
    t.strictSame(memory[i], builtIn[i], `${method} ${JSON.stringify(params)?.slice(0, 100)}`);
  });
});
