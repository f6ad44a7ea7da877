// input_required (MRTR) rounds against hostile inputRequests maps: a key
// named __proto__ (which zod's record would silently drop) and a map of
// thousands are refused with ALBEDO_INVALID_RESPONSE; the handler never runs.
import t from 'tap';
import { requestWithInput } from '../../services/transport/input-rounds.ts';
import { rejection } from '../helpers.ts';

function context(inputRequests: unknown): { asked: number; ctx: Parameters<typeof requestWithInput>[0] } {
  const state = { asked: 0 };
  return {
    get asked() {
      return state.asked;
    },
    ctx: {
      send: async () => ({ resultType: 'input_required', inputRequests, requestState: 's' }),
      capabilities: { elicitation: {} },
      ask: async () => {
        state.asked++;
        return { action: 'decline' };
      },
    },
  };
}

t.test('an inputRequests key named __proto__ is refused, not dropped', async (t) => {
  const c = context(
    JSON.parse('{"__proto__":{"method":"elicitation/create","params":{}},"b":{"method":"elicitation/create","params":{}}}'),
  );
  const e = await rejection(requestWithInput(c.ctx, 'tools/call', { name: 'x' }, 5_000));
  t.equal(e.code, 'ALBEDO_INVALID_RESPONSE');
  t.equal(c.asked, 0);
});

t.test('10,000 input requests in one round are refused', async (t) => {
  const many = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, { method: 'elicitation/create', params: {} }]));
  const c = context(many);
  const e = await rejection(requestWithInput(c.ctx, 'tools/call', { name: 'x' }, 5_000));
  t.equal(e.code, 'ALBEDO_INVALID_RESPONSE');
  t.equal(c.asked, 0);
});

t.test('a round within the bounds is answered', async (t) => {
  let round = 0;
  const ctx = {
    send: async () =>
      round++ === 0
        ? { resultType: 'input_required', inputRequests: { a: { method: 'elicitation/create', params: {} } }, requestState: 's' }
        : { resultType: 'complete', content: [] },
    capabilities: { elicitation: {} },
    ask: async () => ({ action: 'decline' }),
  };
  const r = await requestWithInput(ctx, 'tools/call', { name: 'x' }, 5_000);
  t.same(r, { resultType: 'complete', content: [] });
});
