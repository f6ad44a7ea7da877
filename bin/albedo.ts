#!/usr/bin/env node
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
import { Command, CommanderError } from 'commander';
import { errorLine, EXIT, CliError, oneLine } from './client/errors.ts';
import { safe } from './client/output.ts';

/** The package's version, for --version: package.json read as text (nothing loaded for it). */
const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** Each command group's module, loaded only when its word is the command (or for the full help). */
const GROUPS: Record<string, () => Promise<(parent: Command) => void>> = {
  daemon: async () => (await import('./commands/daemon-control.ts')).daemonControl,
  status: async () => (await import('./commands/status.ts')).statusCommand,
  mcp: async () => (await import('./commands/mcp.ts')).mcpCommands,
  tools: async () => (await import('./commands/tools.ts')).sessionCommands,
  call: async () => (await import('./commands/tools.ts')).sessionCommands,
  open: async () => (await import('./commands/open.ts')).openCommand,
};

const program = new Command('albedo')
  .description('Albedo: one daemon that holds your MCP servers, and this command over its HTTP API.')
  .usage('<command> [options]')
  .version(VERSION, '-V, --version', 'print the version of albedo')
  .exitOverride()
  .configureOutput({
    // commander's own errors (unknown option, missing argument) as the CLI's one line, exit 2.
    outputError: (text, write) => write(`${safe(`albedo: ALBEDO_INVALID_ARGUMENT: ${oneLine(text.trim().replace(/^error:\s*/, ''))} (see --help)`)}\n`),
  })
  .addHelpText('after', '\nexit status: 0 ok, 1 failed, 2 bad usage, 3 no daemon reachable, 4 not found, 5 needs a sign-in, '
    + '6 the tool reported an error (albedo call).\nSee docs/cli.md.');

// `probe` and `daemon` (run) take the raw words after their name, as they always did.
const raw = (n: number): string[] => process.argv.slice(2 + n);
program.command('probe')
  .description('connect to one MCP server directly (no daemon), negotiate, discover, and print what it offers')
  .helpOption(false).allowUnknownOption().allowExcessArguments().argument('[args...]')
  .action(async () => {
    process.exitCode = await (await import('./commands/probe.ts')).probeCommand(raw(1));
  });
const daemon = program.command('daemon')
  .description('run the daemon for $ALBEDO_HOME (albedo daemon [--port N]); albedo daemon stop | status')
  .helpOption(false).allowUnknownOption().allowExcessArguments().argument('[args...]')
  .action(async () => {
    process.exitCode = await (await import('./commands/daemon.ts')).daemonCommand(raw(1));
  });
const word = process.argv[2];
// --version needs no command group at all; a group's word needs only its own; anything else (the help) needs them all.
const wanted = word === '--version' || word === '-V' ? [] : word !== undefined && Object.hasOwn(GROUPS, word) ? [word] : Object.keys(GROUPS);
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
    const asked = err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || (err.code === 'commander.help' && err.exitCode === 0);
    process.exitCode = asked ? EXIT.ok : EXIT.usage;
  } else {
    process.stderr.write(errorLine(err) + '\n');
    process.exitCode = err instanceof CliError ? err.exit : EXIT.failed;
  }
}
