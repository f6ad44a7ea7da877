/**
 * `albedo daemon start`, `status` and `stop`: the daemon of $ALBEDO_HOME
 * seen from outside, through daemon.json, daemon.lock and its pid. `start`
 * finds or starts one as every command does (client/daemon.ts: one daemon
 * however many start at once), for a client in another language (the Python
 * binding) that should not copy that logic; `status` and `stop` never start one. Both believe daemon.json only when
 * daemon.lock names the same live process and what answers on its port
 * proves it holds the token (client/daemon.ts): `stop` signals nothing
 * else. `stop` sends SIGTERM and waits for the process to go: the daemon
 * closes every session, reaps every server and removes daemon.json before
 * it exits.
 */
import type { Command } from 'commander';
import { CliError, EXIT } from '../client/errors.ts';
import {
  albedoHome,
  daemonAlive,
  holderAlive,
  notOurs,
  prove,
  runningDaemon,
  startDaemon,
  STOP_WAIT_MS,
  waitGone,
} from '../client/daemon.ts';
import { emit, note, safe } from '../client/output.ts';

/** `daemon status` and `daemon stop` take no arguments, and have their own --help (the `daemon` command parses its own words). */
function strict(cmd: Command): Command {
  return cmd.allowUnknownOption(false).allowExcessArguments(false).helpOption('-h, --help', 'display help for command');
}

export function daemonControl(daemon: Command): void {
  strict(daemon.command('start'))
    .description('start the daemon of $ALBEDO_HOME in the background unless one runs; wait until it answers')
    .option('--json', 'print one JSON object: { started, home, pid, port, version }')
    .action(async (o: { json?: boolean }) => {
      const home = albedoHome();
      const found = runningDaemon(home);
      const proof = found ? await prove(found) : 'unreachable';
      if (found && proof === 'not_ours') throw notOurs(home, found);
      const started = proof !== 'ours';
      // startDaemon says on stderr which daemon answered; a daemon already running is said here.
      const info = started ? await startDaemon(home, note) : found!;
      emit(!!o.json, { started, home, pid: info.pid, port: info.port, version: info.version }, () =>
        safe(`${started ? 'started' : 'running'}: pid ${info.pid}, http://127.0.0.1:${info.port}, version ${info.version}, home ${home}`),
      );
    });

  strict(daemon.command('status'))
    .description('whether a daemon runs for $ALBEDO_HOME: its pid, port and version (exit 3 when none does)')
    .option('--json', 'print one JSON object: { running, home, pid?, port?, version? }')
    .action(async (o: { json?: boolean }) => {
      const home = albedoHome();
      const info = runningDaemon(home);
      const proof = info ? await prove(info) : 'unreachable';
      if (info && proof === 'not_ours') note(`albedo: ${notOurs(home, info).message}`);
      const running = info !== null && proof === 'ours';
      const out = running ? { running, home, pid: info.pid, port: info.port, version: info.version } : { running: false, home };
      emit(!!o.json, out, () =>
        running
          ? safe(`running: pid ${info.pid}, http://127.0.0.1:${info.port}, version ${info.version}, home ${home}`)
          : `not running (home ${home})`,
      );
      process.exitCode = running ? EXIT.ok : EXIT.unreachable;
    });

  strict(daemon.command('stop'))
    .description('stop the daemon of $ALBEDO_HOME (SIGTERM) and wait until it has exited; nothing to do when none runs')
    .option('--json', 'print one JSON object: { stopped, home, pid? }')
    .action(async (o: { json?: boolean }) => {
      const home = albedoHome();
      const info = runningDaemon(home);
      if (!info) {
        emit(!!o.json, { stopped: false, home }, () => `no daemon runs for ${home}`);
        return;
      }
      const proof = await prove(info);
      // The lock's holder, as the proof found it: the process signalled, and waited for, is that one (not a pid reused since).
      const holder = daemonAlive(home, info.pid);
      if (proof !== 'ours' || !holder) {
        const why =
          proof === 'not_ours' ? notOurs(home, info).message : `the daemon (pid ${info.pid}) does not answer on port ${info.port}`;
        throw new CliError('ALBEDO_DAEMON_UNREACHABLE', `${why}; not signalling pid ${info.pid}`, EXIT.unreachable);
      }
      try {
        if (holderAlive(holder)) process.kill(holder.pid, 'SIGTERM');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') {
          throw new CliError('ALBEDO_INTERNAL', `cannot signal the daemon (pid ${info.pid}): ${(err as Error).message}`, EXIT.failed);
        }
      }
      if (!(await waitGone(holder, STOP_WAIT_MS))) {
        throw new CliError('ALBEDO_TIMEOUT', `the daemon (pid ${info.pid}) is still stopping after ${STOP_WAIT_MS / 1000} s`, EXIT.failed);
      }
      emit(!!o.json, { stopped: true, home, pid: info.pid }, () => `stopped the daemon (pid ${info.pid})`);
    });
}
