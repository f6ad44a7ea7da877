// The tools view's words for a saved tool (bin/screen/tool-text.ts): a
// text's first line, a parameter's kind, required and default, and the
// whole tool for the pager — the server's text kept as it is (made safe
// where it is drawn).
import t from 'tap';
import { firstLine, hasMore, kindOf, paramLine, paramsOf, toolPage } from '../../bin/screen/tool-text.ts';

t.test('first line: the first that is not blank, whatever the line ends', async (t) => {
  t.equal(firstLine('\n\n  # Title  \r\nmore'), '# Title');
  t.equal(firstLine('one\rtwo'), 'one');
  t.equal(firstLine(null), '');
  t.equal(firstLine('   \n  '), '');
  t.ok(hasMore('# Title\n\nbody'));
  t.notOk(hasMore('  just one  \n'));
});

t.test('kinds', async (t) => {
  t.equal(kindOf({ type: 'string' }), 'string');
  t.equal(kindOf({ type: ['string', 'null'] }), 'string | null');
  t.equal(kindOf({ type: 'array', items: { type: 'number' } }), 'array of number');
  t.equal(kindOf({ enum: ['a', 1] }), 'one of "a", 1');
  t.equal(kindOf({ anyOf: [{ type: 'string' }, { type: 'integer' }] }), 'string | integer');
  t.equal(kindOf({ const: 'x' }), 'exactly "x"');
  t.equal(kindOf({ properties: {} }), 'object');
  t.equal(kindOf({}), 'any');
  t.equal(kindOf(true), 'any');
});

t.test("parameters in the schema's order, required and defaults said", async (t) => {
  const tool = {
    name: 'find',
    enabled: false,
    description: 'Finds.\nSecond line.',
    inputSchema: {
      type: 'object',
      properties: { q: { type: 'string', description: 'What\nto find' }, limit: { type: 'integer', default: 10 } },
      required: ['q'],
    },
  };
  const params = paramsOf(tool);
  t.same(
    params.map((p) => [p.name, p.required]),
    [
      ['q', true],
      ['limit', false],
    ],
  );
  t.equal(paramLine(params[0]!), 'q (string, required) — What');
  t.equal(paramLine(params[1]!), 'limit (integer, default 10)');
  t.same(paramsOf({ name: 'x', enabled: true, inputSchema: { type: 'object' } }), [], 'no properties: none');
  const page = toolPage(tool);
  t.ok(page.includes('Second line.'), 'the whole description');
  t.ok(
    page.some((l) => l.startsWith('○ kept from the model')),
    'a filtered tool says so',
  );
  t.ok(page.includes('parameters (2):') && page.includes('      to find'), 'every parameter, its description whole');
  t.ok(page.includes('input schema:'), 'and the schema');
});
