// The Server DTO's description (at most 2,048 characters: docs/design.md,
// "Bounds"): the server's own description, else its instructions, cut with a
// mark.
import t from 'tap';
import { descriptionOf, MAX_DESCRIPTION } from '../../daemon/servers.ts';
import type { SavedCatalogue } from '../../protocol/catalogue.ts';

const row = (serverInfo: SavedCatalogue['serverInfo'], instructions: string | null): SavedCatalogue => ({
  server: 's',
  fingerprint: 'f',
  era: 'legacy',
  protocolVersion: '2025-11-25',
  serverInfo,
  capabilities: {},
  instructions,
  catalogue: { tools: [], resources: [], resourceTemplates: [], prompts: [] },
  savedAt: 0,
});

t.test('own description first, else the instructions, else empty', async (t) => {
  t.equal(descriptionOf(row({ name: 'n', version: '1', description: 'Own words.' } as never, 'Use me well.')), 'Own words.');
  t.equal(descriptionOf(row({ name: 'n', version: '1' }, 'Use me well.')), 'Use me well.');
  t.equal(descriptionOf(row({ name: 'n', version: '1', description: '  ' } as never, null)), '');
  t.equal(descriptionOf(row(null, null)), '');
});

t.test('bounded to 2,048 characters, the cut marked, never half a surrogate pair', async (t) => {
  const long = descriptionOf(row(null, 'x'.repeat(5_000)));
  t.equal(long.length, MAX_DESCRIPTION);
  t.ok(long.endsWith('…'));
  t.equal(descriptionOf(row(null, 'y'.repeat(MAX_DESCRIPTION))).length, MAX_DESCRIPTION, 'exactly at the bound: kept whole');
  const emoji = descriptionOf(row(null, 'a'.repeat(MAX_DESCRIPTION - 4) + '😀'.repeat(10)));
  t.ok(emoji.length <= MAX_DESCRIPTION);
  t.notOk(/[\uD800-\uDBFF]…$/.test(emoji), 'no lone high surrogate before the mark');
});
