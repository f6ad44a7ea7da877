/**
 * The `albedo` command: a commander program. Each command group lives in
 * bin/commands/; this file only declares the program and dispatches.
 *
 * Start-up is part of the contract: the commands that talk to the daemon
 * load only bin/client/ and bin/commands/ (no kernel, no api/, services/ or
 * daemon/ code). `probe` and `daemon` (run) load the kernel, so they are
 * imported on demand, and they parse their own arguments exactly as before.
 * Run it with Node 22 (`npx albedo …` puts the project's Node first on PATH).
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Help } from 'commander';
import { errorLine, EXIT, CliError } from './client/errors.ts';
import { safe } from './client/output.ts';

// A reader that stops reading (`albedo mcp add --help | head -1`) ends the command quietly, as it ends any writer to a
// pipe, not with a stack trace (Node ignores SIGPIPE, so the write fails with EPIPE instead). Only stdout: the daemon logs
// on stderr and must not end with a log reader.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(0);
});

/** The package's version, for --version: package.json read as text (nothing loaded for it). */
const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** What commander refused, as it said it (`error: unknown command 'ls'\n(Did you mean list?)`). */
let refused = '';

/**
 * commander's refusal in the CLI's words, on one line: `unknown command "ls";
 * did you mean "list"? (albedo mcp --help)` — the help of the deepest
 * command the words named.
 */
function usageLine(text: string, words: string[]): string {
  const [first = '', ...rest] = text
    .trim()
    .replace(/^error:\s*/, '')
    .split(/\r?\n/);
  let m = first
    .replace(/'([^']*)'/g, '"$1"')
    .replace(/\.\s+Expected /, ': expected ')
    .replace(/\.$/, '')
    .replace(/^option "(-[^" ,]+)(?:, (--[^" ]+))?[^"]*" argument missing$/, (_all, a: string, b?: string) => `${b ?? a} needs a value`);
  let cmd: Command = program;
  const names = ['albedo'];
  for (const w of words) {
    if (w === '--') break;
    if (w.startsWith('-')) continue;
    const sub = cmd.commands.find((c) => c.name() === w || c.aliases().includes(w));
    if (!sub) break;
    cmd = sub;
    names.push(sub.name());
  }
  // A guess of an alias is the command's name (`ls` → `list`), each said once.
  const guess = /\(Did you mean (?:one of )?(.+)\?\)/
    .exec(rest.join(' '))?.[1]!
    .split(', ')
    .map((g) => cmd.commands.find((c) => c.aliases().includes(g))?.name() ?? g);
  if (guess) m += `; did you mean ${[...new Set(guess)].map((g) => `"${g}"`).join(' or ')}?`;
  return `albedo: ALBEDO_INVALID_ARGUMENT: ${m} (${names.join(' ')} --help)`;
}

/** Each command group's module, loaded only when its word is the command (or for the full help). */
const GROUPS: Record<string, () => Promise<(parent: Command) => void>> = {
  daemon: async () => (await import('./commands/daemon-control.ts')).daemonControl,
  status: async () => (await import('./commands/status.ts')).statusCommand,
  mcp: async () => (await import('./commands/mcp.ts')).mcpCommands,
  tools: async () => (await import('./commands/tools.ts')).sessionCommands,
  call: async () => (await import('./commands/tools.ts')).sessionCommands,
  open: async () => (await import('./commands/open.ts')).openCommand,
  gateway: async () => (await import('./commands/gateway.ts')).gatewayCommands,
  acp: async () => (await import('./commands/acp.ts')).acpCommand,
};

const program = new Command('albedo')
  .description('Albedo: one daemon that holds your MCP servers, and this command over its HTTP API.')
  .usage('<command> [options]')
  .version(VERSION, '-V, --version', 'print the version of albedo')
  .exitOverride()
  // commander's own errors (unknown option, missing argument) are kept, and said as the CLI's one line below (exit 2).
  .configureOutput({
    outputError: (text) => {
      refused += text;
    },
  })
  // Every alias in a list of commands (`remove|rm|delete`), not only the first.
  .configureHelp({
    subcommandTerm(cmd) {
      return Help.prototype.subcommandTerm.call(this, cmd).replace(/^\S+/, [cmd.name(), ...cmd.aliases()].join('|'));
    },
  })
  .addHelpText(
    'after',
    '\nexit status: 0 ok, 1 failed, 2 bad usage, 3 no daemon reachable, 4 not found, 5 needs a sign-in, ' +
      '6 the tool reported an error (albedo call).\nSee docs/cli.md.',
  );

// `probe` and `daemon` (run) take the raw words after their name, as they always did.
const raw = (n: number): string[] => process.argv.slice(2 + n);
program
  .command('probe')
  .description('connect to one MCP server directly (no daemon), negotiate, discover, and print what it offers')
  .helpOption(false)
  .allowUnknownOption()
  .allowExcessArguments()
  .argument('[args...]')
  .action(async () => {
    process.exitCode = await (await import('./commands/probe.ts')).probeCommand(raw(1));
  });
const daemon = program
  .command('daemon')
  .description('run the daemon for $ALBEDO_HOME (albedo daemon [--port N]); albedo daemon start | stop | status')
  .helpOption(false)
  .allowUnknownOption()
  .allowExcessArguments()
  .argument('[args...]')
  .action(async () => {
    process.exitCode = await (await import('./commands/daemon.ts')).daemonCommand(raw(1));
  });
const word = process.argv[2];
// --version needs no command group at all; a group's word needs only its own; anything else (the help) needs them all.
const wanted =
  word === '--version' || word === '-V' ? [] : word !== undefined && Object.hasOwn(GROUPS, word) ? [word] : Object.keys(GROUPS);
const registered = new Set<unknown>();
for (const g of wanted) {
  const register = await GROUPS[g]!();
  if (registered.has(register)) continue;
  registered.add(register);
  register(g === 'daemon' ? daemon : program);
}

try {
  if (process.argv.length <= 2) {
    // Bad usage, as `albedo mcp` without its subcommand: the help on stderr, exit 2.
    program.outputHelp({ error: true });
    process.exitCode = EXIT.usage;
  } else {
    await program.parseAsync(process.argv);
  }
} catch (err) {
  if (err instanceof CommanderError) {
    // --help and --version are not errors; the help shown for a group without its subcommand (`albedo mcp`) is bad usage,
    // as bare `albedo` is, and so is everything else commander refuses (already said in one line).
    const asked =
      err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || (err.code === 'commander.help' && err.exitCode === 0);
    if (!asked && refused) process.stderr.write(`${safe(usageLine(refused, process.argv.slice(2)))}\n`);
    process.exitCode = asked ? EXIT.ok : EXIT.usage;
  } else {
    process.stderr.write(errorLine(err) + '\n');
    process.exitCode = err instanceof CliError ? err.exit : EXIT.failed;
  }
}
