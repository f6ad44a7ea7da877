// Driving `albedo acp` in the adapter's tests: a daemon with a configured server (the SDK's), editors whose adapters
// open or load an ACP session with an editor server, prompts that list and call tools through the agent's gateway,
// and the ACP error codes the editor gets.
import type { Test } from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { NODE, fixture, newTag, tempHome } from '../helpers.ts';
import { sdkServer, srv, startDaemon, type Daemon } from '../daemon/harness.ts';
import { alive, initialize, prompt, startEditor, type Editor } from '../fixtures/acp/editor.ts';

type Tap = Test;

export const editorServer = (tag: string): acp.McpServer => ({
  name: 'ed',
  command: NODE,
  args: [fixture('sdk-server.ts')],
  env: [{ name: 'ALBEDO_TEST_TAG', value: tag }],
});

/** What the agent's last prompt said: its tool list and the call's result or error. */
export async function run(e: Editor, sessionId: string, text: string): Promise<{ tools: string[]; result?: any; error?: any }> {
  e.updates.length = 0;
  const r = await prompt(e, sessionId, text);
  if (r.stopReason !== 'end_turn') throw new Error(`stopReason ${r.stopReason}`);
  const said = e.said(sessionId);
  const out = said.find((v) => v?.result || v?.error) ?? {};
  return { tools: said.find((v) => v?.tools)?.tools ?? [], ...out };
}

/** The configured server's and the editor's echo, each called through the agent's gateway; their texts. */
export async function echoes(e: Editor, sessionId: string, tools: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const name of tools.filter((n) => /^mcp_(sdk|ed)_echo_/.test(n)).sort()) {
    const r = await run(e, sessionId, `call ${name} {"text":"hi ${name}"}`);
    out.push(r.result?.content?.[0]?.text ?? JSON.stringify(r.error));
  }
  return out;
}

export const info = async (d: Daemon, id: string) => (await d.call('GET', `/v1/acp/sessions/${id}`)).body;

/** An editor with an adapter and its agent, initialized, whose ACP session `sessionId` it loads (or opens: none given). */
export async function editorOn(t: Tap, home: string, tag: string, sessionId?: string, env: Record<string, string> = {}) {
  const e = startEditor(home, env);
  t.teardown(() => void e.child.kill('SIGKILL'));
  await initialize(e);
  if (sessionId === undefined) {
    const r = await e.agent.request(acp.methods.agent.session.new, { cwd: path.dirname(home), mcpServers: [editorServer(tag)] });
    return { e, sessionId: r.sessionId };
  }
  await e.agent.request(acp.methods.agent.session.load, { sessionId, cwd: path.dirname(home), mcpServers: [editorServer(tag)] });
  return { e, sessionId };
}

/** The tools of a session, the configured and the editor's echo called through the agent's gateway. */
export async function works(t: Tap, e: Editor, sessionId: string, what: string): Promise<void> {
  const { tools } = await run(e, sessionId, 'list');
  const want = tools.filter((n) => /^mcp_(sdk|ed)_echo_/.test(n)).sort();
  t.equal(want.length, 2, `${what}: an echo of each server`);
  t.same(
    await echoes(e, sessionId, tools),
    want.map((n) => `hi ${n}`),
    `${what}: calls work`,
  );
}

/** An ACP session's error code (JSON-RPC error data), or null when `p` resolves. */
export const codeOf = (p: Promise<unknown>): Promise<string | null> =>
  p.then(
    () => null,
    (err: acp.RequestError) => (err.data as { code?: string } | undefined)?.code ?? `no code (${err.code})`,
  );

export async function daemonFor(t: Tap, leaseMs: number) {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag, env: { ALBEDO_ACP_LEASE_MS: String(leaseMs) } });
  t.equal((await d.call('PUT', srv('sdk'), { body: sdkServer() })).status, 201, 'a configured server');
  return { d, tag, home };
}

/** Live processes whose command line holds `needle`. */
export function pidsRunning(needle: string): number[] {
  const out: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(needle) && alive(Number(p))) out.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
