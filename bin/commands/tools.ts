/**
 * `albedo tools` and `albedo call`: the model-facing tools of a session of
 * the daemon, and one call. With `--session ID` they use that open session
 * (a harness's); without, they open one for the command (`tools`: every
 * enabled server, `--profile` for the schemas' dialect; `call SERVER/TOOL`:
 * that server), and close it when done — also on Ctrl-C, SIGTERM or SIGHUP,
 * even one that comes while the session is being opened.
 */
import type { Command } from 'commander';
import { Client } from '../client/client.ts';
import { CliError, EXIT, oneLine, usage } from '../client/errors.ts';
import { seg } from '../client/http.ts';
import { cell, emit, note, safe, table } from '../client/output.ts';

/** The exit status of a command ended by a signal: 128 + its number, as a shell reports it. */
const SIGNAL_EXIT: Record<'SIGINT' | 'SIGTERM' | 'SIGHUP', number> = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 };

/**
 * The servers a session for `albedo call NAME` needs: for `SERVER/TOOL`,
 * that server only (not every enabled one); for any other name, all. A
 * server name may itself hold `/`: then each prefix that names a configured
 * server is included (the daemon tries the splits left to right). A name
 * whose prefix names no configured server gets all of them, so the daemon
 * can say which names come nearest.
 */
async function callServers(client: Client, name: string): Promise<string[] | undefined> {
  const first = name.indexOf('/');
  if (first <= 0) return undefined;
  const { body } = await client.call('GET', '/v1/mcp/servers');
  const configured = new Set((body.servers as Array<{ name: string }>).map((s) => s.name));
  const prefixes: string[] = [];
  for (let i = first; i >= 0; i = name.indexOf('/', i + 1)) if (configured.has(name.slice(0, i))) prefixes.push(name.slice(0, i));
  return prefixes.length ? prefixes : undefined;
}

/**
 * A session for the command: the given one, or one opened now and closed by
 * `close()`. SIGINT, SIGTERM and SIGHUP are handled from before the open is
 * sent: a signal while it is in flight closes the session once the open
 * answers, a signal later closes it at once; then the command exits 130,
 * 143 or 129. So no session of the command outlives it.
 */
async function sessionFor(
  client: Client,
  id: string | undefined,
  open: () => Promise<Record<string, unknown>>,
): Promise<{ id: string; close(): Promise<void> }> {
  if (id !== undefined) return { id, close: async () => {} };
  let opened: string | null = null;
  let signalled: number | null = null;
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closed ??=
      opened === null
        ? Promise.resolve()
        : client.call('DELETE', `/v1/sessions/${seg(opened)}`, { accept: [404], timeoutMs: 60_000 }).then(
            () => {},
            () => {},
          ));
  const onSignal = (sig: keyof typeof SIGNAL_EXIT): void => {
    if (signalled !== null) return;
    signalled = SIGNAL_EXIT[sig];
    // While the open is in flight there is nothing to close yet: the open's answer does it (below).
    if (opened !== null) void close().finally(() => process.exit(signalled!));
  };
  for (const sig of Object.keys(SIGNAL_EXIT) as Array<keyof typeof SIGNAL_EXIT>) process.on(sig, onSignal);
  let s: any;
  try {
    const body = await open();
    if (signalled !== null) process.exit(signalled);
    s = (await client.call('POST', '/v1/sessions', { body })).body;
  } catch (err) {
    if (signalled !== null) process.exit(signalled);
    throw err;
  }
  opened = s.id as string;
  if (signalled !== null) {
    await close();
    process.exit(signalled);
  }
  for (const w of s.warnings ?? []) note(`albedo: ${safe(String(w))}`);
  for (const srv of s.servers ?? []) {
    if (srv.state !== 'ready' && srv.state !== 'advertised' && srv.state !== 'disabled') {
      note(safe(`albedo: ${srv.name}: ${srv.state}${srv.reason ? ` (${srv.reason.code}: ${oneLine(String(srv.reason.message))})` : ''}`));
    }
  }
  return { id: opened, close };
}

/** The FROM column: `server/tool` from the listing's origin fields; `albedo` for Albedo's own tools. */
function origin(t: { server?: string | null; tool?: string }): string {
  if (t.server === null) return 'albedo';
  return typeof t.server === 'string' && typeof t.tool === 'string' ? `${t.server}/${t.tool}` : '';
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

const KINDS: Record<string, string> = { string: 'a string', number: 'a number', boolean: 'true or false' };

/** Where JSON text breaks: line, column and a short excerpt marking the place (jsonc-parser finds it, loaded only then). */
async function whereJsonBreaks(raw: string, v8: string): Promise<string> {
  const { parse, printParseErrorCode } = await import('jsonc-parser');
  const errors: Array<{ error: number; offset: number }> = [];
  parse(raw, errors as never, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  const e = errors[0];
  const offset = e?.offset ?? Number(/at position (\d+)/.exec(v8)?.[1] ?? raw.length);
  const why = e
    ? printParseErrorCode(e.error as never)
        .replace(/([a-z])([A-Z])/g, '$1 $2')
        .toLowerCase()
    : v8.replace(/ in JSON at position.*$/, '');
  const before = raw.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  const flat = (x: string): string => x.replace(/\s+/g, ' ');
  const head = flat(before.slice(-24));
  const tail = flat(raw.slice(offset, offset + 16));
  const excerpt = `${offset > 24 ? '…' : ''}${head} <-- here${tail ? ` ${tail}${offset + 16 < raw.length ? '…' : ''}` : ''}`;
  return `--args is not valid JSON: ${why || 'unexpected input'} at line ${line}, column ${column}: ${excerpt.trim()}`;
}

/** --args: a JSON object; invalid JSON says where it breaks, anything else what it is. */
async function parseArgs(raw: string | undefined): Promise<Record<string, unknown> | undefined> {
  if (raw === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch (err) {
    throw usage(await whereJsonBreaks(raw, err instanceof Error ? err.message : ''));
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    const got = v === null ? 'null' : Array.isArray(v) ? 'an array' : (KINDS[typeof v] ?? typeof v);
    throw usage(`--args must be a JSON object ({"name": value, …}), not ${got}`);
  }
  return v as Record<string, unknown>;
}

/**
 * The daemon refused the arguments (they do not match the tool's input
 * schema): its message names the argument; the API path it points at
 * (body.arguments.…) is the request's, not the command's, so it is left out.
 */
function argumentsRefused(err: unknown): unknown {
  if (!(err instanceof CliError) || err.code !== 'ALBEDO_INVALID_ARGUMENT' || err.path?.[0] !== 'body' || err.path[1] !== 'arguments')
    return err;
  return new CliError(err.code, err.message, err.exit);
}

export function sessionCommands(program: Command): void {
  program
    .command('tools')
    .description('the tools a session advertises to the model (without --session: a session opened for this command)')
    .option('--session <id>', 'an open session of the daemon')
    .option('--profile <profile>', "the schemas' dialect: portable (default), openai, openai-strict, anthropic, gemini, bedrock")
    .option(
      '--json',
      'print one JSON object: { session, generation, profile, tools: [{ name, description, inputSchema, server, tool, kind }] }',
    )
    .action(async (o: { session?: string; profile?: string; json?: boolean }) => {
      const client = new Client();
      const s = await sessionFor(client, o.session, async () => (o.profile === undefined ? {} : { profile: o.profile }));
      try {
        const q = o.session !== undefined && o.profile !== undefined ? `?profile=${encodeURIComponent(o.profile)}` : '';
        const { body } = await client.call('GET', `/v1/sessions/${seg(s.id)}/tools${q}`);
        const out = { session: o.session ?? null, generation: body.generation, profile: body.profile, tools: body.tools };
        emit(!!o.json, out, () =>
          body.tools.length
            ? table(
                ['TOOL', 'FROM', 'DESCRIPTION'],
                body.tools.map((t: any) => [t.name, origin(t), cell(String(t.description).replace(/^\[server [^\]]*\]\s*/, ''), 70)]),
              )
            : 'no tools (no server is enabled and ready; see albedo mcp list)',
        );
      } finally {
        await s.close();
      }
    });

  program
    .command('call')
    .argument('<name>', 'a tool: its advertised name (albedo tools), SERVER/TOOL, or a tool name only one server has')
    .description(
      "call one tool (without --session: in a session opened for this command); the arguments are checked against the tool's " +
        'input schema first (exit 2 naming the argument); exit 6 when the tool reports an error',
    )
    .option('--args <json>', 'the arguments, a JSON object')
    .option('--session <id>', 'an open session of the daemon')
    .option('--timeout <ms>', "the call's timeout (default: the server's callTimeoutMs)")
    .option('--json', 'print the MCP result as one JSON object')
    .action(async (name: string, o: { args?: string; session?: string; timeout?: string; json?: boolean }) => {
      const args = await parseArgs(o.args);
      const timeoutMs = o.timeout === undefined ? undefined : Number(o.timeout);
      if (timeoutMs !== undefined && (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 3_600_000)) {
        throw usage('--timeout must be a whole number of milliseconds from 1 to 3600000');
      }
      const client = new Client();
      const s = await sessionFor(client, o.session, async () => {
        const include = await callServers(client, name);
        return include ? { servers: { include } } : {};
      });
      try {
        const body: Record<string, unknown> = { name };
        if (args) body.arguments = args;
        if (timeoutMs !== undefined) body.timeoutMs = timeoutMs;
        const { body: r } = await client.call('POST', `/v1/sessions/${seg(s.id)}/calls`, { body });
        // A person's terminal gets the text with its control characters shown, not obeyed; a pipe gets it as the tool sent it.
        emit(!!o.json, r.result, () => (process.stdout.isTTY ? safe(resultText(r.result), true) : resultText(r.result)));
        if (r.result?.isError === true) process.exitCode = EXIT.toolError;
      } catch (err) {
        if (err instanceof CliError && err.code === 'ALBEDO_NEEDS_SIGN_IN') {
          note(safe(`albedo: sign in first: albedo mcp sign-in ${name.includes('/') ? name.split('/')[0] : 'SERVER'}`));
        }
        throw argumentsRefused(err);
      } finally {
        await s.close();
      }
    });
}
