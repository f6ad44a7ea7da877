/**
 * Bench rows for `albedo acp` (issue 23), run by bench/run.ts (`--only acp`).
 * The agent is the scripted ACP agent of the tests (test/fixtures/acp-agent.ts:
 * the official ACP SDK and the official MCP client), the editor the ACP SDK's
 * client; what changes is how the agent reaches the MCP servers:
 *
 * 1. a tool call the agent makes (the raw echo server, given by the editor):
 *    through `albedo acp` (the agent is handed the session's gateway, `albedo
 *    gateway --session ID`) vs the same agent run directly with the server;
 * 2. `session/new` with 10 configured servers whose catalogues the daemon
 *    saved: the time until the agent's first `tools/list` is answered (the
 *    agent lists inside `session/new`), through a fresh `albedo acp` against
 *    a running daemon, vs the same agent given the 10 servers directly.
 */
import * as acp from '@agentclientprotocol/sdk';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import type { RowSink } from './proc.ts';
import { startDaemon } from './daemon.ts';
import { NODE, ROOT, median, percentile } from './lib.ts';

const GROUP = 'acp';
const BIN = path.join(ROOT, 'bin', 'albedo.js');
const AGENT = path.join(ROOT, 'test', 'fixtures', 'acp-agent.ts');

export interface AcpBenchContext {
  quick: boolean;
  rounds: number;
  home: string;
  rawEchoJs: string;
  row: RowSink;
  log(s: string): void;
}

interface Editor {
  agent: acp.ClientContext;
  said: acp.SessionNotification[];
  close(): Promise<void>;
}

/** An editor over `argv`'s stdio: the adapter (`albedo acp -- agent`) or the agent itself. */
function editor(argv: string[], env: Record<string, string>): Editor {
  const child: ChildProcess = spawn(NODE, argv, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'ignore'] });
  const said: acp.SessionNotification[] = [];
  const conn = acp
    .client({ name: 'bench-editor' })
    .onNotification(acp.methods.client.session.update, async ({ params }) => void said.push(params))
    .connect(
      acp.ndJsonStream(
        Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
        Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
      ),
    );
  return {
    agent: conn.agent,
    said,
    close: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.stdin!.end();
      await exited;
    },
  };
}

async function start(e: Editor, mcpServers: acp.McpServer[], cwd: string): Promise<acp.NewSessionResponse> {
  await e.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  return e.agent.request(acp.methods.agent.session.new, { cwd, mcpServers });
}

/** The JSON values of the agent's message chunks in one session, in order. */
function chunks(e: Editor, sessionId: string): any[] {
  const out: any[] = [];
  for (const n of e.said) {
    if (n.sessionId !== sessionId || n.update.sessionUpdate !== 'agent_message_chunk') continue;
    if (n.update.content.type === 'text') out.push(JSON.parse(n.update.content.text));
  }
  return out;
}

async function promptFor(e: Editor, sessionId: string, text: string): Promise<any> {
  const before = chunks(e, sessionId).length;
  await e.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
  return chunks(e, sessionId).slice(before);
}

const echoServer = (ctx: AcpBenchContext, name: string): acp.McpServer => ({
  name,
  command: NODE,
  args: [ctx.rawEchoJs, '--era', 'modern'],
  env: [],
});

/** p50 of `n` calls of the echo tool the agent makes, after `warm`; `tool` is found in its list by `match`. */
async function callP50(e: Editor, sessionId: string, match: RegExp, warm: number, n: number): Promise<number> {
  const [list] = await promptFor(e, sessionId, 'list');
  const tool = (list.tools as string[]).find((t) => match.test(t));
  if (!tool) throw new Error(`no echo tool among ${JSON.stringify(list.tools)}`);
  await promptFor(e, sessionId, `bench ${tool} ${warm} {"text":"hello"}`);
  const [out] = await promptFor(e, sessionId, `bench ${tool} ${n} {"text":"hello"}`);
  const ms = [...(out.bench.ms as number[])].sort((a, b) => a - b);
  return percentile(ms, 50);
}

/** The home's extensions.json: `n` raw echo servers, `echo_00` … */
function writeHome(ctx: AcpBenchContext, home: string, n: number): string[] {
  const servers: Record<string, unknown> = {};
  const names = Array.from({ length: n }, (_, i) => `echo_${String(i).padStart(2, '0')}`);
  for (const name of names) servers[name] = { command: NODE, args: [ctx.rawEchoJs, '--era', 'modern'], startupTimeoutMs: 60_000 };
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers } }, null, 2), { mode: 0o600 });
  return names;
}

export async function acpRows(ctx: AcpBenchContext): Promise<void> {
  const { row, log } = ctx;
  const n = 10;
  // A home of its own: the other groups' daemons and settings stay out of it.
  const home = path.join(ctx.home, 'acp');
  mkdirSync(home, { mode: 0o700 });
  const names = writeHome(ctx, home, n);
  const env = { ALBEDO_HOME: home };
  const adapter = [BIN, 'acp', '--', NODE, AGENT];
  const d = await startDaemon(home);
  try {
    // 1. A tool call the agent makes: through the adapter's gateway vs the server given to the agent directly.
    const { warm, calls } = ctx.quick ? { warm: 10, calls: 50 } : { warm: 100, calls: 1_000 };
    log(`acp: the agent's echo call through albedo acp vs direct (${calls} calls, ${ctx.rounds} rounds)`);
    const via: number[] = [];
    const direct: number[] = [];
    for (let r = 0; r < ctx.rounds; r++) {
      const a = editor(adapter, env);
      try {
        const s = await start(a, [echoServer(ctx, 'ed')], ctx.home);
        via.push(await callP50(a, s.sessionId, /^mcp_ed_echo/, warm, calls));
      } finally {
        await a.close();
      }
      const b = editor([AGENT], {});
      try {
        const s = await start(b, [echoServer(ctx, 'ed')], ctx.home);
        direct.push(await callP50(b, s.sessionId, /^echo$/, warm, calls));
      } finally {
        await b.close();
      }
    }
    const viaP50 = median(via);
    const directP50 = median(direct);
    const label = 'the same agent given the server directly';
    row({
      group: GROUP,
      scenario: 'acp: agent tool call through albedo acp: p50',
      unit: 'ms',
      albedo: viaP50,
      peer: directP50,
      peerLabel: label,
      better: 'lower',
    });
    row({
      group: GROUP,
      scenario: 'acp: agent tool call: overhead of albedo acp at p50',
      unit: 'ms',
      albedo: viaP50 - directP50,
      peer: null,
      better: 'lower',
    });

    // 2. session/new with n configured servers (catalogues saved by the rounds above) until the first tools/list.
    log(`acp: session/new with ${n} configured servers with saved catalogues, until the agent's first tools/list`);
    const listEnv = { ACP_AGENT_LIST_ON_NEW: '1' };
    const first: number[] = [];
    const peer: number[] = [];
    const direct10 = names.map((name) => echoServer(ctx, name));
    for (let r = 0; r < Math.max(2, ctx.rounds); r++) {
      for (const [times, argv, e2, servers] of [
        [first, adapter, { ...env, ...listEnv }, []],
        [peer, [AGENT], listEnv, direct10],
      ] as const) {
        const e = editor([...argv], e2);
        try {
          await e.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
          const t0 = performance.timeOrigin + performance.now();
          const res = await e.agent.request(acp.methods.agent.session.new, { cwd: ctx.home, mcpServers: [...servers] });
          const meta = res._meta as { tools: number; listedAt: number };
          if (meta.tools < n) throw new Error(`the agent listed ${meta.tools} tools, expected at least ${n}`);
          // The first round of each warms the daemon's catalogues and the disk cache; it is not counted.
          if (r > 0) times.push(meta.listedAt - t0);
        } finally {
          await e.close();
        }
      }
    }
    row({
      group: GROUP,
      scenario: `acp: session/new with ${n} configured servers (saved catalogues) until the agent's first tools/list`,
      unit: 'ms',
      albedo: median(first),
      peer: median(peer),
      peerLabel: `the same agent starting ${n} servers itself`,
      better: 'lower',
    });
  } finally {
    await d.stop();
  }
}
