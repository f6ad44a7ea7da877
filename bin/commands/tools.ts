/**
 * `albedo tools` and `albedo call`: the model-facing tools of a session of
 * the daemon, and one call. With `--session ID` they use that open session
 * (a harness's); without, they open one for the command (every enabled
 * server; `--profile` for the schemas' dialect), and close it when done —
 * also on Ctrl-C, so no session of theirs outlives them.
 */
import type { Command } from 'commander';
import { Client } from '../client/client.ts';
import { CliError, EXIT, usage } from '../client/errors.ts';
import { seg } from '../client/http.ts';
import { cell, emit, note, table } from '../client/output.ts';

/** A session for the command: the given one, or one opened now and closed by `close()`. */
async function sessionFor(client: Client, id: string | undefined, profile: string | undefined): Promise<{ id: string; close(): Promise<void> }> {
  if (id !== undefined) return { id, close: async () => {} };
  const { body: s } = await client.call('POST', '/v1/sessions', { body: profile === undefined ? {} : { profile } });
  for (const w of s.warnings ?? []) note(`albedo: ${w}`);
  for (const srv of s.servers ?? []) {
    if (srv.state !== 'ready' && srv.state !== 'advertised' && srv.state !== 'disabled') {
      note(`albedo: ${srv.name}: ${srv.state}${srv.reason ? ` (${srv.reason.code}: ${srv.reason.message})` : ''}`);
    }
  }
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => (closed ??= client.call('DELETE', `/v1/sessions/${seg(s.id)}`, { accept: [404] }).then(() => {}));
  // Ctrl-C: the session is closed (its servers reaped) before the command exits.
  process.once('SIGINT', () => { void close().finally(() => process.exit(130)); });
  return { id: s.id, close };
}

/** The raw names a description's frame states: `[server "x", tool "y"]`. */
function origin(description: string): string {
  const m = /^\[server ("(?:[^"\\]|\\.)*"), tool ("(?:[^"\\]|\\.)*")\]/.exec(description);
  if (!m) return '';
  try {
    return `${JSON.parse(m[1]!)}/${JSON.parse(m[2]!)}`;
  } catch {
    return '';
  }
}

/** The text of a tool result for a person: its text blocks, and a word for each other block. */
function resultText(result: any): string {
  const out: string[] = [];
  for (const b of Array.isArray(result?.content) ? result.content : []) {
    if (b?.type === 'text') out.push(String(b.text));
    else out.push(`[${b?.type ?? 'content'}${b?.mimeType ? ` ${b.mimeType}` : ''}]`);
  }
  if (!out.length && result?.structuredContent !== undefined) out.push(JSON.stringify(result.structuredContent, null, 2));
  if (!out.length && result && !('content' in result)) out.push(JSON.stringify(result, null, 2));
  return out.join('\n');
}

function parseArgs(raw: string | undefined): Record<string, unknown> | undefined {
  if (raw === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw usage('--args must be a JSON object');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw usage('--args must be a JSON object');
  return v as Record<string, unknown>;
}

export function sessionCommands(program: Command): void {
  program.command('tools')
    .description('the tools a session advertises to the model (without --session: a session opened for this command)')
    .option('--session <id>', 'an open session of the daemon')
    .option('--profile <profile>', 'the schemas\' dialect: portable (default), openai, openai-strict, anthropic, gemini, bedrock')
    .option('--json', 'print one JSON object: { session, generation, profile, tools: [{ name, description, inputSchema }] }')
    .action(async (o: { session?: string; profile?: string; json?: boolean }) => {
      const client = new Client();
      const s = await sessionFor(client, o.session, o.profile);
      try {
        const q = o.session !== undefined && o.profile !== undefined ? `?profile=${encodeURIComponent(o.profile)}` : '';
        const { body } = await client.call('GET', `/v1/sessions/${seg(s.id)}/tools${q}`);
        const out = { session: o.session ?? null, generation: body.generation, profile: body.profile, tools: body.tools };
        emit(!!o.json, out, () => (body.tools.length
          ? table(['TOOL', 'FROM', 'DESCRIPTION'], body.tools.map((t: any) => [
            t.name, origin(t.description), cell(t.description.replace(/^\[server [^\]]*\]\s*/, ''), 70),
          ]))
          : 'no tools (no server is enabled and ready; see albedo mcp list)'));
      } finally {
        await s.close();
      }
    });

  program.command('call').argument('<name>', 'an advertised tool name (albedo tools), or SERVER/TOOL')
    .description('call one tool (without --session: in a session opened for this command); exit 6 when the tool reports an error')
    .option('--args <json>', 'the arguments, a JSON object')
    .option('--session <id>', 'an open session of the daemon')
    .option('--timeout <ms>', 'the call\'s timeout (default: the server\'s callTimeoutMs)')
    .option('--json', 'print the MCP result as one JSON object')
    .action(async (name: string, o: { args?: string; session?: string; timeout?: string; json?: boolean }) => {
      const args = parseArgs(o.args);
      const timeoutMs = o.timeout === undefined ? undefined : Number(o.timeout);
      if (timeoutMs !== undefined && (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 3_600_000)) {
        throw usage('--timeout must be a whole number of milliseconds from 1 to 3600000');
      }
      const client = new Client();
      const s = await sessionFor(client, o.session, undefined);
      try {
        const body: Record<string, unknown> = { name };
        if (args) body.arguments = args;
        if (timeoutMs !== undefined) body.timeoutMs = timeoutMs;
        const { body: r } = await client.call('POST', `/v1/sessions/${seg(s.id)}/calls`, { body });
        emit(!!o.json, r.result, () => resultText(r.result));
        if (r.result?.isError === true) process.exitCode = EXIT.toolError;
      } catch (err) {
        if (err instanceof CliError && err.code === 'ALBEDO_NEEDS_SIGN_IN') {
          note(`albedo: sign in first: albedo mcp sign-in ${name.includes('/') ? name.split('/')[0] : 'SERVER'}`);
        }
        throw err;
      } finally {
        await s.close();
      }
    });
}
