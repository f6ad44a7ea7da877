/**
 * `albedo probe`: connect directly (no daemon) to one stdio server,
 * negotiate its era, discover everything, optionally call a tool, read a
 * resource or get a prompt, and print a summary (or one JSON object).
 * The server's whole process group is reaped before the command exits,
 * on success, failure, or Ctrl-C.
 */
import { parseArgs } from 'node:util';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { createAlbedo, type Albedo, type AuthorizeHandler } from '../../api/albedo.ts';
import { openAuthorizationUrl } from '../../api/browser.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import { exposureWarnings } from '../../services/settings/public.ts';
import { safe, toJson } from '../client/output.ts';
import { albedoHome, openHome } from '../client/daemon.ts';
import { CliError } from '../client/errors.ts';
import type { Connection } from '../../api/connection.ts';

export const PROBE_HELP = `usage: albedo probe [options] -- COMMAND [ARGS...]
       albedo probe [options] --url URL [--header 'Name: value'] [--bearer-env VAR]
       albedo probe --url URL --sign-in | --sign-out [--name NAME]

Starts COMMAND as an MCP server over stdio (no shell), or talks Streamable
HTTP to URL, detects its protocol era (2026-07-28 server/discover, or the
initialize handshake of 2024-11-05 … 2025-11-25), lists its tools,
resources, resource templates and prompts, and prints them.

options:
  --json             print one JSON object: era, protocolVersion, serverInfo,
                     capabilities, instructions, tools, resources,
                     resourceTemplates, prompts, warnings, and result
  --timeout MS       startup and request timeout (default 30000)
  --call TOOL        call a tool; --args gives its arguments as a JSON object
  --read URI         read a resource
  --prompt NAME      get a prompt; --args gives its arguments as a JSON object
  --args JSON        arguments for --call or --prompt
  --cwd DIR          working directory of the server (default: the current one)
  --env NAME=VALUE   pass a variable to the server (repeatable); the server
                     otherwise gets only HOME, PATH and TMPDIR
  --url URL          an MCP server over Streamable HTTP (http or https)
  --header 'N: V'    send this header with every HTTP request (repeatable)
  --bearer-env VAR   send 'Authorization: Bearer' with the token in VAR
  --sign-in          sign in with OAuth first (the server answers 401): the
                     authorization URL is printed and opened in the browser
                     (not with ALBEDO_NO_BROWSER set); on a terminal the
                     callback URL may be pasted instead. Tokens go to
                     $ALBEDO_HOME/creds.json; later probes use them.
  --sign-out         forget the server's tokens and exit
  --name NAME        the server's name for its credentials (default: the URL's host and path)

exit status: 0 success; 1 the server could not be reached or the request
failed (4 when it needs a sign-in); 2 bad usage; 3 the tool ran and
reported an error (isError); 7 (--url) $ALBEDO_HOME is not this user's
alone (ALBEDO_HOME_UNSAFE): nothing in it was read.`;

class UsageError extends Error {}

interface ProbeArgs {
  json: boolean;
  timeoutMs: number;
  call?: string;
  read?: string;
  prompt?: string;
  args: Record<string, unknown>;
  cwd?: string;
  env: Record<string, string>;
  command: string[];
  url?: string;
  headers: Record<string, string>;
  bearerTokenEnvVar?: string;
  signIn: boolean;
  signOut: boolean;
  name?: string;
}

function parse(argv: string[]): ProbeArgs | 'help' {
  const dd = argv.indexOf('--');
  const own = dd >= 0 ? argv.slice(0, dd) : argv;
  const command = dd >= 0 ? argv.slice(dd + 1) : [];
  let parsed;
  try {
    parsed = parseArgs({
      args: own,
      strict: true,
      allowPositionals: false,
      options: {
        json: { type: 'boolean', default: false },
        timeout: { type: 'string' },
        call: { type: 'string' },
        read: { type: 'string' },
        prompt: { type: 'string' },
        args: { type: 'string' },
        cwd: { type: 'string' },
        env: { type: 'string', multiple: true },
        url: { type: 'string' },
        header: { type: 'string', multiple: true },
        'bearer-env': { type: 'string' },
        'sign-in': { type: 'boolean', default: false },
        'sign-out': { type: 'boolean', default: false },
        name: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const v = parsed.values;
  if (v.help) return 'help';
  if (v.url !== undefined && command.length > 0) throw new UsageError('give either --url or a command after --, not both');
  if (v.url === undefined && command.length === 0) {
    throw new UsageError(
      'no server: give --url URL, or a command after --, e.g. albedo probe -- npx -y @modelcontextprotocol/server-everything',
    );
  }
  if (v.url === undefined && (v.header?.length || v['bearer-env'] !== undefined))
    throw new UsageError('--header and --bearer-env go with --url');
  if (v.url !== undefined && (v.env?.length || v.cwd !== undefined)) throw new UsageError('--env and --cwd go with a command, not --url');
  if (v.url === undefined && (v['sign-in'] || v['sign-out'] || v.name !== undefined))
    throw new UsageError('--sign-in, --sign-out and --name go with --url');
  if (v['sign-in'] && v['sign-out']) throw new UsageError('give --sign-in or --sign-out, not both');
  if ((v['sign-in'] || v['sign-out']) && (v['bearer-env'] !== undefined || v.header?.some((h) => /^\s*authorization\s*:/i.test(h)))) {
    throw new UsageError(
      '--sign-in/--sign-out use OAuth; they do not go with a fixed Authorization (--bearer-env or an Authorization header)',
    );
  }
  const headers: Record<string, string> = {};
  for (const h of v.header ?? []) {
    const colon = h.indexOf(':');
    if (colon <= 0) throw new UsageError(`--header wants 'Name: value', not ${JSON.stringify(h)}`);
    headers[h.slice(0, colon).trim()] = h.slice(colon + 1).trim();
  }
  const timeoutMs = v.timeout === undefined ? 30_000 : Number(v.timeout);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > 600_000) {
    throw new UsageError(`--timeout must be a whole number of milliseconds from 1 to 600000, not ${JSON.stringify(v.timeout)}`);
  }
  const actions = [v.call, v.read, v.prompt].filter((x) => x !== undefined);
  if (actions.length > 1) throw new UsageError('give at most one of --call, --read and --prompt');
  let args: Record<string, unknown> = {};
  if (v.args !== undefined) {
    if (v.call === undefined && v.prompt === undefined) throw new UsageError('--args goes with --call or --prompt');
    try {
      args = JSON.parse(v.args);
    } catch (err) {
      throw new UsageError(`--args is not valid JSON: ${(err as Error).message}`);
    }
    if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new UsageError('--args must be a JSON object');
    if (v.prompt !== undefined && Object.values(args).some((x) => typeof x !== 'string'))
      throw new UsageError('prompt arguments must all be strings');
  }
  const env: Record<string, string> = {};
  for (const e of v.env ?? []) {
    const eq = e.indexOf('=');
    if (eq <= 0) throw new UsageError(`--env wants NAME=VALUE, not ${JSON.stringify(e)}`);
    env[e.slice(0, eq)] = e.slice(eq + 1);
  }
  return {
    json: v.json!,
    timeoutMs,
    call: v.call,
    read: v.read,
    prompt: v.prompt,
    args,
    cwd: v.cwd,
    env,
    command,
    url: v.url,
    headers,
    bearerTokenEnvVar: v['bearer-env'],
    signIn: v['sign-in']!,
    signOut: v['sign-out']!,
    name: v.name,
  };
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, ' | ').trim();
}

/**
 * `--json`: one line of JSON by the other commands' encoder (bin/client/output.ts
 * toJson), so no control character a server chose reaches the terminal raw.
 */
function json(value: unknown): string {
  return toJson(value, 0) + '\n';
}

export async function probeCommand(argv: string[]): Promise<number> {
  let args: ProbeArgs | 'help';
  try {
    args = parse(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${safe(`albedo probe: ${err.message}`)}\n(see albedo probe --help)\n`);
      return 2;
    }
    throw err;
  }
  if (args === 'help') {
    process.stdout.write(PROBE_HELP + '\n');
    return 0;
  }
  const a = args;
  // An HTTP probe keeps OAuth tokens (and era verdicts) in the state directory; a stdio probe keeps nothing (it reads the
  // home's path for its warnings). $ALBEDO_HOME is read by the CLI's rule (a ~name refused, exit 2).
  let home: string;
  try {
    home = albedoHome();
    // Checked as every other command checks it (bin/client/daemon.ts), before anything in it is read or written:
    // another user's home could hold a creds.json of theirs, whose tokens would be sent, or take the user's.
    if (a.url !== undefined) openHome(home, true)?.close();
  } catch (err) {
    if (err instanceof CliError) {
      process.stderr.write(`${safe(`albedo probe: ${err.code}: ${oneLine(err.message)}`)}\n`);
      return err.exit;
    }
    throw err;
  }
  const albedo: Albedo = await createAlbedo({ home: a.url !== undefined ? home : null, transportWorkers: 1, authorize: terminalAuthorize });
  let interrupted = false;
  const onSignal = (sig: NodeJS.Signals): void => {
    interrupted = true;
    process.stderr.write(`albedo probe: interrupted by ${sig}; stopping the server\n`);
    void albedo.close().finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let code = 0;
  try {
    const httpConfig =
      a.url !== undefined
        ? {
            type: 'http' as const,
            url: a.url,
            headers: a.headers,
            bearerTokenEnvVar: a.bearerTokenEnvVar,
            startupTimeoutMs: a.timeoutMs,
            callTimeoutMs: a.timeoutMs,
          }
        : undefined;
    if (httpConfig && a.signOut) {
      const st = await albedo.signOut(httpConfig, { name: a.name });
      process.stdout.write(a.json ? json({ auth: st }) : `${safe(`signed out of ${st.server}`)}\n`);
      return 0;
    }
    if (httpConfig && a.signIn) {
      const st = await albedo.signIn(httpConfig, { name: a.name });
      const account = st.account ? ` as ${st.account}` : ' (the authorization server named no account)';
      process.stderr.write(`${safe(`albedo probe: signed in to ${st.server}${account}${st.scope ? ` (scope ${st.scope})` : ''}`)}\n`);
    }
    // A working directory or argument in or above $ALBEDO_HOME: a server serving it would hand out daemon.json (issue 20).
    const exposed = httpConfig ? [] : exposureWarnings(home, path.resolve(a.cwd ?? '.'), a.command.slice(1));
    for (const w of exposed) process.stderr.write(`${safe(`albedo probe: warning: ${w.message}`)}\n`);
    const conn = httpConfig
      ? await albedo.connect(httpConfig, { name: a.name })
      : await albedo.connect(
          {
            command: a.command[0]!,
            args: a.command.slice(1),
            cwd: a.cwd,
            env: a.env,
            startupTimeoutMs: a.timeoutMs,
            callTimeoutMs: a.timeoutMs,
          },
          { name: a.command[0] },
        );
    let result: unknown;
    if (a.call !== undefined) {
      result = await conn.callTool(a.call, a.args);
      if ((result as { isError?: boolean }).isError) code = 3;
    } else if (a.read !== undefined) result = await conn.readResource(a.read);
    else if (a.prompt !== undefined) result = await conn.getPrompt(a.prompt, a.args as Record<string, string>);
    const auth =
      httpConfig && conn.server.type === 'http' && conn.server.auth ? await albedo.authStatus(httpConfig, { name: a.name }) : undefined;
    const expires = auth?.expires_at ? `, expires ${auth.expires_at}` : '';
    const authLine =
      auth && auth.state !== 'none' ? `${safe(`auth     ${auth.state}${auth.account ? ` as ${auth.account}` : ''}${expires}`)}\n` : '';
    process.stdout.write(a.json ? json({ ...report(conn, result), ...(auth ? { auth } : {}) }) : human(conn, a, result) + authLine);
  } catch (err) {
    if (interrupted) return 130;
    const e = AlbedoError.is(err) ? err : new AlbedoError('ALBEDO_INTERNAL', String((err as Error)?.stack ?? err));
    process.stderr.write(`${safe(`albedo probe: ${e.code}: ${oneLine(e.message)}`)}\n`);
    if (e.code === 'ALBEDO_NEEDS_SIGN_IN') {
      process.stderr.write(
        `${safe(`albedo probe: sign in with: albedo probe --url ${a.url} --sign-in${a.name ? ` --name ${a.name}` : ''}`)}\n`,
      );
    }
    code = e.code === 'ALBEDO_NEEDS_SIGN_IN' ? 4 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (!interrupted) await albedo.close();
  }
  return code;
}

/**
 * Shows the sign-in URL (printed, and the browser unless ALBEDO_NO_BROWSER);
 * on a terminal, a pasted callback URL is accepted too. Whichever of the
 * loopback callback and the paste comes first wins; the prompt goes away
 * when the sign-in no longer needs it.
 */
const terminalAuthorize: AuthorizeHandler = ({ server, url, signal }) => {
  // The name is printed; the URL (a WHATWG URL's serialization: no control character in it) must reach the browser exact.
  openAuthorizationUrl({ server: safe(server), url, signal });
  if (!process.stdin.isTTY) return undefined;
  return new Promise<string | undefined>((resolve) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    const stop = (): void => {
      rl.close();
      resolve(undefined);
    };
    signal.addEventListener('abort', stop, { once: true });
    rl.question('…or paste the URL the browser was sent back to: ', (line) => {
      signal.removeEventListener('abort', stop);
      rl.close();
      resolve(line.trim() || undefined);
    });
  });
};

function report(conn: Connection, result: unknown): Record<string, unknown> {
  const i = conn.info;
  const out: Record<string, unknown> = {
    era: i.era,
    protocolVersion: i.protocolVersion,
    serverInfo: i.serverInfo,
    capabilities: i.capabilities,
    instructions: i.instructions,
    tools: conn.catalogue.tools,
    resources: conn.catalogue.resources,
    resourceTemplates: conn.catalogue.resourceTemplates,
    prompts: conn.catalogue.prompts,
    warnings: conn.warnings,
  };
  if (result !== undefined) out.result = result;
  return out;
}

function human(conn: Connection, a: ProbeArgs, result: unknown): string {
  const i = conn.info;
  const c = conn.catalogue;
  const lines: string[] = [];
  const who = i.serverInfo ? `${i.serverInfo.title ?? i.serverInfo.name} ${i.serverInfo.version}` : '(no serverInfo)';
  lines.push(`server   ${who}`);
  lines.push(`era      ${i.era} (${i.protocolVersion})`);
  const caps = Object.keys(i.capabilities).join(', ');
  lines.push(`offers   ${caps || 'nothing'}`);
  if (i.instructions) lines.push(`instructions  ${oneLine(i.instructions).slice(0, 160)}${i.instructions.length > 160 ? '…' : ''}`);
  const section = (
    title: string,
    items: Array<{ name: string; description?: string }>,
    key: (x: never) => string = (x: { name: string }) => x.name,
  ): void => {
    lines.push('', `${title} (${items.length})`);
    for (const it of items) {
      const d = it.description ? `  ${oneLine(it.description).slice(0, 100)}` : '';
      lines.push(`  ${key(it as never)}${d}`);
    }
  };
  section('tools', c.tools);
  section('resources', c.resources, (x: { uri: string; name: string }) => `${x.uri} (${x.name})`);
  section('resource templates', c.resourceTemplates, (x: { uriTemplate: string; name: string }) => `${x.uriTemplate} (${x.name})`);
  section('prompts', c.prompts);
  for (const w of conn.warnings) lines.push(`warning: ${oneLine(w)}`);
  // Every line holds text the server chose (names, descriptions, instructions, warnings): shown, not obeyed, one line each.
  let text = lines.map((l) => safe(l)).join('\n') + '\n';
  if (result !== undefined) {
    const what =
      a.call !== undefined ? `tools/call ${a.call}` : a.read !== undefined ? `resources/read ${a.read}` : `prompts/get ${a.prompt}`;
    text += `\n${safe(`${what}:`)}\n${safe(toJson(result), true)}\n`;
  }
  return text;
}
