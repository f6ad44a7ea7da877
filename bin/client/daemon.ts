/**
 * Finding the daemon of $ALBEDO_HOME, and starting one when none runs.
 *
 * `$ALBEDO_HOME/daemon.json` (written by `albedo daemon`, mode 0600) says
 * where it listens and with which token. It is believed only when
 * daemon.lock names the same pid and that process is alive (not a zombie,
 * and, on Linux, with the start time the lock recorded: a reused pid is not
 * the daemon), and then only once what answers on its port has proved it
 * holds the token (prove(): an HMAC of a fresh nonce, asked without the
 * token); nothing else is sent before. When none runs, `albedo daemon` is
 * started detached, its stderr appended to `$ALBEDO_HOME/daemon.log`, and
 * the command waits (bounded) until it answers. None of this loads the
 * kernel.
 *
 * Before anything in the home is read, the home is checked as the daemon
 * checks it (protocol/private-dir.ts: this user's alone, and so is every
 * directory on the way) and held; its files are read through the directory
 * checked. A home that fails is refused (ALBEDO_HOME_UNSAFE, exit 7): there,
 * another user's process could have written a daemon.json and daemon.lock
 * of its own, with a token of its own, pass the proof and be sent what a
 * command carries (`mcp add`'s secrets).
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { openPrivateDir, PrivateDirError, type PrivateDir } from '../../protocol/private-dir.ts';
import { isAlive, parseProcessRecord, type ProcessRecord } from '../../platform/process.ts';
import { CliError, EXIT } from './errors.ts';
import { ConnectFailed, request } from './http.ts';
import { withoutPrivate } from './private-env.ts';

// Required, not imported: an ESM import of node:crypto reads every export, its lazy getters included (start-up is the budget).
const crypto = createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto');

export interface DaemonInfo {
  port: number;
  token: string;
  pid: number;
  version: string;
}

/**
 * $ALBEDO_HOME, else ~/.albedo — the rule of api/albedo.ts's defaultHome
 * (test/cli/home-setting checks they agree), kept here because the CLI
 * must not load the kernel to start: a leading `~` or `~/` is the user's
 * home (a quoted one reaches us unexpanded), a relative path is taken from
 * the current directory (the daemon the CLI starts is given the absolute
 * one), and `~name` is refused (exit 2): no one here can expand it.
 */
export function albedoHome(env: NodeJS.ProcessEnv = process.env): string {
  const v = env.ALBEDO_HOME;
  if (!v) return path.join(os.homedir(), '.albedo');
  if (v === '~' || v.startsWith('~/')) return path.join(os.homedir(), v.slice(1));
  if (v.startsWith('~')) {
    throw new CliError(
      'ALBEDO_INVALID_ARGUMENT',
      `ALBEDO_HOME=${JSON.stringify(v)}: only ~ and ~/ are expanded (the user's home); write the full path`,
      EXIT.usage,
    );
  }
  return path.resolve(v);
}

const BIN = fileURLToPath(new URL('../main.ts', import.meta.url));

/** How long an auto-started daemon may take to answer: the kernel's workers start on a busy machine. */
const START_WAIT_MS = 90_000;
/** How long `daemon stop` waits for the process to go (it closes every session and reaps every server first). */
export const STOP_WAIT_MS = 90_000;

/**
 * `home` checked (see the module's comment) and held; null when it does not exist (yet), unless `create` makes it
 * (a directory at a time, 0700). Throws ALBEDO_HOME_UNSAFE (exit 7) for a home that is not this user's alone.
 */
export function openHome(home: string, create = false): PrivateDir | null {
  try {
    return openPrivateDir(home, { create });
  } catch (err) {
    if (err instanceof PrivateDirError && err.reason === 'missing' && !create) return null;
    throw unsafeHome(home, err);
  }
}

function unsafeHome(home: string, err: unknown): CliError {
  return new CliError('ALBEDO_HOME_UNSAFE', `${home} is not used: ${(err as Error).message}; nothing in it was read`, EXIT.unsafeHome);
}

/** The text of `name` in the checked home, read through the directory checked; null when there is none. */
function readHomeFile(home: string, name: string): string | null {
  const dir = openHome(home);
  if (!dir) return null;
  try {
    return readFileSync(dir.file(name), 'utf8');
  } catch (err) {
    if (err instanceof PrivateDirError) throw unsafeHome(home, err);
    return null;
  } finally {
    dir.close();
  }
}

/** daemon.json of `home`, or null when there is none or it is not a daemon's. */
export function readInfo(home: string): DaemonInfo | null {
  const text = readHomeFile(home, 'daemon.json');
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as Partial<DaemonInfo>;
    if (!Number.isInteger(v.port) || typeof v.token !== 'string' || !Number.isInteger(v.pid) || typeof v.version !== 'string') return null;
    return v as DaemonInfo;
  } catch {
    return null;
  }
}

/** What `daemon.lock` holds (daemon/lock.ts): the pid of the daemon holding the home and its start time (null off Linux). */
export type LockRecord = ProcessRecord;

/** daemon.lock of `home`, or null when there is none or it is not one. */
export function readLock(home: string): LockRecord | null {
  const text = readHomeFile(home, 'daemon.lock');
  return text === null ? null : parseProcessRecord(text);
}

/** Whether the process a lock record names is still that process (platform/process.ts, as the daemon judges it). */
export const holderAlive = (rec: LockRecord): boolean => isAlive(rec);

/**
 * The live holder of daemon.lock of `home` when it is `pid`, else null: a
 * daemon.json whose pid the lock does not name (a leftover, or one written
 * by anyone else) is not believed, nor a pid reused by another process.
 */
export function daemonAlive(home: string, pid: number): LockRecord | null {
  const lock = readLock(home);
  return lock !== null && lock.pid === pid && holderAlive(lock) ? lock : null;
}

/** The running daemon of `home` according to its files (daemon.json and daemon.lock agreeing), or null. Not yet proved: see prove(). */
export function runningDaemon(home: string): DaemonInfo | null {
  const info = readInfo(home);
  return info && daemonAlive(home, info.pid) ? info : null;
}

/** What answered on daemon.json's port: this home's daemon, something else, or nothing. */
export type Proof = 'ours' | 'not_ours' | 'unreachable';

/** The health answer is small; a stranger's flood is not read past this. */
const HEALTH_MAX_BYTES = 64 * 1024;

/**
 * Whether the process on `info.port` is the daemon that wrote daemon.json:
 * it is asked `GET /v1/health?nonce=N` (N: 16 random bytes, hex), with no
 * token, and must answer `proof` = base64url(HMAC-SHA256(key = the token,
 * message = N)), which only a holder of the token can compute. Nothing else
 * is sent to a process before it has proved this.
 */
export async function prove(info: DaemonInfo): Promise<Proof> {
  const nonce = crypto.randomBytes(16).toString('hex');
  let body: any;
  try {
    ({ body } = await request(info, 'GET', `/v1/health?nonce=${nonce}`, {
      timeoutMs: 30_000,
      anonymous: true,
      maxBytes: HEALTH_MAX_BYTES,
    }));
  } catch (err) {
    if (err instanceof ConnectFailed) return 'unreachable';
    // Any other answer (an error status, not JSON, too long, no answer in time) is not the daemon's proof.
    return 'not_ours';
  }
  if (body === null || typeof body !== 'object' || body.ok !== true || typeof body.proof !== 'string') return 'not_ours';
  const expected = Buffer.from(crypto.createHmac('sha256', Buffer.from(info.token, 'utf8')).update(nonce).digest('base64url'));
  const got = Buffer.from(body.proof);
  return got.length === expected.length && crypto.timingSafeEqual(got, expected) ? 'ours' : 'not_ours';
}

/** The error of a daemon.json whose port is answered by a process that is not this home's daemon. */
export function notOurs(home: string, info: DaemonInfo): CliError {
  return new CliError(
    'ALBEDO_DAEMON_UNREACHABLE',
    `what answers on port ${info.port} (daemon.json of ${home}, pid ${info.pid}) ` +
      'did not prove it is the daemon of this home; nothing was sent to it',
    EXIT.unreachable,
  );
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

/** The spawn mutex of `home`: held by the one command that starts a daemon, while it waits for its answer. */
type Release = () => Promise<void>;
async function trySpawnMutex(home: string): Promise<Release | null> {
  // Loaded only here (it brings proper-lockfile): a command that finds its daemon running never needs it.
  const { tryLockDir } = await import('../../platform/lock.ts');
  // Kept fresh by its holder (its mtime is updated); a holder killed meanwhile leaves it stale after 20 s.
  return tryLockDir(home, path.join(home, 'daemon.spawn.lock'), { stale: 20_000, update: 5_000 });
}

/**
 * Waits (bounded) until a daemon of `home` answers and proves it is the
 * home's, starting one when none runs and none is starting. Of the commands
 * waiting at once only the holder of the spawn mutex spawns, and only while
 * no live process holds daemon.lock (a daemon starting holds it before it
 * listens): one daemon is started, however many commands find none. The
 * news names the daemon that answered.
 */
export async function startDaemon(home: string, say: (line: string) => void): Promise<DaemonInfo> {
  // Made if missing, checked and held as the daemon does (it checks again itself): the log and the spawn mutex go through it.
  const held = openHome(home, true)!;
  const logFile = path.join(home, 'daemon.log');
  const logAt = held.file('daemon.log');
  const end = Date.now() + START_WAIT_MS;
  let from = 0;
  let child: (() => number | null | undefined) | null = null;
  let spawnedAny = false;
  let release: Release | null = null;
  try {
    while (Date.now() < end) {
      const info = runningDaemon(home);
      if (info) {
        const proof = await prove(info);
        if (proof === 'ours') {
          say(
            spawnedAny
              ? `albedo: no daemon was running for ${home}; started one (pid ${info.pid}, log ${logFile})`
              : `albedo: a daemon was starting for ${home}; using it (pid ${info.pid}, log ${logFile})`,
          );
          return info;
        }
        if (proof === 'not_ours') throw notOurs(home, info);
        // Nothing listens yet where it says (a daemon stopping): wait for the lock's holder to go.
      }
      const code = child?.();
      if (code === 3) {
        // Another daemon took the home first (one started by hand): wait for it, or start again once it has gone.
        child = null;
      } else if (code !== undefined && code !== null) {
        const tail = logTail(logAt, from);
        throw new CliError(
          'ALBEDO_DAEMON_UNREACHABLE',
          `the daemon exited (${code}) before it answered${tail ? `: ${tail}` : ''}`,
          EXIT.unreachable,
        );
      } else if (code === null) {
        throw new CliError('ALBEDO_DAEMON_UNREACHABLE', `the daemon was killed before it answered; see ${logFile}`, EXIT.unreachable);
      }
      if (!child && !lockHeld(home)) {
        release ??= await trySpawnMutex(held.at);
        // Under the mutex, looked at again: a daemon started by the previous holder may have taken the lock meanwhile.
        if (release && !lockHeld(home) && !runningDaemon(home)) {
          from = logSize(logAt);
          child = spawnDetached(home, logAt);
          spawnedAny = true;
        }
      }
      await sleep(50);
    }
  } finally {
    await release?.();
    held.close();
  }
  throw new CliError(
    'ALBEDO_DAEMON_UNREACHABLE',
    `the daemon did not answer within ${START_WAIT_MS / 1000} s; see ${logFile}`,
    EXIT.unreachable,
  );
}

/** Whether a live process holds daemon.lock of `home` (a daemon running, starting or stopping). */
function lockHeld(home: string): boolean {
  const lock = readLock(home);
  return lock !== null && holderAlive(lock);
}

/** Spawns `albedo daemon` detached, stderr appended to the log; returns how to ask for its exit status (undefined while it runs). */
function spawnDetached(home: string, logFile: string): () => number | null | undefined {
  const log = openSync(logFile, 'a', 0o600);
  let exit: number | null | undefined;
  try {
    const child = spawn(process.execPath, [BIN, 'daemon'], {
      cwd: home,
      detached: true,
      stdio: ['ignore', 'ignore', log],
      // Its stderr is a log file: a login link there would outlive its use (`albedo open` makes one when it is wanted).
      // Without the variables this command read as secrets (--bearer-from VAR, …): they would stay in its environ.
      env: { ...withoutPrivate(process.env), ALBEDO_HOME: home, ALBEDO_NO_PANE_LINK: '1' },
    });
    child.once('exit', (code) => {
      exit = code;
    });
    child.once('error', () => {
      exit = EXIT.failed;
    });
    child.unref();
  } finally {
    closeSync(log);
  }
  return () => exit;
}

/** Waits (bounded) until the process `rec` names is gone; false if it is still alive after `withinMs`. */
export async function waitGone(rec: LockRecord, withinMs: number): Promise<boolean> {
  const end = Date.now() + withinMs;
  while (holderAlive(rec)) {
    if (Date.now() > end) return false;
    await sleep(50);
  }
  return true;
}
