/**
 * `albedo daemon [--port N]`: runs the daemon (daemon/daemon.ts) for
 * $ALBEDO_HOME in the foreground until SIGTERM or SIGINT.
 */
import { parseArgs } from 'node:util';
import { albedoHome } from '../client/daemon.ts';
import { EXIT, runDaemon } from '../../daemon/daemon.ts';

export const DAEMON_HELP = `usage: albedo daemon [--port N]
       albedo daemon start | status | stop [--json]   (see albedo daemon status --help)

Runs the Albedo daemon for $ALBEDO_HOME (default ~/.albedo) in the
foreground: the kernel, its services and the HTTP API on 127.0.0.1.
$ALBEDO_HOME/daemon.json (mode 0600) says where it listens: port, token,
pid, version. One daemon per $ALBEDO_HOME. SIGTERM or SIGINT stops it:
every session and server is closed and daemon.json removed.

options:
  --port N     listen on this port (default: a free one)

exit status: 0 stopped by a signal; 1 could not start (port in use, home
unusable); 2 bad usage; 3 a daemon already runs for this $ALBEDO_HOME.`;

export async function daemonCommand(argv: string[]): Promise<number> {
  let port = 0;
  try {
    const { values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: { port: { type: 'string' }, help: { type: 'boolean', short: 'h', default: false } },
    });
    if (values.help) {
      process.stdout.write(DAEMON_HELP + '\n');
      return EXIT.ok;
    }
    if (values.port !== undefined) {
      port = Number(values.port);
      if (!/^\d+$/.test(values.port) || port < 1 || port > 65535) {
        throw new Error(`--port must be a port number from 1 to 65535, not ${JSON.stringify(values.port)}`);
      }
    }
  } catch (err) {
    // One line, as every usage error of the CLI.
    process.stderr.write(
      `albedo: ALBEDO_INVALID_ARGUMENT: ${(err as Error).message.replace(/\s*\n\s*/g, ' ')} (see albedo daemon --help)\n`,
    );
    return EXIT.usage;
  }
  // $ALBEDO_HOME read by the CLI's rule (a ~ expanded, a relative one made absolute; ~name refused, exit 2).
  return runDaemon({ home: albedoHome(), port });
}
