/**
 * `albedo acp -- AGENT [ARGS…]`: an ACP agent behind Albedo, for an editor to
 * run (docs/cli.md "albedo acp"). The proxy itself (bin/acp/) and the ACP SDK
 * are loaded only when the command runs: the help loads every group.
 */
import type { Command } from 'commander';
import { errorLine, CliError, EXIT } from '../client/errors.ts';

export function acpCommand(program: Command): void {
  program
    .command('acp')
    .description('run an ACP agent for an editor, its MCP servers and yours served by Albedo (albedo acp -- AGENT [ARGS…])')
    .usage('-- AGENT [ARGS…]')
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[agent...]')
    .action(async () => {
      // The raw words: commander would drop the "--" that separates the agent's own options from ours.
      const words = process.argv.slice(3);
      if (words[0] === '--help' || words[0] === '-h') {
        process.stdout.write(
          'Usage: albedo acp -- AGENT [ARGS…]\n\nRuns AGENT (an ACP agent) as a child and speaks ACP to the editor on stdin/stdout;\n' +
            'the sessions get your configured MCP servers and the editor’s, served by the daemon. See docs/cli.md.\n',
        );
        return;
      }
      let code: number;
      try {
        const { agentArgv } = await import('../acp/params.ts');
        const agent = agentArgv(words);
        const { runAcp } = await import('../acp/proxy.ts');
        code = await runAcp(agent);
      } catch (err) {
        process.stderr.write(errorLine(err) + '\n');
        code = err instanceof CliError ? err.exit : EXIT.failed;
      }
      // Everything said on stderr is out before the process goes; the agent's stdin, the lifeline and the editor's
      // stdin would otherwise keep it alive.
      await new Promise<void>((r) => process.stderr.write('', () => r()));
      process.exit(code);
    });
}
