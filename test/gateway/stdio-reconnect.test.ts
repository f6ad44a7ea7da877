// `albedo gateway NAME` outliving its daemon: a host's connection (the official SDK clients, both eras, as a host
// spawns the command) goes on over a daemon that was killed or stopped and came back. The call in flight when the
// daemon died is answered with ALBEDO_DAEMON_UNREACHABLE (outcome unknown), never left waiting; the next calls go to
// the new daemon, which is told the host's opening again. A killed daemon nobody restarts is started by the command
// itself, as every command does; a stopped one is not, and the command ends. The same daemon ending the connection
// (a revoked token) ends it too: test/gateway/revoke.test.ts.
import t, { type Test } from 'tap';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as Stdio1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { NODE, newTag, tempHome, waitNoLeftovers } from '../helpers.ts';
import { BIN, sdkServer, startDaemon } from '../daemon/harness.ts';

t.setTimeout(300_000);

const MODERN = '2026-07-28';
const run = promisify(execFile);

function setup(t: Test): { home: string; tag: string; env: Record<string, string> } {
  const tag = newTag();
  const home = tempHome(t);
  const settings = { mcp: { servers: { sdk: sdkServer() } }, gateways: { g: { server: 'sdk' } } };
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify(settings), { mode: 0o600 });
  return { home, tag, env: { ...process.env, ALBEDO_HOME: home, TEST_SERVER_TAG: tag } as Record<string, string> };
}

const token = (home: string): string => (JSON.parse(readFileSync(path.join(home, 'daemon.json'), 'utf8')) as { token: string }).token;

const text = (r: any): string => r?.content?.[0]?.text;

t.test('a killed daemon: the call in flight is told, a daemon started again takes the next calls (both eras)', async (t) => {
  for (const mode of [{ pin: MODERN } as const, 'legacy' as const]) {
    const { home, tag, env } = setup(t);
    let d = await startDaemon(t, home, { tag });
    const client = new Client({ name: 'host', version: '1.0.0' }, { versionNegotiation: { mode } });
    // Long enough for the test's daemon to be the next one on a loaded machine: the command starts none meanwhile.
    await client.connect(
      new StdioClientTransport({ command: NODE, args: [BIN, 'gateway', 'g'], env: { ...env, ALBEDO_GATEWAY_WAIT_MS: '120000' } }),
    );
    t.equal(text(await client.callTool({ name: 'echo', arguments: { text: 'before' } })), 'before', `${JSON.stringify(mode)}: a call`);

    const slow = client.callTool({ name: 'sleep', arguments: { ms: 600_000 } }, { timeout: 900_000 }).then(
      (r) => ({ ok: r }),
      (err: unknown) => ({ err: err as { code?: number; data?: { code?: string; outcome?: string } } }),
    );
    // A call sent after it and answered: the command has read the slow one and the daemon has it.
    t.equal(text(await client.callTool({ name: 'echo', arguments: { text: 'meanwhile' } })), 'meanwhile');
    const old = token(home);
    await d.stop('SIGKILL');
    const lost = await slow;
    t.ok('err' in lost, 'the call in flight is answered, with an error');
    if ('err' in lost)
      t.same([lost.err.code, lost.err.data?.code, lost.err.data?.outcome], [-32603, 'ALBEDO_DAEMON_UNREACHABLE', 'unknown']);

    d = await startDaemon(t, home, { tag });
    t.not(token(home), old, 'a new daemon');
    const after = await client.callTool({ name: 'echo', arguments: { text: 'after' } });
    t.equal(text(after), 'after', 'the same connection calls through the new daemon');
    t.ok(
      (await client.listTools()).tools.some((x) => x.name === 'echo'),
      'and lists',
    );
    await client.close();
    await d.stop();
  }
});

t.test('a killed daemon nobody restarts: the command starts one, as every command does (a 1.x host)', async (t) => {
  const { home, tag, env } = setup(t);
  const d = await startDaemon(t, home, { tag });
  const client = new Client1({ name: 'host1', version: '1.0.0' });
  await client.connect(new Stdio1({ command: NODE, args: [BIN, 'gateway', 'g'], env: { ...env, ALBEDO_GATEWAY_WAIT_MS: '200' } }));
  t.equal(text(await client.callTool({ name: 'echo', arguments: { text: 'one' } })), 'one');
  const old = token(home);
  t.teardown(async () => {
    await run(NODE, [BIN, 'daemon', 'stop'], { env }).catch(() => {});
    await waitNoLeftovers(tag, 15_000);
  });
  await d.stop('SIGKILL');
  const r = await client.callTool({ name: 'echo', arguments: { text: 'two' } });
  t.equal(text(r), 'two', 'answered by a daemon the command started');
  t.not(token(home), old, 'a new daemon.json');
  await client.close();
});

t.test('a stopped daemon nobody restarts: the command ends and starts none', async (t) => {
  const { home, tag, env } = setup(t);
  const d = await startDaemon(t, home, { tag });
  const transport = new Stdio1({ command: NODE, args: [BIN, 'gateway', 'g'], env: { ...env, ALBEDO_GATEWAY_WAIT_MS: '300' } });
  const client = new Client1({ name: 'host1', version: '1.0.0' });
  await client.connect(transport);
  t.equal(text(await client.callTool({ name: 'echo', arguments: { text: 'one' } })), 'one');
  const closed = new Promise<void>((r) => (transport.onclose = () => r()));
  t.equal(await d.stop(), 0, 'the daemon stopped');
  await closed;
  t.pass('the command ended with its daemon');
  t.throws(() => token(home), 'no daemon was started');
});
