// A call refused for its arguments names them as the caller did (issue 26,
// item 5, with a profile's renames): a property the profile renamed
// (`opt.x` advertised as `opt_x`, `my-arg` as `my_arg`) is named by the
// advertised name when the caller used it or gave neither, and by the
// server's own name when the caller used that (both reach the server).
import t from 'tap';
import { planCall } from '../../services/composer/plan-call.ts';
import type { ArgPlan, InputCheck, RouteEntry } from '../../protocol/catalogue.ts';
import { AlbedoError } from '../../protocol/errors.ts';

const plan: ArgPlan = {
  props: { my_arg: { from: 'my-arg' }, opt_x: { from: 'opt.x' }, inner: { plan: { props: { n_m: { from: 'n.m' } } } } },
};
const schema = {
  type: 'object',
  properties: {
    'my-arg': { type: 'string' },
    'opt.x': { type: 'integer' },
    inner: { type: 'object', properties: { 'n.m': { type: 'integer' } } },
  },
  required: ['my-arg'],
  additionalProperties: false,
};
const NAME = 'mcp_s_t_abcdefghij';
const routes = new Map<string, RouteEntry>([[NAME, { server: 's', kind: 'tool', tool: 't', args: plan }]]);
const inputs = new Map<string, InputCheck>([[NAME, { schema, args: plan }]]);

function refused(
  args: Record<string, unknown>,
): AlbedoError & { data: { argument: string; pointer: string; problems: Array<{ argument: string }> } } {
  try {
    planCall(routes, ['s'], () => undefined, NAME, args, inputs);
  } catch (err) {
    if (AlbedoError.is(err)) return err as never;
    throw err;
  }
  throw new Error('the call was planned');
}

t.test('problems name renamed arguments as the caller named them', async (t) => {
  const advertised = refused({ my_arg: 'x', opt_x: 1.5 });
  t.match(advertised, { code: 'ALBEDO_INVALID_ARGUMENT', data: { argument: 'opt_x', pointer: '/opt_x' } });
  t.match(advertised.message, /^opt_x must be an integer/);
  const own = refused({ 'my-arg': 'x', 'opt.x': 1.5 });
  t.match(own.data, { argument: '["opt.x"]', pointer: '/opt.x' }, "the server's own name, as given");
  t.match(refused({}).data, { argument: 'my_arg' }, 'a missing one: by its advertised name');
  t.match(refused({ my_arg: 'x', inner: { n_m: 'two' } }).data, { argument: 'inner.n_m', pointer: '/inner/n_m' }, 'nested');
  t.match(refused({ my_arg: 'x', extra: 1 }).data, { argument: 'extra' }, 'a name the plan does not know stays as given');
  const ok = planCall(routes, ['s'], () => undefined, NAME, { my_arg: 'x', opt_x: 2 }, inputs);
  t.same(
    ok.op,
    { method: 'tools/call', name: 't', arguments: { 'my-arg': 'x', 'opt.x': 2 } },
    'valid arguments reach the server in its names',
  );
});
