/**
 * `albedo daemon status` and `albedo daemon stop`: the daemon of
 * $ALBEDO_HOME seen from outside, through daemon.json and its pid. Neither
 * starts a daemon. `stop` sends SIGTERM to the pid daemon.json names (only
 * once the daemon has answered with daemon.json's token, so a reused pid is
 * never signalled) and waits for the process to go: the daemon closes every
 * session, reaps every server and removes daemon.json before it exits.
 */
import type { Command } from 'commander';
import { CliError, EXIT } from '../client/errors.ts';
import { albedoHome, answers, runningDaemon, STOP_WAIT_MS, waitGone } from '../client/daemon.ts';
import { emit } from '../client/output.ts';

export function daemonControl(daemon: Command): void {
  daemon.command('status')
    .description('whether a daemon runs for $ALBEDO_HOME: its pid, port and version (exit 3 when none does)')
    .option('--json', 'print one JSON object: { running, home, pid?, port?, version? }')
    .action(async (o: { json?: boolean }) => {
      const home = albedoHome();
      const info = runningDaemon(home);
      const running = info !== null && (await answers(info));
      const out = running ? { running, home, pid: info.pid, port: info.port, version: info.version } : { running: false, home };
      emit(!!o.json, out, () => (running
        ? `running: pid ${info.pid}, http://127.0.0.1:${info.port}, version ${info.version}, home ${home}`
        : `not running (home ${home})`));
      process.exitCode = running ? EXIT.ok : EXIT.unreachable;
    });

  daemon.command('stop')
    .description('stop the daemon of $ALBEDO_HOME (SIGTERM) and wait until it has exited; nothing to do when none runs')
    .option('--json', 'print one JSON object: { stopped, home, pid? }')
    .action(async (o: { json?: boolean }) => {
      const home = albedoHome();
      const info = runningDaemon(home);
      if (!info || !(await answers(info))) {
        emit(!!o.json, { stopped: false, home }, () => `no daemon runs for ${home}`);
        return;
      }
      try {
        process.kill(info.pid, 'SIGTERM');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') {
          throw new CliError('ALBEDO_INTERNAL', `cannot signal the daemon (pid ${info.pid}): ${(err as Error).message}`, EXIT.failed);
        }
      }
      if (!(await waitGone(home, info.pid, STOP_WAIT_MS))) {
        throw new CliError('ALBEDO_TIMEOUT', `the daemon (pid ${info.pid}) is still stopping after ${STOP_WAIT_MS / 1000} s`, EXIT.failed);
      }
      emit(!!o.json, { stopped: true, home, pid: info.pid }, () => `stopped the daemon (pid ${info.pid})`);
    });
}
