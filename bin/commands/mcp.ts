/**
 * `albedo mcp …`: the daemon's servers, through its settings API. The CLI
 * never writes a settings file: every change is a request, and the daemon's
 * strict save tries the server before it is saved (a server that cannot
 * start is refused with its error, and nothing changes). Secrets typed on
 * the command line go to the API's `secrets` (creds.json), never to
 * extensions.json (commands/entry.ts).
 */
import type { Command } from 'commander';
import { Client } from '../client/client.ts';
import { CliError, oneLine, usage } from '../client/errors.ts';
import { seg } from '../client/http.ts';
import { cell, emit, note, safe } from '../client/output.ts';
import { EMPTY } from '../../web/shared/labels.js';
import { problemOf, rowOf, serversTable } from '../client/server-rows.ts';
import type { EntryOptions } from './entry.ts';
import { saveLine, saving, secretsOf, target } from '../client/show.ts';
import { signInCommands } from './sign-in.ts';
import { importCommand } from './import.ts';

export const collect = (v: string, prev: string[] = []): string[] => [...prev, v];
/** A server's route. `.` and `..` are refused here, as the daemon refuses them: in a URL they are a step, not a name. */
function srv(name: string, suffix = ''): string {
  if (name === '.' || name === '..') throw usage(`a server name cannot be "${name}"`);
  return `/v1/mcp/servers/${seg(name)}${suffix}`;
}

/** A save's result for a person, and on stderr what the saved entry exposes (with --json, `server.warnings` says it). */
function emitSave(json: boolean, name: string, r: any): void {
  emit(json, r, () => safe(saveLine(name, r)));
  if (!json) for (const w of r.server?.warnings ?? []) note(safe(`albedo: warning: ${name}: ${oneLine(String(w.message))}`));
}

/**
 * The name of `add`/`edit`: one that starts with `-` is refused, as it can
 * only have come after a `--` (`albedo mcp add -- -- cmd`), and the words
 * after the first `--` would then not be the server's command.
 */
function nameBeforeDashes(name: string, verb: string): void {
  if (name.startsWith('-')) throw usage(`a server name cannot start with "-" (albedo mcp ${verb} NAME -- COMMAND ARGS…)`);
}

/** The words after `--` on the command line, or null when there is no `--`. */
function afterDashes(): string[] | null {
  const i = process.argv.indexOf('--', 2);
  return i < 0 ? null : process.argv.slice(i + 1);
}

function entryOptions(cmd: Command): Command {
  return cmd
    .option('--url <url>', 'an MCP server over Streamable HTTP')
    .option(
      '--header <header>',
      "an HTTP header, 'Name: value' (repeatable); a literal value is stored as a secret, 'Name: ${VAR}' " +
        "names the daemon's variable VAR; 'Authorization: Bearer …' is the bearer token (a literal value is not private: see below)",
      collect,
    )
    .option(
      '--header-from <name=var>',
      'a header whose value is read here, privately, and stored as a secret: Name=VAR takes ' +
        'the value of VAR in this environment, Name=- reads it from stdin (not echoed on a terminal)',
    )
    .option('--bearer-env <var>', "send 'Authorization: Bearer' with the token in the daemon's variable VAR")
    .option(
      '--bearer-from <var>',
      'the bearer token, read here, privately, and stored as a secret: VAR takes the value of VAR ' +
        'in this environment, - reads it from stdin (not echoed on a terminal)',
    )
    .option('--command <command>', "the server's command line, split by shell quoting rules (no shell runs); or give it after --")
    .option(
      '--env <name=value>',
      "a variable for a command server (repeatable): NAME=VALUE is stored as a secret, NAME='${VAR}' " +
        "names the daemon's variable, NAME alone takes the value of NAME here (NAME=VALUE is not private: see below)",
      collect,
    )
    .option('--cwd <dir>', "the server's working directory (made absolute)")
    .option('--startup-timeout <ms>', 'start-up timeout (startupTimeoutMs)')
    .option('--call-timeout <ms>', 'timeout of one request (callTimeoutMs)')
    .option('--dry-run', 'try the server and report, without saving')
    .option('--json', 'print the save result as one JSON object: { saved, created, check, server }')
    .addHelpText('after', PRIVATE_FORMS);
}

const PRIVATE_FORMS = `
Secrets on the command line: every argument of a running command (a literal
--header 'X-Key: v', 'Authorization: Bearer TOKEN', --env NAME=VALUE) can be
read by any local user in /proc/PID/cmdline while it runs. Private forms:
  --env NAME, --bearer-from VAR, --header-from Name=VAR
      the value of a variable of this command's environment (readable only
      by you and root); e.g. read -rs TOKEN && export TOKEN, then --bearer-from TOKEN
  --bearer-from -, --header-from Name=-
      read from stdin: typed without echo on a terminal, or piped
      (printf %s "$TOKEN" | albedo mcp add …; printf is a shell builtin)
  'Name: \${VAR}', --env 'NAME=\${VAR}', --bearer-env VAR
      name a variable of the daemon: no value passes at all`;

type AddOptions = EntryOptions & { disabled?: boolean; replace?: boolean; dryRun?: boolean; json?: boolean };
type EditOptions = EntryOptions & { unsetEnv?: string[]; unsetHeader?: string[]; dryRun?: boolean; json?: boolean };

export function mcpCommands(program: Command): void {
  const mcp = program
    .command('mcp')
    .description(
      'the MCP servers of the daemon: list, add, edit, remove, enable, disable, sign in, import; ' +
        'with no subcommand on a terminal, the /mcp screen',
    );

  mcp
    .command('list')
    .alias('ls')
    .description('every configured server, in file order')
    .option('--json', 'print a JSON array of servers: { name, enabled, config, secrets, tools, description, lastError, state, auth, … }')
    .action(async (o: { json?: boolean }) => {
      const { body } = await new Client().call('GET', '/v1/mcp/servers');
      if (body.invalid)
        note(`albedo: extensions.json is broken (${body.invalid.length} problem(s)); the servers shown are the last valid ones`);
      emit(!!o.json, body.servers, () =>
        body.servers.length
          ? serversTable(body.servers, { header: 'TARGET', cell: (s, max) => cell(target(s.config), max) })
          : 'no servers configured (albedo mcp add NAME …)',
      );
    });

  mcp
    .command('show')
    .argument('<name>')
    .description('one server: its state, tools, sign-in, what it runs or reaches, which secrets are stored, its problem in full')
    .option('--json', 'print the server as one JSON object')
    .action(async (name: string, o: { json?: boolean }) => {
      const { body: s } = await new Client().call('GET', srv(name));
      emit(!!o.json, s, () => {
        const [, type, state, tools, signIn] = rowOf(s);
        return [
          s.name,
          `  type:     ${type}`,
          `  state:    ${state}`,
          `  tools:    ${tools}`,
          `  sign-in:  ${signIn}`,
          `  target:   ${target(s.config)}`,
          `  secrets:  ${secretsOf(s) || EMPTY}`,
          ...(s.description ? [`  about:    ${cell(s.description, 200)}`] : []),
          ...(s.lastError ? [`  problem:  ${problemOf(s)} (${s.lastError.code})`] : []),
          ...(s.warnings ?? []).map((w: any) => `  warning:  ${oneLine(String(w.message))}`),
        ]
          .map((l) => safe(l))
          .join('\n');
      });
    });

  entryOptions(mcp.command('add').argument('<name>').argument('[command...]', 'after --: the command and its arguments'))
    .description('add a server (the daemon tries it first: one that cannot start is refused and nothing is saved)')
    .option('--disabled', 'save it switched off (not tried)')
    .option('--replace', 'replace a server of that name (otherwise adding an existing name is refused)')
    .action(async (name: string, words: string[], o: AddOptions) => {
      nameBeforeDashes(name, 'add');
      const argv = afterDashes();
      if (words.length && argv === null) throw usage(`put the server's command after -- (albedo mcp add ${name} -- ${words.join(' ')})`);
      const { entryParts, privateValues, putBody } = await import('./entry.ts');
      const parts = entryParts(o, argv, await privateValues(o));
      if (parts.kind === null) throw usage('give --url URL, --command "…" or -- COMMAND ARGS');
      const body = putBody(parts, !o.disabled);
      const r = await saving(name, { tries: !o.disabled, json: o.json }, () =>
        new Client().call('PUT', `${srv(name)}${o.dryRun ? '?dry_run=true' : ''}`, {
          body,
          headers: o.replace ? {} : { 'if-none-match': '*' },
        }),
      ).then(
        (x) => x.body,
        (err) => {
          if (err instanceof CliError && err.code === 'ALBEDO_PRECONDITION_FAILED') {
            throw new CliError(
              err.code,
              `a server named ${JSON.stringify(name)} exists: change it with albedo mcp edit, or add --replace`,
              err.exit,
            );
          }
          throw err;
        },
      );
      emitSave(!!o.json, name, r);
    });

  entryOptions(mcp.command('edit').argument('<name>').argument('[command...]', 'after --: a new command and its arguments'))
    .description('change a server (a JSON merge patch; the daemon tries it first, as for add)')
    .option('--unset-env <name>', 'remove a variable (named or stored) (repeatable)', collect)
    .option('--unset-header <name>', 'remove a header (named or stored; Authorization: the bearer token) (repeatable)', collect)
    .action(async (name: string, words: string[], o: EditOptions) => {
      nameBeforeDashes(name, 'edit');
      const argv = afterDashes();
      if (words.length && argv === null) throw usage(`put the server's command after -- (albedo mcp edit ${name} -- ${words.join(' ')})`);
      const [{ entryParts, privateValues }, { patchBody }] = await Promise.all([import('./entry.ts'), import('./entry-patch.ts')]);
      const given = await privateValues(o);
      const client = new Client();
      const cur = await client.call('GET', srv(name));
      const patch = patchBody(entryParts(o, argv, given), cur.body, { env: o.unsetEnv ?? [], header: o.unsetHeader ?? [] });
      const etag: Record<string, string> = typeof cur.headers.etag === 'string' ? { 'if-match': cur.headers.etag } : {};
      const { body: r } = await saving(name, { tries: cur.body.enabled !== false, json: o.json }, () =>
        client.call('PATCH', `${srv(name)}${o.dryRun ? '?dry_run=true' : ''}`, {
          body: patch,
          headers: { 'content-type': 'application/merge-patch+json', ...etag },
        }),
      );
      emitSave(!!o.json, name, r);
    });

  mcp
    .command('remove')
    .aliases(['rm', 'delete'])
    .argument('<name>')
    .description('remove a server and everything stored for it (typed secrets, sign-in, saved catalogue)')
    .option('--json', 'print one JSON object: { removed }')
    .action(async (name: string, o: { json?: boolean }) => {
      await new Client().call('DELETE', srv(name));
      emit(!!o.json, { removed: name }, () => safe(`removed ${name}`));
    });

  for (const what of ['enable', 'disable'] as const) {
    mcp
      .command(what)
      .argument('<name>')
      .description(what === 'enable' ? 'switch a server on (it is tried first)' : 'switch a server off (kept, never dialled)')
      .option('--json', 'print the save result as one JSON object: { saved, created, check, server }')
      .action(async (name: string, o: { json?: boolean }) => {
        const { body: r } = await saving(name, { tries: what === 'enable', json: o.json }, () =>
          new Client().call('POST', srv(name, `/${what}`)),
        );
        emitSave(!!o.json, name, r);
      });
  }

  signInCommands(mcp);
  importCommand(mcp);

  // Bare `albedo mcp`: the /mcp screen (bin/screen/, loaded only now). Set after every subcommand is declared, as commander
  // copies allowExcessArguments into the subcommands declared after it; words that are not a subcommand reach the action.
  mcp.allowExcessArguments().action(async () => {
    // `albedo mcp bogus`: the unknown command it always was.
    if (mcp.args.length) return (mcp as unknown as { unknownCommand(): never }).unknownCommand();
    // Not a terminal (a pipe, a script): the help on stderr and exit 2, as `albedo mcp` has always done there.
    if (!process.stdin.isTTY || !process.stdout.isTTY) return mcp.help({ error: true });
    process.exitCode = await (await import('../screen/app.ts')).openScreen();
  });
}
