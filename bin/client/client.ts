/**
 * The daemon as a command sees it: `call(method, path)` finds the daemon of
 * $ALBEDO_HOME (client/daemon.ts), starting one when none runs (said on
 * stderr), has it prove it holds daemon.json's token, and only then sends
 * the request with the token. A daemon.json left by a killed daemon
 * (nothing listens on its port) or replaced meanwhile (its token refused)
 * is read again and the request sent once more — only when nothing of it
 * can have been done (refused connection, 401). A process that answers on
 * daemon.json's port without the proof is sent nothing (exit 3).
 */
import { CliError, EXIT } from './errors.ts';
import { albedoHome, notOurs, prove, runningDaemon, startDaemon, type DaemonInfo } from './daemon.ts';
import { ConnectFailed, request, type Reply, type RequestOptions } from './http.ts';

export interface ClientOptions {
  home?: string;
  /** Where news goes (the auto-start notice): default stderr. */
  say?: (line: string) => void;
}

export class Client {
  readonly home: string;
  #say: (line: string) => void;
  #info: DaemonInfo | null = null;
  #started = false;
  #found: Promise<DaemonInfo> | null = null;

  constructor(o: ClientOptions = {}) {
    this.home = o.home ?? albedoHome();
    this.#say = o.say ?? ((line) => process.stderr.write(line + '\n'));
  }

  /** The daemon's daemon.json, once a request has found (or started) it. */
  get info(): DaemonInfo | null {
    return this.#info;
  }

  /** The proved daemon of the home, found or started (for a command that talks to it other than by `call`). */
  daemon(): Promise<DaemonInfo> {
    return this.#daemon();
  }

  /** The daemon to talk to; one start at most, however many requests wait for it. */
  #daemon(): Promise<DaemonInfo> {
    this.#found ??= this.#find();
    return this.#found.then((info) => (this.#info = info));
  }

  /** The proved daemon of the home: the running one, or one started now (or being started by another command). */
  async #find(): Promise<DaemonInfo> {
    const info = runningDaemon(this.home);
    if (info) {
      const proof = await prove(info);
      if (proof === 'ours') return info;
      if (proof === 'not_ours') throw notOurs(this.home, info);
      // 'unreachable': the lock's holder is alive but does not listen (stopping): startDaemon waits for it to go.
    }
    this.#started = true;
    return startDaemon(this.home, this.#say);
  }

  /** One request to the daemon; a non-2xx answer throws its CliError. */
  async call<T = any>(method: string, path: string, o: RequestOptions = {}): Promise<Reply<T>> {
    const info = await this.#daemon();
    const used = this.#found;
    try {
      return await request<T>(info, method, path, o);
    } catch (err) {
      if (err instanceof ConnectFailed && err.errno === 'ECONNREFUSED' && (this.#found !== used || !this.#started)) {
        // Nothing listens where daemon.json says (a killed daemon's file, or one stopping): start one (unless another request
        // of this command already did); the lock sorts out who runs.
        if (this.#found === used) {
          this.#started = true;
          this.#found = startDaemon(this.home, this.#say);
        }
      } else if (err instanceof CliError && err.code === 'ALBEDO_UNAUTHORIZED') {
        // Our token was refused: a daemon that started since wrote a new daemon.json (found and proved afresh).
        const fresh = runningDaemon(this.home);
        if (!fresh || fresh.token === info.token) throw err;
        if (this.#found === used) this.#found = this.#find();
      } else if (err instanceof ConnectFailed) {
        throw unreachable(this.home, err);
      } else {
        throw err;
      }
    }
    // Once more, now that nothing of the first try can have been done.
    try {
      return await request<T>(await this.#daemon(), method, path, o);
    } catch (again) {
      if (again instanceof ConnectFailed) throw unreachable(this.home, again);
      throw again;
    }
  }
}

function unreachable(home: string, err: ConnectFailed): CliError {
  return new CliError('ALBEDO_DAEMON_UNREACHABLE', `the daemon of ${home} does not answer (${err.errno ?? 'no answer'})`, EXIT.unreachable);
}
