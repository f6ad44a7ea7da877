/**
 * `albedo mcp import --from TOOL [FILE]`: the servers of another host's MCP
 * config, shown as they would be added; added on `--yes`. The readers
 * (bin/import/) are loaded only when the command runs.
 */
import { Option, type Command } from 'commander';
import { usage } from '../client/errors.ts';
import { DEFAULT_JOBS } from '../import/options.ts';

import type { ImportOptions } from '../import/options.ts';

const MAX_JOBS = 16;

function jobs(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1 || n > MAX_JOBS)
    throw usage(`--jobs must be a whole number from 1 to ${MAX_JOBS}, not ${JSON.stringify(v)}`);
  return n;
}

export function importCommand(mcp: Command): void {
  mcp
    .command('import')
    .argument('[file]', "the tool's config file (default: the project's, else the user's; see docs/cli.md)")
    .description(
      "import another tool's MCP servers: shows what it would add; --yes adds them (each tried first, as by add, several at once)",
    )
    .addOption(
      new Option('--from <tool>', 'whose config it is')
        .choices(['claude', 'claude-code', 'vscode', 'cursor', 'codex', 'gemini'])
        .makeOptionMandatory(),
    )
    .option('--yes', 'add them (without it, nothing is changed)')
    .option('--disabled', 'add them switched off (not tried; enable each with albedo mcp enable NAME)')
    .option('--replace', 'replace servers of the same names (otherwise they are skipped)')
    .option(
      '--jobs <n>',
      `with --yes: how many servers are tried at once (1-${MAX_JOBS}, default ${DEFAULT_JOBS}); the output keeps the file's order`,
      jobs,
    )
    .option('--json', 'print one JSON object: { from, file, added, servers: [{ name, outcome, reason?, entry, secrets, warnings, … }] }')
    .action(async (file: string | undefined, o: ImportOptions) => {
      await (await import('../import/run.ts')).runImport(file, o);
    });
}
