/**
 * `albedo acp -- AGENT [ARGS…]`: an ACP v1 proxy between the editor (this
 * process's stdin and stdout, newline-delimited JSON through the official
 * SDK) and the agent (a child, under the stdio launcher). Every message passes
 * through raw, both ways, except:
 *
 * - `initialize`: the agent's answer with `mcpCapabilities` http and sse false
 *   (the adapter takes the editor's stdio servers only); the daemon is not
 *   contacted.
 * - `session/new`, `session/load`, `session/resume`: the editor's servers go
 *   to the daemon (an ACP session: an Albedo session with them as its
 *   overlay), and the agent gets one MCP server instead, the session's
 *   gateway. The attachment's lease is then kept (lease.ts).
 * - `session/prompt`: the Albedo session's turn is marked (submit, then
 *   turn_end when the agent answers, also with an error).
 * - `$/cancel_request`: the SDK maps it to the forwarded request's own id.
 *
 * Output to the editor is bounded (writer.ts): an editor that stops reading
 * is cut off; the agent's prompts in flight still run to their end (so their
 * turns are marked), then the adapter releases its attachments and exits 1.
 * The agent's exit ends the adapter (status 1) after every pending editor
 * request was answered with an error. stdout carries only JSON-RPC;
 * diagnostics go to stderr.
 */
import { agent as agentApp, client as clientApp, ndJsonStream, RequestError, type AgentConnection } from '@agentclientprotocol/sdk';
import type { AnyMessage, ClientConnection, Stream } from '@agentclientprotocol/sdk';
import { Readable } from 'node:stream';
import { errorLine } from '../client/errors.ts';
import { safe } from '../client/output.ts';
import { startAgent, type AgentEnd } from './agent-process.ts';
import { DaemonLink, type AttachBody, type Attachment } from './daemon-link.ts';
import { LeaseKeeper } from './lease.ts';
import { attachParams, editorInitialize, newSessionParams, rpcError } from './params.ts';
import { BoundedWriter, type CutReason } from './writer.ts';

/** An error code of the adapter's own in a JSON-RPC error's data: the agent is gone. */
const AGENT_EXITED = 'ALBEDO_AGENT_EXITED';

const say = (line: string): void => void process.stderr.write(safe(line) + '\n');

function describeEnd(e: AgentEnd): string {
  if ('spawnError' in e) return `could not start: ${e.spawnError}`;
  return e.signal ? `was killed (${e.signal})` : `exited with status ${e.exit}`;
}

/**
 * The editor's stream, watched: which of the editor's requests are still unanswered (their ids, seen coming in and
 * their responses going out), so that the adapter leaves only once each got its answer.
 */
function tracked(raw: Stream): Stream & { answered(): Promise<void> } {
  const open = new Set<unknown>();
  let waiters: Array<() => void> = [];
  const settle = (): void => {
    if (open.size) return;
    for (const w of waiters) w();
    waiters = [];
  };
  const out = raw.writable.getWriter();
  return {
    readable: raw.readable.pipeThrough(
      new TransformStream<AnyMessage, AnyMessage>({
        transform(m, c) {
          if ('method' in m && 'id' in m) open.add(m.id);
          c.enqueue(m);
        },
      }),
    ),
    writable: new WritableStream<AnyMessage>({
      async write(m) {
        await out.write(m);
        if (!('method' in m) && 'id' in m) {
          open.delete(m.id);
          settle();
        }
      },
    }),
    answered: () => new Promise<void>((r) => (open.size ? waiters.push(r) : r())),
  };
}

export async function runAcp(agentCmd: { command: string; args: string[] }): Promise<number> {
  const link = new DaemonLink();
  const child = startAgent(agentCmd.command, agentCmd.args);
  // An agent that cannot start is said before anything else (the editor's first request would only fail with it).
  const first = await Promise.race([child.pid.then(() => null), child.ended]);
  if (first) {
    say(`albedo: ${AGENT_EXITED}: the agent ${JSON.stringify(agentCmd.command)} ${describeEnd(first)}`);
    return 1;
  }
  const sessions = new Map<string, LeaseKeeper>();
  let agentHttp = false;
  let agentEnd: AgentEnd | null = null;
  let inFlight = 0;
  let finishing: Promise<number> | null = null;
  let resolveExit!: (code: number) => void;
  const exited = new Promise<number>((r) => (resolveExit = r));

  const writer = new BoundedWriter(process.stdout, (why: CutReason) => onCut(why));
  const editorStream = tracked(ndJsonStream(writer.stream(), Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>));
  const agentStream = ndJsonStream(child.input, child.output);

  // The agent's failures reach the editor as the agent said them; a connection closed under a request (the agent
  // died) is said as the adapter's own error, with the agent's end.
  const fromAgent = (err: unknown): unknown => {
    if (err instanceof RequestError) return err;
    const how = agentEnd ? `the agent ${describeEnd(agentEnd)}` : 'the agent connection closed';
    return new RequestError(-32603, `${AGENT_EXITED}: ${how}`, { code: AGENT_EXITED });
  };
  /** A request forwarded to the agent; the editor's $/cancel_request (not its disconnection) cancels it there too. */
  const toAgent = async (method: string, params: unknown, signal: AbortSignal): Promise<unknown> => {
    const cancel = new AbortController();
    const onAbort = (): void => {
      if (!editor.signal.aborted) cancel.abort(signal.reason);
    };
    signal.addEventListener('abort', onAbort);
    try {
      return await agentSide.agent.request(method, params, { cancellationSignal: cancel.signal });
    } catch (err) {
      throw fromAgent(err);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  };
  const bodyFor = (cwd: string, mcpServers: unknown[]): AttachBody => ({ cwd, mcpServers, agent: agentCmd, http: agentHttp });

  const keep = (acpSessionId: string, a: Attachment, body: AttachBody): void => {
    void sessions.get(acpSessionId)?.stop(false);
    sessions.set(acpSessionId, new LeaseKeeper(link, acpSessionId, a, body, say));
  };

  async function newSession(params: unknown, signal: AbortSignal): Promise<unknown> {
    const p = newSessionParams(params);
    const body = bodyFor(p.cwd, p.mcpServers);
    const a = await link.create(body).catch((e) => Promise.reject(rpcError(e)));
    let res: any;
    try {
      res = await toAgent('session/new', { ...p, mcpServers: [a.gateway] }, signal);
    } catch (err) {
      await link.close(a.id).catch(() => {});
      throw err;
    }
    if (typeof res?.sessionId === 'string') {
      await link.bind(a, res.sessionId).catch((e) => say(`albedo: acp: binding session ${a.id} failed: ${errorLine(e)}`));
      keep(res.sessionId, a, body);
    }
    return res;
  }

  async function attachSession(method: string, params: unknown, signal: AbortSignal): Promise<unknown> {
    const p = attachParams(params, method);
    const body = bodyFor(p.cwd, p.mcpServers);
    // This adapter's own live attachment would be refused as held: it is given back first.
    const mine = sessions.get(p.sessionId);
    if (mine) {
      sessions.delete(p.sessionId);
      await mine.stop(true);
    }
    const a = await link.attach(p.sessionId, body).catch((e) => Promise.reject(rpcError(e)));
    try {
      const res = await toAgent(method, { ...p, mcpServers: [a.gateway] }, signal);
      keep(p.sessionId, a, body);
      return res;
    } catch (err) {
      await link.release(a).catch(() => {});
      if (a.created) await link.close(a.id).catch(() => {});
      throw err;
    }
  }

  async function prompt(params: unknown, signal: AbortSignal): Promise<unknown> {
    const sid = (params as { sessionId?: unknown } | null)?.sessionId;
    const s = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (s?.lost)
      throw new RequestError(-32603, 'ALBEDO_ATTACHMENT_LOST: the session lost its attachment to Albedo; load or resume it again', {
        code: 'ALBEDO_ATTACHMENT_LOST',
      });
    inFlight++;
    try {
      if (s) await link.activity(s.id, 'submit').catch((e) => say(`albedo: acp: marking the turn failed: ${errorLine(e)}`));
      return await toAgent('session/prompt', params, signal);
    } finally {
      if (s) await link.activity(s.id, 'turn_end').catch((e) => say(`albedo: acp: marking the turn's end failed: ${errorLine(e)}`));
      inFlight--;
      if (writer.cutReason && inFlight === 0) void finish(1);
    }
  }

  // The editor side: this process is the agent the editor talks to.
  const editorApp = agentApp({ name: 'albedo-acp' })
    .onRequest('*', async (ctx) => {
      switch (ctx.method) {
        case 'initialize': {
          const r = editorInitialize(await toAgent('initialize', ctx.params, ctx.signal));
          agentHttp = r.agentHttp;
          return r.result;
        }
        case 'session/new':
          return newSession(ctx.params, ctx.signal);
        case 'session/load':
        case 'session/resume':
          return attachSession(ctx.method, ctx.params, ctx.signal);
        case 'session/prompt':
          return prompt(ctx.params, ctx.signal);
        default:
          return toAgent(ctx.method, ctx.params, ctx.signal);
      }
    })
    .onNotification('*', async (ctx) => {
      if (ctx.method === '$/cancel_request') return; // mapped by the SDK onto the forwarded request
      await agentSide.agent.notify(ctx.method, ctx.params).catch(() => {});
    });

  // The agent side: this process is the client the agent talks to. Its requests go to the editor as they came.
  const agentApp2 = clientApp({ name: 'albedo-acp' })
    .onRequest('*', async (ctx) => {
      if (writer.cutReason) throw new RequestError(-32603, 'the editor is gone', { code: 'ALBEDO_EDITOR_GONE' });
      const cancel = new AbortController();
      const onAbort = (): void => {
        if (!agentSide.signal.aborted) cancel.abort(ctx.signal.reason);
      };
      ctx.signal.addEventListener('abort', onAbort);
      try {
        return await editor.client.request(ctx.method, ctx.params, { cancellationSignal: cancel.signal });
      } finally {
        ctx.signal.removeEventListener('abort', onAbort);
      }
    })
    .onNotification('*', async (ctx) => {
      if (ctx.method === '$/cancel_request' || writer.cutReason) return;
      await editor.client.notify(ctx.method, ctx.params).catch(() => {});
    });

  const agentSide: ClientConnection = agentApp2.connect(agentStream);
  const editor: AgentConnection = editorApp.connect(editorStream);

  function onCut(why: CutReason): void {
    say(
      why === 'overflow'
        ? 'albedo: acp: the editor stopped reading (more than 4 MiB waiting); disconnected it, letting the turns in flight end'
        : 'albedo: acp: writing to the editor failed; disconnected it, letting the turns in flight end',
    );
    editor.close(new Error('the editor side was disconnected'));
    if (inFlight === 0) void finish(1);
  }

  async function finish(code: number): Promise<number> {
    finishing ??= (async () => {
      await Promise.all([...sessions.values()].map((s) => s.stop(true)));
      resolveExit(code);
      return code;
    })();
    return finishing;
  }

  // The editor closed its end (stdin): nothing more will be asked; the attachments are given back and the agent ended.
  void editor.closed.then(() => {
    if (!writer.cutReason && !agentEnd) void finish(0);
  });
  void child.ended.then(async (e) => {
    agentEnd = e;
    agentSide.close(new Error('the agent exited'));
    if (finishing) return;
    say(`albedo: ${AGENT_EXITED}: the agent ${JSON.stringify(agentCmd.command)} ${describeEnd(e)}`);
    // Pending editor requests are answered (with the agent's end) before the adapter goes.
    await editorStream.answered();
    await writer.flushed();
    void finish(1);
  });

  const code = await exited;
  child.stop();
  await writer.flushed();
  return code;
}
