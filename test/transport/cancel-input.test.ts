// Cancellation reaches the embedder (issue 10, item 8): a request that is
// aborted or times out aborts the signal of the elicitation handler it waits
// on, and so does a server's notifications/cancelled for its own request.
import t from 'tap';
import { albedoFor, newTag, server, fixture, rejection, until } from '../helpers.ts';

const bad = fixture('bad-server.ts');

/** An elicitation handler that never answers, recording why its signal aborted. */
function waiting(): { aborted: unknown[]; started: number; handler: (p: unknown, ctx: { signal: AbortSignal }) => Promise<never> } {
  const w = {
    aborted: [] as unknown[],
    started: 0,
    handler: (_p: unknown, ctx: { signal: AbortSignal }) =>
      new Promise<never>((_, reject) => {
        w.started++;
        ctx.signal.addEventListener(
          'abort',
          () => {
            w.aborted.push(ctx.signal.reason);
            reject(ctx.signal.reason);
          },
          { once: true },
        );
      }),
  };
  return w;
}

t.test('a timed-out input_required call aborts the handler it waits on', async (t) => {
  const tag = newTag();
  const w = waiting();
  const a = await albedoFor(t, tag, { handlers: { elicitation: w.handler } });
  const c = await a.connect(server(tag, bad, ['input-required']));
  const e = await rejection(c.callTool('echo', { text: 'x' }, { timeoutMs: 1_500 }));
  t.ok(['ALBEDO_TIMEOUT', 'ALBEDO_DEADLINE'].includes(e.code), `the call timed out (${e.code})`);
  await until(() => w.aborted.length === 1, 10_000, "the handler's signal to abort");
  t.equal(w.started, 1);
});

t.test("the caller's abort of an input_required call aborts the handler", async (t) => {
  const tag = newTag();
  const w = waiting();
  const a = await albedoFor(t, tag, { handlers: { elicitation: w.handler } });
  const c = await a.connect(server(tag, bad, ['input-required']));
  const ac = new AbortController();
  const call = rejection(c.callTool('echo', { text: 'x' }, { timeoutMs: 60_000, signal: ac.signal }));
  await until(() => w.started === 1, 10_000, 'the handler to start');
  ac.abort();
  t.ok((await call).code, 'the call was aborted');
  await until(() => w.aborted.length === 1, 10_000, "the handler's signal to abort");
});

t.test("a server's notifications/cancelled for its own elicitation aborts the handler; no answer is sent", async (t) => {
  const tag = newTag();
  const w = waiting();
  const a = await albedoFor(t, tag, { handlers: { elicitation: w.handler } });
  const c = await a.connect(server(tag, bad, ['elicit-cancel']));
  const r = await c.callTool('echo', { text: 'x' }, { timeoutMs: 30_000 });
  t.equal(String(r.content[0]!.text), 'done');
  await until(() => w.aborted.length === 1, 10_000, "the handler's signal to abort");
  t.equal(w.started, 1);
});
