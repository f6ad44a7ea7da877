#!/usr/bin/env node
/**
 * The `albedo` command. Subcommands live in bin/commands/; this file only
 * dispatches. Run it with Node 22 (`npx albedo …` puts the project's Node
 * first on PATH).
 */
import { probeCommand } from './commands/probe.ts';

const USAGE = `usage: albedo <command> [options]

commands:
  probe    connect to one MCP server directly, negotiate, discover, and print what it offers
           albedo probe [--json] [--timeout MS] [--call TOOL [--args JSON]] [--read URI]
                        [--prompt NAME [--args JSON]] [--cwd DIR] [--env NAME=VALUE]... -- COMMAND [ARGS...]
  daemon   run the daemon for $ALBEDO_HOME: the HTTP API on 127.0.0.1 (daemon.json says where)
           albedo daemon [--port N]

run 'albedo <command> --help' for details.`;

const [cmd, ...rest] = process.argv.slice(2);
switch (cmd) {
  case 'probe':
    process.exitCode = await probeCommand(rest);
    break;
  case 'daemon':
    // Loaded on demand: only this command and probe load the kernel.
    process.exitCode = await (await import('./commands/daemon.ts')).daemonCommand(rest);
    break;
  case undefined:
  case '-h':
  case '--help':
  case 'help':
    process.stdout.write(USAGE + '\n');
    process.exitCode = cmd === undefined ? 2 : 0;
    break;
  default:
    process.stderr.write(`albedo: unknown command ${JSON.stringify(cmd)}\n${USAGE}\n`);
    process.exitCode = 2;
}
