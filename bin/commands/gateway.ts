/**
 * `albedo gateway …`: the daemon's gateways (named compositions it serves
 * as one MCP server, docs/config.md "Gateways") and their tokens, through
 * `/v1/gateways`. `albedo gateway NAME` (and `--server NAME`) is the
 * gateway itself as a stdio MCP server (commands/gateway-stdio.ts, loaded
 * only then): what an MCP client's config runs. A subcommand's name is
 * never a gateway's (protocol/gateway.ts RESERVED_GATEWAY_NAMES), so the
 * two forms cannot be confused.
 */
import type { Command } from 'commander';
import { Client } from '../client/client.ts';
import { CliError, oneLine, usage } from '../client/errors.ts';
import { seg } from '../client/http.ts';
import { cell, emit, note, safe, table, terminalWidth } from '../client/output.ts';

const collect = (v: string, prev: string[] = []): string[] => [...prev, v];
const route = (name: string, suffix = ''): string => `/v1/gateways/${seg(name)}${suffix}`;

interface AddOptions {
  server?: string;
  include?: string[];
  exclude?: string[];
  profile?: string;
  tools?: string;
  contextBudget?: string;
  resultBudget?: string;
  disabled?: boolean;
  replace?: boolean;
  json?: boolean;
}

/**
 * `a,b` (repeatable) → ['a', 'b']. A list given that names no server (`--include ""`, an unset variable) is refused:
 * `include: []` would save a gateway that composes nothing, and `exclude: []` one that says nothing.
 */
function names(v: string[] | undefined, flag: string): string[] | undefined {
  const out = v?.flatMap((x) => x.split(',').map((s) => s.trim())).filter((s) => s !== '');
  if (out && !out.length) throw usage(`${flag} names no server: give it server names (a,b)`);
  return out;
}

function integer(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v.trim())) throw usage(`${flag} takes a whole number of tokens, not ${JSON.stringify(v)}`);
  return Number(v);
}

/** The PUT body the options make, as the file will hold it (nothing left out is spelled). */
export function gatewayBody(o: AddOptions): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const include = names(o.include, '--include');
  const exclude = names(o.exclude, '--exclude');
  if (o.server !== undefined) body.server = o.server;
  if (include || exclude) body.servers = { ...(include ? { include } : {}), ...(exclude ? { exclude } : {}) };
  if (o.profile !== undefined) body.profile = o.profile;
  if (o.tools !== undefined) body.tools = o.tools;
  const context = integer(o.contextBudget, '--context-budget');
  const result = integer(o.resultBudget, '--result-budget');
  if (context !== undefined) body.contextBudget = context;
  if (result !== undefined) body.resultBudget = result;
  if (o.disabled) body.enabled = false;
  return body;
}

/** What a gateway serves, in a few words. */
function serves(g: any): string {
  const d = g.definition ?? {};
  if (d.server !== undefined) return `server ${d.server}`;
  const inc: string[] | undefined = d.servers?.include;
  const exc: string[] | undefined = d.servers?.exclude;
  const what = inc ? inc.join(', ') || 'no server' : 'every enabled server';
  return exc?.length ? `${what} but ${exc.join(', ')}` : what;
}

function problemLine(g: any): string {
  return (g.problems ?? []).map((p: any) => oneLine(String(p.message))).join('; ');
}

export function gatewayCommands(program: Command): void {
  const gateway = program
    .command('gateway')
    .description(
      'gateways: named compositions the daemon serves as one MCP server (add, list, remove, token); ' +
        'albedo gateway NAME runs one as a stdio MCP server',
    )
    .usage('[NAME | --server NAME | --session ID] | <command> [options]')
    .addHelpText(
      'after',
      '\nalbedo gateway NAME: serve gateway NAME on stdin/stdout, for an MCP client to run' +
        '\nalbedo gateway --server NAME: serve the one configured server NAME the same way, under its own names' +
        "\nalbedo gateway --session ID: serve ACP session ID's gateway (what albedo acp gives its agent)",
    );

  gateway
    .command('add')
    .argument('<name>')
    .description("save a gateway (the daemon's gateways section of extensions.json); its servers need not exist yet")
    .option('--server <server>', 'pass one configured server through, under its own names (takes none of the options below)')
    .option('--include <names>', 'compose only these servers (a,b; repeatable)', collect)
    .option('--exclude <names>', 'compose every enabled server but these (a,b; repeatable)', collect)
    .option('--profile <profile>', 'the provider profile tool schemas are shaped for (portable when absent)')
    .option('--tools <mode>', 'all, deferred or auto: which tool definitions the client is given')
    .option('--context-budget <n>', "the client model's context in tokens, for --tools auto")
    .option('--result-budget <n>', 'the most one result may put in the context, in estimated tokens')
    .option('--disabled', 'save it switched off (kept, answers nobody)')
    .option('--replace', 'replace a gateway of that name (otherwise adding an existing name is refused)')
    .option('--json', 'print the saved gateway as one JSON object')
    .action(async (name: string, o: AddOptions) => {
      const body = gatewayBody(o);
      const { body: g } = await new Client()
        .call('PUT', route(name), { body, headers: o.replace ? {} : { 'if-none-match': '*' } })
        .catch((err: unknown) => {
          if (err instanceof CliError && err.code === 'ALBEDO_PRECONDITION_FAILED') {
            const why = `a gateway named ${JSON.stringify(name)} exists: add --replace to replace it`;
            throw new CliError(err.code, why, err.exit, err.path);
          }
          throw err;
        });
      emit(!!o.json, g, () => safe(`saved gateway ${name} (${g.kind}: ${serves(g)})`));
      if (!o.json && g.problems?.length) note(safe(`albedo: warning: ${name}: ${problemLine(g)}`));
    });

  gateway
    .command('list')
    .alias('ls')
    .description('every gateway, in file order: what it serves, its tokens and clients, its problems')
    .option('--json', 'print a JSON array of gateways: { name, definition, kind, problems, tokens, clients }')
    .action(async (o: { json?: boolean }) => {
      const { body } = await new Client().call('GET', '/v1/gateways');
      if (body.invalid)
        note(`albedo: extensions.json is broken (${body.invalid.length} problem(s)); the gateways shown are the last valid ones`);
      const all = body.gateways as any[];
      emit(!!o.json, all, () =>
        all.length
          ? table(
              ['NAME', 'KIND', 'SERVES', 'TOKENS', 'CLIENTS', 'PROBLEM'],
              all.map((g) => [
                g.definition?.enabled === false ? `${g.name} (off)` : g.name,
                g.kind,
                cell(serves(g), 50),
                String(g.tokens.length),
                String(g.clients.length),
                problemLine(g) || '—',
              ]),
              terminalWidth(),
            )
          : 'no gateways (albedo gateway add NAME …)',
      );
    });

  gateway
    .command('remove')
    .alias('rm')
    .argument('<name>')
    .description('remove a gateway and revoke its tokens')
    .option('--json', 'print one JSON object: { removed }')
    .action(async (name: string, o: { json?: boolean }) => {
      await new Client().call('DELETE', route(name));
      emit(!!o.json, { removed: name }, () => safe(`removed gateway ${name} (its tokens revoked)`));
    });

  gateway
    .command('token')
    .argument('<name>')
    .description('mint a token for a gateway (printed once, alone on stdout), or revoke one or all of its tokens')
    .option('--revoke <id>', 'revoke the token of this id (albedo gateway list --json shows the ids)')
    .option('--revoke-all', 'revoke every token of the gateway')
    .option('--json', 'print one JSON object: { id, token, created } (or { revoked })')
    .action(async (name: string, o: { revoke?: string; revokeAll?: boolean; json?: boolean }) => {
      if (o.revoke !== undefined && o.revokeAll) throw usage('give --revoke ID or --revoke-all, not both');
      // An empty id would name the route of every token (…/tokens/): a usage error, not a 404 for "no route".
      if (o.revoke !== undefined && !o.revoke.trim()) throw usage('--revoke takes a token id (albedo gateway list --json shows them)');
      const client = new Client();
      if (o.revoke !== undefined) {
        await client.call('DELETE', route(name, `/tokens/${seg(o.revoke)}`));
        emit(!!o.json, { revoked: 1 }, () => safe(`revoked token ${o.revoke} of ${name}`));
        return;
      }
      if (o.revokeAll) {
        const { body } = await client.call('DELETE', route(name, '/tokens'));
        emit(!!o.json, body, () => safe(`revoked ${body.revoked} token(s) of ${name}`));
        return;
      }
      const { body: m } = await client.call('POST', route(name, '/tokens'));
      emit(!!o.json, m, () => m.token);
      const where = `http://127.0.0.1:${client.info!.port}/mcp/gateways/${name}`;
      note(
        safe(
          `albedo: this token (id ${m.id}) is shown once and not kept: give it to the MCP client as ` +
            `Authorization: Bearer <token> for ${where}; albedo gateway token ${name} --revoke ${m.id} revokes it`,
        ),
      );
    });

  // Bare `albedo gateway NAME` / `--server NAME`: the gateway on stdio. Its words are read here, not declared: commander
  // reads a group's options after its subcommand's name too, so a declared --server would take `add g --server s`'s.
  // Set after the subcommands are declared, as commander copies these settings into the subcommands declared after them.
  gateway
    .allowUnknownOption()
    .allowExcessArguments()
    .action(async () => {
      const target = bareTarget(gateway.args);
      if (!target) return gateway.help({ error: true });
      const { runGatewayStdio } = await import('./gateway-stdio.ts');
      process.exitCode = await runGatewayStdio(target);
    });
}

/** `NAME`, `--server NAME`, `--session ID` (or `--server=NAME`, `--session=ID`) (null: no words); anything else is bad usage. */
export function bareTarget(words: string[]): { name: string } | { server: string } | { session: string } | null {
  if (words.length === 0) return null;
  const [a, b, ...rest] = words;
  if (a === '--server' && b !== undefined && !rest.length) return { server: b };
  if (a!.startsWith('--server=') && b === undefined && a!.length > 9) return { server: a!.slice(9) };
  if (a === '--session' && b !== undefined && b !== '' && !rest.length) return { session: b };
  if (a!.startsWith('--session=') && b === undefined && a!.length > 10) return { session: a!.slice(10) };
  if (a === '--session') throw usage('--session needs an ACP session id (albedo gateway --session ID)');
  if (!a!.startsWith('-') && b === undefined) return { name: a! };
  if (a === '--server' && b === undefined) throw usage('--server needs a value (albedo gateway --server NAME)');
  throw usage(`albedo gateway takes a gateway NAME or --server NAME, not ${JSON.stringify(words.join(' '))} (albedo gateway --help)`);
}
