/**
 * Finding the daemon of $ALBEDO_HOME, and starting one when none runs.
 *
 * `$ALBEDO_HOME/daemon.json` (written by `albedo daemon`, mode 0600) says
 * where it listens and with which token. It is believed when its pid is
 * alive (not a zombie, and, where daemon.lock names the same pid, with the
 * start time the lock recorded: a reused pid is not the daemon); the
 * command's own request then proves it answers. When none runs, `albedo
 * daemon` is started detached, its stderr appended to
 * `$ALBEDO_HOME/daemon.log`, and the command waits (bounded) until its
 * daemon.json appears and the daemon answers. None of this loads the kernel.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError, EXIT } from './errors.ts';
import { ConnectFailed, request } from './http.ts';

export interface DaemonInfo {
  port: number;
  token: string;
  pid: number;
  version: string;
}

/** $ALBEDO_HOME, else ~/.albedo (as api/albedo.ts's defaultHome, without loading it). */
export function albedoHome(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.ALBEDO_HOME || path.join(os.homedir(), '.albedo'));
}

const BIN = fileURLToPath(new URL('../albedo.ts', import.meta.url));

/** How long an auto-started daemon may take to answer: the kernel's workers start on a busy machine. */
const START_WAIT_MS = 90_000;
/** How long `daemon stop` waits for the process to go (it closes every session and reaps every server first). */
export const STOP_WAIT_MS = 90_000;

/** daemon.json of `home`, or null when there is none or it is not a daemon's. */
export function readInfo(home: string): DaemonInfo | null {
  try {
    const v = JSON.parse(readFileSync(path.join(home, 'daemon.json'), 'utf8')) as Partial<DaemonInfo>;
    if (!Number.isInteger(v.port) || typeof v.token !== 'string' || !Number.isInteger(v.pid) || typeof v.version !== 'string') return null;
    return v as DaemonInfo;
  } catch {
    return null;
  }
}

/** /proc/<pid>/stat's state and start time (Linux); null where /proc cannot tell. */
function procStat(pid: number): { state: string; start: string } | 'gone' | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] ?? '', start: fields[19] ?? '' };
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'gone' : null;
  }
}

/** Whether `pid` is a live process (a zombie is not) and, if daemon.lock of `home` names it, the same process the lock recorded. */
export function daemonAlive(home: string, pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const st = procStat(pid);
  if (st === 'gone') return false;
  if (st === null) return true;
  if (st.state === 'Z' || st.state === 'X') return false;
  try {
    const lock = JSON.parse(readFileSync(path.join(home, 'daemon.lock'), 'utf8')) as { pid?: number; start?: string | null };
    if (lock.pid === pid && typeof lock.start === 'string' && lock.start !== st.start) return false;
  } catch {
    // No lock file to compare with (or a partial one being written): the pid alone.
  }
  return true;
}

/** The running daemon of `home` according to its files, or null. */
export function runningDaemon(home: string): DaemonInfo | null {
  const info = readInfo(home);
  return info && daemonAlive(home, info.pid) ? info : null;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The size of daemon.log now: what a daemon started next writes comes after it. */
function logSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** The last lines daemon.log gained after `from`, for the error of a daemon that would not start. */
function logTail(file: string, from: number): string {
  try {
    const text = readFileSync(file).subarray(from).toString('utf8').trimEnd();
    return text.split('\n').slice(-3).join(' | ');
  } catch {
    return '';
  }
}

/**
 * Starts `albedo daemon` for `home`, detached (it outlives this command),
 * and resolves once a daemon of `home` answers — this one, or another that
 * won a race to start (this one then exits 3, which is fine).
 */
export async function startDaemon(home: string, say: (line: string) => void): Promise<DaemonInfo> {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const logFile = path.join(home, 'daemon.log');
  const end = Date.now() + START_WAIT_MS;
  let from = logSize(logFile);
  let exit = spawnDetached(home, logFile, say);
  while (Date.now() < end) {
    const info = runningDaemon(home);
    if (info && (await answers(info))) return info;
    const code = exit();
    // Exit 3: another daemon holds the home (a race with another command): wait for that one, or start again once it has gone.
    if (code === 3 && !info) {
      from = logSize(logFile);
      exit = spawnDetached(home, logFile, say);
    }
    else if (code !== undefined && code !== 3) {
      const tail = logTail(logFile, from);
      throw new CliError('ALBEDO_DAEMON_UNREACHABLE', `the daemon exited (${code}) before it answered${tail ? `: ${tail}` : ''}`, EXIT.unreachable);
    }
    await sleep(50);
  }
  throw new CliError('ALBEDO_DAEMON_UNREACHABLE', `the daemon did not answer within ${START_WAIT_MS / 1000} s; see ${logFile}`, EXIT.unreachable);
}

/** Spawns `albedo daemon` detached, stderr appended to the log; returns how to ask for its exit status (undefined while it runs). */
function spawnDetached(home: string, logFile: string, say: (line: string) => void): () => number | null | undefined {
  const log = openSync(logFile, 'a', 0o600);
  let exit: number | null | undefined;
  try {
    const child = spawn(process.execPath, [BIN, 'daemon'], {
      cwd: home, detached: true, stdio: ['ignore', 'ignore', log], env: { ...process.env, ALBEDO_HOME: home },
    });
    child.once('exit', (code) => { exit = code; });
    child.once('error', () => { exit = EXIT.failed; });
    child.unref();
    say(`albedo: no daemon was running for ${home}; started one (pid ${child.pid}, log ${logFile})`);
  } finally {
    closeSync(log);
  }
  return () => exit;
}

/** Whether the daemon of `info` answers on its port with its token (any route will do: 404 counts). */
export async function answers(info: DaemonInfo): Promise<boolean> {
  try {
    await request(info, 'GET', '/v1/health', { timeoutMs: 10_000, accept: [404] });
    return true;
  } catch (err) {
    if (err instanceof ConnectFailed) return false;
    if (err instanceof CliError && err.code === 'ALBEDO_UNAUTHORIZED') return false;
    throw err;
  }
}

/** Waits (bounded) until `pid` is gone; false if it is still alive after `withinMs`. */
export async function waitGone(home: string, pid: number, withinMs: number): Promise<boolean> {
  const end = Date.now() + withinMs;
  while (daemonAlive(home, pid)) {
    if (Date.now() > end) return false;
    await sleep(50);
  }
  return true;
}

