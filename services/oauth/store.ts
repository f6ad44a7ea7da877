/**
 * creds.json: OAuth tokens and client registrations (and any other secret
 * the daemon keeps), mode 0600, written atomically (temporary file, fsync,
 * rename), never logged.
 *
 * Two cross-process locks (proper-lockfile: an atomic mkdir whose mtime the
 * holder refreshes every few seconds, so only a holder that stopped —
 * crashed, killed — goes stale). A change to one server's record runs under
 * that record's lock (creds.json.locks/<digest of the name>.lock), held
 * across the caller's work — a refresh's request to the authorization server
 * included — and re-reads the record after taking it, so two processes
 * refreshing one server's rotating refresh token do it once: the second
 * finds the first's new token and adopts it (seed 002, "cross-process token
 * refresh"). Writing the document takes creds.json.lock only for the
 * read-modify-rename, never across a network call, so one slow
 * authorization server delays no other server's refresh or sign-in. Locks
 * are taken in that order only (record, then document). A holder that lost
 * either lock (compromised) writes nothing.
 *
 * The record of server `name` is `mcp.<name>.oauth`; it carries the server
 * URL it belongs to, and a record for another URL is treated as absent.
 * Names are looked up as own properties only: any string, `__proto__`
 * included, is a plain key and never reaches Object.prototype.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, unlinkSync, writeSync, chmodSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createHash, randomBytes, type webcrypto } from 'node:crypto';
import lockfile from 'proper-lockfile';

type JsonWebKey = webcrypto.JsonWebKey;
import { AlbedoError } from '../../protocol/errors.ts';

export type AuthState = 'none' | 'needs_sign_in' | 'signed_in' | 'signed_out';

export interface ClientRecord {
  /** The authorization server the client belongs to: used with no other issuer (SEP-2352). */
  issuer: string;
  clientId: string;
  clientSecret?: string;
  /** client_secret_basic, client_secret_post, none, private_key_jwt. */
  authMethod: string;
  /** How it was obtained: dynamic registration, a metadata document URL, or configuration. */
  kind: 'dcr' | 'cimd' | 'configured';
  redirectUri?: string;
  registeredAt: number;
}

export interface TokenRecord {
  accessToken: string;
  /** `Bearer`, or `DPoP` for a sender-constrained token. */
  tokenType: 'Bearer' | 'DPoP';
  refreshToken?: string;
  /** Epoch ms; absent when the server did not say. */
  expiresAt?: number;
  scope?: string;
  issuer: string;
  resource?: string;
  obtainedAt: number;
}

export interface OAuthRecord {
  /** The MCP server URL this record belongs to. */
  url: string;
  state: Exclude<AuthState, 'none'>;
  reason?: string;
  /** A scope union asked for by a 403 insufficient_scope, for the next sign-in. */
  stepUp?: string;
  /** The last 401 challenge's parameters (no secret), for the next sign-in's discovery. */
  challenge?: { resourceMetadata?: string; scope?: string; scheme?: string; at: number };
  issuer?: string;
  /** The authorization server's metadata as discovered at sign-in (no secret): refreshes and renewals use it without discovering again. */
  authServer?: Record<string, unknown>;
  /** The resource metadata URL the sign-in used. */
  resourceMetadata?: string;
  account?: string;
  /** The client the tokens were issued to (refreshes use it). */
  client?: ClientRecord;
  /** Registrations kept for reuse, per issuer and redirect URI, newest first (at most 4). */
  registrations?: ClientRecord[];
  tokens?: TokenRecord;
  /** The DPoP key pair (private JWK), bound to the tokens. */
  dpopKey?: JsonWebKey;
  updatedAt: number;
}

interface CredsDoc {
  mcp?: Record<string, { oauth?: OAuthRecord } & Record<string, unknown>>;
  [k: string]: unknown;
}

/** A lock whose holder stopped refreshing it this long ago is presumed dead; holders refresh it every LOCK_UPDATE_MS. */
const LOCK_STALE_MS = 30_000;
const LOCK_UPDATE_MS = 5_000;
/** How long to wait for the lock (seed 002: lock acquisition and OAuth flows are bounded to 15 s). */
const LOCK_WAIT_MS = 15_000;

/** What an update makes of the current record: the record to write (undefined: none, null: delete it) and a value for the caller. */
export type Updater<T> = (rec: OAuthRecord | undefined) =>
  Promise<{ record: OAuthRecord | undefined | null; value: T }> | { record: OAuthRecord | undefined | null; value: T };

export interface CredsStore {
  /** The record for `name` if it belongs to `url`. */
  get(name: string, url: string): Promise<OAuthRecord | undefined>;
  /**
   * Runs `fn` on the current record under that record's cross-process lock (other records stay writable meanwhile);
   * what it returns is written (undefined: nothing, null: the record is deleted). `fn` throwing writes nothing.
   */
  update<T>(name: string, url: string, fn: Updater<T>): Promise<T>;
  readonly path: string | null;
  /** Changes whenever the stored document may have changed (another thread or process wrote it): a cheap staleness check. */
  stamp(): string;
}

/** The record of `name` in a parsed document, as an own property only (a name such as `__proto__` or `constructor` is just a key). */
function entryOf(doc: CredsDoc, name: string): ({ oauth?: OAuthRecord } & Record<string, unknown>) | undefined {
  const mcp = doc.mcp;
  if (!isObject(mcp) || !Object.hasOwn(mcp, name)) return undefined;
  const entry = mcp[name];
  return isObject(entry) ? entry : undefined;
}

function recordOf(doc: CredsDoc, name: string): OAuthRecord | undefined {
  const entry = entryOf(doc, name);
  return entry && Object.hasOwn(entry, 'oauth') && isObject(entry.oauth) ? entry.oauth : undefined;
}

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Sets an own, enumerable property, even one named `__proto__` (which plain assignment would take for the prototype). */
function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** In-process serialisation per key (a record, a document), on top of the cross-process locks. */
const queues = new Map<string, Promise<unknown>>();

function serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const prev = queues.get(key) ?? Promise.resolve();
  const run = prev.then(fn, fn);
  const tail = run.then(() => undefined, () => undefined);
  queues.set(key, tail);
  void tail.then(() => { if (queues.get(key) === tail) queues.delete(key); });
  return run;
}

export class FileCredsStore implements CredsStore {
  readonly path: string;
  /** The document lock: held only while the file is read, changed and renamed over. */
  readonly lockPath: string;
  /** Where the per-record locks live. */
  readonly recordLockDir: string;

  constructor(file: string) {
    this.path = file;
    this.lockPath = `${file}.lock`;
    this.recordLockDir = `${file}.locks`;
  }

  /** The lock of one server's record; the name is digested, so any string makes a safe file name. */
  recordLockPath(name: string): string {
    return path.join(this.recordLockDir, `${createHash('sha256').update(name).digest('hex').slice(0, 32)}.lock`);
  }

  stamp(): string {
    try {
      const st = statSync(this.path);
      return `${st.ino}:${st.mtimeMs}:${st.size}`;
    } catch {
      return 'absent';
    }
  }

  async get(name: string, url: string): Promise<OAuthRecord | undefined> {
    const rec = recordOf(await this.#read(), name);
    return rec && rec.url === url ? rec : undefined;
  }

  /** Every server's record, for status listings (a null-prototype object: any name is a plain key). */
  async all(): Promise<Record<string, OAuthRecord>> {
    const doc = await this.#read();
    const out = Object.create(null) as Record<string, OAuthRecord>;
    for (const n of isObject(doc.mcp) ? Object.keys(doc.mcp) : []) {
      const rec = recordOf(doc, n);
      if (rec) setOwn(out, n, rec);
    }
    return out;
  }

  /**
   * Runs `fn` on the current record of `name` under that record's lock (held
   * across `fn`, however long it takes), then writes what it returned under
   * the document lock, re-reading the document first so other servers'
   * records written meanwhile are kept.
   */
  update<T>(name: string, url: string, fn: Updater<T>): Promise<T> {
    return serial(`${this.path}\0${name}`, async () => {
      const lost: { err?: Error } = {};
      const lockPath = this.recordLockPath(name);
      const releaseRecord = await this.#lock(lockPath.slice(0, -'.lock'.length), lockPath, lost);
      try {
        // No document lock to read: the file is only ever renamed over whole, and this record
        // changes only under its own lock, which is ours.
        const cur = recordOf(await this.#read(), name);
        const { record, value } = await fn(cur && cur.url === url ? cur : undefined);
        if (record === undefined) return value;
        await serial(this.path, async () => {
          const releaseDoc = await this.#lock(this.path, this.lockPath, lost);
          try {
            const doc = await this.#read();
            if (doc.mcp !== undefined && !isObject(doc.mcp)) {
              throw new AlbedoError('ALBEDO_INVALID_CONFIG', `${this.path}: "mcp" is not an object; fix or remove the file`, { outcome: 'not_run' });
            }
            if (!Object.hasOwn(doc, 'mcp')) setOwn(doc, 'mcp', {});
            const mcp = doc.mcp!;
            let entry = entryOf(doc, name);
            if (!entry && Object.hasOwn(mcp, name)) {
              throw new AlbedoError('ALBEDO_INVALID_CONFIG', `${this.path}: the entry of one server is not an object; fix or remove the file`, {
                outcome: 'not_run',
              });
            }
            if (!entry) setOwn(mcp, name, (entry = {}));
            if (record === null) delete entry.oauth;
            else entry.oauth = { ...record, url, updatedAt: Date.now() };
            if (Object.keys(entry).length === 0) delete mcp[name];
            // Someone judged us dead and took a lock: what we read may be stale, so nothing is written.
            if (lost.err) {
              throw new AlbedoError('ALBEDO_TIMEOUT', `lost the lock on ${this.path} while working (${lost.err.message}); nothing was written`, {
                outcome: 'not_run',
              });
            }
            this.#write(doc);
          } finally {
            await releaseDoc();
          }
        });
        return value;
      } finally {
        await releaseRecord();
      }
    });
  }

  async #read(): Promise<CredsDoc> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw new AlbedoError('ALBEDO_INVALID_CONFIG', `cannot read ${this.path}: ${(err as Error).message}`, { outcome: 'not_run' });
    }
    if (!text.trim()) return {};
    try {
      const doc = JSON.parse(text) as unknown;
      if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new Error('not a JSON object');
      return doc as CredsDoc;
    } catch (err) {
      // Never quote the file: it holds secrets.
      const why = (err as Error).message.replace(/ in JSON at.*$/, '');
      throw new AlbedoError('ALBEDO_INVALID_CONFIG', `${this.path} is not a valid credentials file (${why}); fix or remove it`, { outcome: 'not_run' });
    }
  }

  /** Temporary file in the same directory (mode 0600), fsync, rename over: readers see the old or the new file, never half of one. */
  #write(doc: CredsDoc): void {
    const dir = path.dirname(this.path);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = path.join(dir, `.${path.basename(this.path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      writeSync(fd, `${JSON.stringify(doc, null, 2)}\n`);
      fsyncSync(fd);
    } catch (err) {
      closeSync(fd);
      try { unlinkSync(tmp); } catch { /* already gone */ }
      throw err;
    }
    closeSync(fd);
    try {
      renameSync(tmp, this.path);
    } catch (err) {
      try { unlinkSync(tmp); } catch { /* already gone */ }
      throw err;
    }
    chmodSync(this.path, 0o600);
  }

  /** Takes the lock directory `lockPath` (proper-lockfile keys its own bookkeeping by `target`, hence one target per lock). */
  async #lock(target: string, lockPath: string, lost: { err?: Error }): Promise<() => Promise<void>> {
    mkdirSync(path.dirname(lockPath), { recursive: true, mode: 0o700 });
    // The lock is a directory; a plain file there is a leftover of an earlier format and holds nothing.
    try {
      if (statSync(lockPath).isFile()) unlinkSync(lockPath);
    } catch {
      // Absent, or a directory: as it should be.
    }
    try {
      const release = await lockfile.lock(target, {
        lockfilePath: lockPath,
        realpath: false,
        stale: LOCK_STALE_MS,
        update: LOCK_UPDATE_MS,
        retries: { retries: 1_000, factor: 1.3, minTimeout: 5, maxTimeout: 100, maxRetryTime: LOCK_WAIT_MS },
        onCompromised: (err) => { lost.err = err; },
      });
      return async () => {
        await release().catch(() => {});
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ELOCKED') {
        const why = `another process holds ${lockPath} and is alive`;
        throw new AlbedoError('ALBEDO_TIMEOUT', `could not lock ${this.path} within ${LOCK_WAIT_MS / 1000} s: ${why}`, { outcome: 'not_run' });
      }
      throw err;
    }
  }
}

/** Credentials kept in memory (no state directory): a worker's own, lost with it. */
export class MemoryCredsStore implements CredsStore {
  readonly path = null;
  #records = new Map<string, OAuthRecord>();
  #version = 0;

  stamp(): string {
    return String(this.#version);
  }

  async get(name: string, url: string): Promise<OAuthRecord | undefined> {
    const r = this.#records.get(name);
    return r && r.url === url ? r : undefined;
  }

  update<T>(name: string, url: string, fn: Updater<T>): Promise<T> {
    return serial(`mem:${name}`, async () => {
      const cur = await this.get(name, url);
      const { record, value } = await fn(cur);
      if (record === null) this.#records.delete(name);
      else if (record !== undefined) this.#records.set(name, { ...record, url, updatedAt: Date.now() });
      if (record !== undefined) this.#version++;
      return value;
    });
  }
}

const memoryStores = new Map<string, MemoryCredsStore>();

/** One store object per file in a thread (so in-process serialisation covers every user). */
export function credsStore(file: string | null, memoryKey = 'default'): CredsStore {
  if (file === null) {
    let m = memoryStores.get(memoryKey);
    if (!m) memoryStores.set(memoryKey, (m = new MemoryCredsStore()));
    return m;
  }
  return (fileStores.get(file) ?? fileStores.set(file, new FileCredsStore(file)).get(file))!;
}
const fileStores = new Map<string, FileCredsStore>();
