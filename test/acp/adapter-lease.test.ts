// `albedo acp` and the attachment's lease: an adapter SIGKILLed frees its session once the lease runs out and a second
// editor's adapter loads it; two adapters racing for one session, exactly one holds it and the other is refused
// ALBEDO_ATTACHMENT_HELD (in the JSON-RPC error's data), also when the winner's servers take longer to start than a
// lease; an idle adapter keeps its session by renewing; a session closed by another client is not made again.
import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { NODE, fixture, tempDir, until } from '../helpers.ts';
import { alive, initialize, prompt, startEditor, type Editor } from '../fixtures/acp/editor.ts';
import { codeOf, daemonFor, editorOn, editorServer, info, works } from './adapter-kit.ts';

t.setTimeout(240_000);

t.test('the adapter SIGKILLed: its lease runs out, a second editor’s adapter loads the session and its calls work', async (t) => {
  const { d, tag, home } = await daemonFor(t, 4000);
  const pidfile = path.join(home, 'agent.pids');
  const { e, sessionId } = await editorOn(t, home, tag, undefined, { ACP_AGENT_PIDFILE: pidfile });
  await works(t, e, sessionId, 'first adapter');
  const [{ id }] = (await d.call('GET', '/v1/acp/sessions')).body.sessions;
  const pids = readFileSync(pidfile, 'utf8').split(' ').map(Number);
  e.child.kill('SIGKILL');
  await e.exited;
  await until(() => !pids.some(alive), 30_000, 'the agent’s group to go');
  await until(async () => (await info(d, id)).attached === false, 30_000, 'the lease to run out');

  const second = await editorOn(t, home, tag, sessionId);
  t.match(await info(d, id), { id, acpSessionId: sessionId, attached: true, state: 'ready' }, 'the same Albedo session, held again');
  await works(t, second.e, sessionId, 'second adapter');
  second.e.child.stdin!.end();
  t.equal((await second.e.exited).code, 0);
});

t.test('two adapters racing for one session: exactly one holds it, the other is refused ALBEDO_ATTACHMENT_HELD', async (t) => {
  const { d, tag, home } = await daemonFor(t, 20_000);
  const first = await editorOn(t, home, tag);
  const { sessionId } = first;
  first.e.child.stdin!.end();
  t.equal((await first.e.exited).code, 0, 'the first editor gone, the session released');

  const [b, c] = [startEditor(home), startEditor(home)];
  for (const x of [b, c]) t.teardown(() => void x.child.kill('SIGKILL'));
  await Promise.all([initialize(b), initialize(c)]);
  const load = (x: Editor) =>
    codeOf(x.agent.request(acp.methods.agent.session.load, { sessionId, cwd: path.dirname(home), mcpServers: [editorServer(tag)] }));
  const codes = await Promise.all([load(b), load(c)]);
  t.same([...codes].sort(), ['ALBEDO_ATTACHMENT_HELD', null], 'one attached, one refused');
  const [winner, loser] = codes[0] === null ? [b, c] : [c, b];
  await works(t, winner, sessionId, 'the holder');
  const resume = codeOf(
    loser.agent.request(acp.methods.agent.session.resume, { sessionId, cwd: path.dirname(home), mcpServers: [editorServer(tag)] }),
  );
  t.equal(await resume, 'ALBEDO_ATTACHMENT_HELD', 'refused again while the holder lives (resume too)');

  winner.child.stdin!.end();
  t.equal((await winner.exited).code, 0);
  t.equal(await load(loser), null, 'the holder gone (released): the other attaches');
  await works(t, loser, sessionId, 'the new holder');
  t.equal((await d.call('GET', '/v1/acp/sessions')).body.sessions.length, 1, 'one ACP session throughout');
});

t.test('lease renewal: an adapter idle for four lease periods still holds its session', async (t) => {
  const leaseMs = 3000;
  const { d, tag, home } = await daemonFor(t, leaseMs);
  const { e, sessionId } = await editorOn(t, home, tag);
  const [{ id }] = (await d.call('GET', '/v1/acp/sessions')).body.sessions;
  await new Promise((r) => setTimeout(r, 4 * leaseMs));
  t.equal((await info(d, id)).attached, true, 'still attached');
  const other = startEditor(home);
  t.teardown(() => void other.child.kill('SIGKILL'));
  await initialize(other);
  const code = await codeOf(
    other.agent.request(acp.methods.agent.session.load, { sessionId, cwd: path.dirname(home), mcpServers: [editorServer(tag)] }),
  );
  t.equal(code, 'ALBEDO_ATTACHMENT_HELD', 'another adapter is refused: the lease is live');
  await works(t, e, sessionId, 'the idle adapter');
});

t.test('the session closed by another client: the adapter does not bring it back; its prompts are refused until a load', async (t) => {
  const { d, tag, home } = await daemonFor(t, 1000);
  const { e, sessionId } = await editorOn(t, home, tag);
  const [{ id }] = (await d.call('GET', '/v1/acp/sessions')).body.sessions;
  t.equal((await d.call('DELETE', `/v1/sessions/${id}`)).status < 300, true, 'closed through the API');
  // A prompt that does not touch MCP (no gateway involved) answers until the adapter learns, at a renewal, what became of it.
  const mark = path.join(home, 'turn');
  let code: string | null = null;
  await until(
    async () => {
      code = await codeOf(prompt(e, sessionId, `flood 0 ${mark}`));
      return code !== null || (await d.call('GET', '/v1/acp/sessions')).body.sessions.length > 0;
    },
    60_000,
    'the adapter to renew',
  );
  t.same((await d.call('GET', '/v1/acp/sessions')).body.sessions, [], 'no ACP session made again behind the editor’s back');
  t.equal(code, 'ALBEDO_ATTACHMENT_LOST', 'prompts refused: the editor must load the session again');
  await e.agent.request(acp.methods.agent.session.load, { sessionId, cwd: path.dirname(home), mcpServers: [editorServer(tag)] });
  const [again] = (await d.call('GET', '/v1/acp/sessions')).body.sessions;
  t.match(again, { acpSessionId: sessionId, attached: true, state: 'ready' }, 'loaded: a new Albedo session for it');
  t.not(again.id, id);
  await works(t, e, sessionId, 'after the load');
});

t.test('an attach whose servers are slow to start: its lease runs from when it is handed out, a racing adapter is refused', async (t) => {
  const leaseMs = 1000;
  const { d, tag, home } = await daemonFor(t, leaseMs);
  const first = await editorOn(t, home, tag);
  const { sessionId } = first;
  first.e.child.stdin!.end();
  await first.e.exited;
  // The second editor adds a server that holds its start until the test opens it, past the lease's length.
  const gate = tempDir(t, 'albedo-gate-');
  const slow = { name: 'slow', command: NODE, args: [fixture('gated-server.ts'), gate], env: [{ name: 'ALBEDO_TEST_TAG', value: tag }] };
  const [b, c] = [startEditor(home), startEditor(home)];
  for (const x of [b, c]) t.teardown(() => void x.child.kill('SIGKILL'));
  await Promise.all([initialize(b), initialize(c)]);
  const mcpServers = [editorServer(tag), slow];
  const loadB = codeOf(b.agent.request(acp.methods.agent.session.load, { sessionId, cwd: path.dirname(home), mcpServers }));
  await until(() => existsSync(path.join(gate, 'started')), 30_000, 'the slow server to start');
  const loadC = codeOf(c.agent.request(acp.methods.agent.session.load, { sessionId, cwd: path.dirname(home), mcpServers }));
  await new Promise((r) => setTimeout(r, 3 * leaseMs));
  writeFileSync(path.join(gate, 'open'), '');
  t.equal(await loadB, null, 'the first attach, published once its servers answered');
  t.equal(await loadC, 'ALBEDO_ATTACHMENT_HELD', 'the racing one refused: the lease was not spent while publishing');
  const [s] = (await d.call('GET', '/v1/acp/sessions')).body.sessions;
  t.match(s, { attached: true, state: 'ready', overlay: { servers: [{ name: 'ed' }, { name: 'slow' }] } });
  await works(t, b, sessionId, 'the holder');
});
