/**
 * creds.json: OAuth tokens and client registrations, typed secrets, any
 * other secret the daemon keeps; mode 0600, written atomically (temporary
 * file, fsync, rename: platform/atomic-file.ts), never
 * logged, never quoted in an error. This module is its only writer.
 *
 * Each server has one entry, `mcp.<name>`, whose fields have different
 * writers: `oauth`, the OAuth record (the oauth worker, through `update`),
 * and `secrets` (services/settings/secrets.ts). Every change to an entry is
 * one transaction (`withEntry`, `updateEntry`), under two cross-process
 * locks (platform/lock.ts: an atomic mkdir whose mtime the holder refreshes
 * every few seconds, so only a holder that stopped — crashed, killed — goes
 * stale). The entry's lock (creds.json.locks/<digest of the name>.lock) is
 * held across the caller's work — a refresh's request to the authorization
 * server included — and the entry is read after taking it, so two processes
 * refreshing one server's rotating refresh token do it once: the second
 * finds the first's new token and adopts it (docs/design.md, "Sign-in": a
 * refresh happens once across processes). Writing takes creds.json.lock only
 * for the re-read, change and rename, never across a network call, so one slow
 * authorization server delays no other server's refresh or sign-in. A write is
 * a patch of fields applied to the entry as re-read under that lock: a writer
 * of one field never drops another's. Locks are taken in that order only
 * (entry, then document). A holder that lost either lock (compromised) writes
 * nothing.
 *
 * The OAuth record carries the server URL it belongs to, and a record for
 * another URL is treated as absent. Names are looked up as own properties
 * only: any string, `__proto__` included, is a plain key and never reaches
 * Object.prototype.
 */
import { chmodSync, mkdirSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { createHash, type webcrypto } from 'node:crypto';
import { AlbedoError } from '../../protocol/errors.ts';
import { writeFileAtomic } from '../../platform/atomic-file.ts';
import { lockDir } from '../../platform/lock.ts';

type JsonWebKey = webcrypto.JsonWebKey;

export type { AuthState } from '../../protocol/oauth.ts';
import type { AuthState } from '../../protocol/oauth.ts';

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

type CredsDoc = Record<string, unknown> & { mcp?: unknown };

/** A lock whose holder stopped refreshing it this long ago is presumed dead; holders refresh it every LOCK_UPDATE_MS. */
const LOCK_STALE_MS = 30_000;
const LOCK_UPDATE_MS = 5_000;
/** How long to wait for the lock: 15 s, as every OAuth exchange (docs/design.md, "Sign-in"). */
const LOCK_WAIT_MS = 15_000;

/** One server's entry in creds.json, `mcp.<name>`: its fields (`oauth`, `secrets`, any other) as stored. */
export type CredsEntry = Readonly<Record<string, unknown>>;

/**
 * A change to one entry. Each own field of the patch replaces that field
 * (null: removes it; undefined: leaves it); fields it does not name keep what
 * the file holds when re-read under the document lock. `null` as the whole
 * patch removes the entry. An entry left with no field is removed.
 */
export type EntryPatch = Readonly<Record<string, unknown>> | null;

export interface EntryWriteOptions {
  /** Fault injection: called just before the new file is renamed in; throwing fails the write there and leaves the file as it was. */
  beforeRename?: () => void;
}

/** A transaction on one entry, open while `withEntry` holds the entry's lock. */
export interface EntryTx {
  /**
   * The entry as stored now; no lock is needed, only this transaction changes it. Throws
   * ALBEDO_INVALID_CONFIG for a file that cannot be read.
   */
  read(): CredsEntry | undefined;
  /**
   * Applies `patch` to the entry as re-read under the document lock and puts the new file in place. Writes nothing,
   * throwing ALBEDO_TIMEOUT, when a lock was lost meanwhile; ALBEDO_INTERNAL once the transaction has ended.
   */
  write(patch: EntryPatch, opts?: EntryWriteOptions): Promise<void>;
}

/** What `updateEntry` makes of the current entry: the patch to write (undefined: nothing) and a value for the caller. */
export interface EntryUpdate<T> {
  patch: EntryPatch | undefined;
  value: T;
}
export type EntryUpdater<T> = (entry: CredsEntry | undefined) => Promise<EntryUpdate<T>> | EntryUpdate<T>;

/** What an update makes of the current record: the record to write (undefined: none, null: delete it) and a value for the caller. */
export type Updater<T> = (
  rec: OAuthRecord | undefined,
) => Promise<{ record: OAuthRecord | undefined | null; value: T }> | { record: OAuthRecord | undefined | null; value: T };

export interface CredsStore {
  /** The OAuth record for `name` if it belongs to `url`. */
  get(name: string, url: string): Promise<OAuthRecord | undefined>;
  /**
   * Runs `fn` on the current OAuth record under the entry's cross-process lock (other entries stay writable meanwhile);
   * what it returns is written (undefined: nothing, null: the record is deleted), the entry's other fields kept. `fn`
   * throwing writes nothing.
   */
  update<T>(name: string, url: string, fn: Updater<T>): Promise<T>;
  /** The entry of `name` as stored, read without a lock (the file is only ever replaced whole). */
  readEntry(name: string): Promise<CredsEntry | undefined>;
  /** Runs `fn` holding the entry's lock, however long it takes; its transaction reads the entry and writes patches of it. */
  withEntry<T>(name: string, fn: (tx: EntryTx) => Promise<T>): Promise<T>;
  /**
   * One read-change-write under the entry's lock: `fn` gets the entry, and the patch it returns is
   * written. `fn` throwing writes nothing.
   */
  updateEntry<T>(name: string, fn: EntryUpdater<T>, opts?: EntryWriteOptions): Promise<T>;
  readonly path: string | null;
  /** Changes whenever the stored document may have changed (another thread or process wrote it): a cheap staleness check. */
  stamp(): string;
}

/** creds.json as read once, without a lock. */
export interface CredsView {
  /** The entry of `name` when it is an object, as an own property only (a name such as `__proto__` or `constructor` is just a key). */
  entry(name: string): CredsEntry | undefined;
  /** The names that have an entry. */
  names(): string[];
  /** False when `mcp` is there but not an object (a broken hand edit): no entry is read from it, and every write fails. */
  readonly wellFormed: boolean;
}

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Sets an own, enumerable property, even one named `__proto__` (which plain assignment would take for the prototype). */
function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

function entryOf(doc: CredsDoc, name: string): Record<string, unknown> | undefined {
  const mcp = doc.mcp;
  if (!isObject(mcp) || !Object.hasOwn(mcp, name)) return undefined;
  const entry = mcp[name];
  return isObject(entry) ? entry : undefined;
}

function recordOf(entry: CredsEntry | undefined): OAuthRecord | undefined {
  return entry && Object.hasOwn(entry, 'oauth') && isObject(entry.oauth) ? (entry.oauth as OAuthRecord) : undefined;
}

/** The OAuth record in an entry, when it belongs to `url`. */
export function oauthOf(entry: CredsEntry | undefined, url: string): OAuthRecord | undefined {
  const rec = recordOf(entry);
  return rec && rec.url === url ? rec : undefined;
}

/** An OAuth update as an entry update: only the `oauth` field is written, carrying the URL it belongs to. */
function oauthUpdater<T>(url: string, fn: Updater<T>): EntryUpdater<T> {
  return async (entry) => {
    const { record, value } = await fn(oauthOf(entry, url));
    if (record === undefined) return { patch: undefined, value };
    return { patch: { oauth: record === null ? null : { ...record, url, updatedAt: Date.now() } }, value };
  };
}

async function runUpdate<T>(tx: EntryTx, fn: EntryUpdater<T>, opts?: EntryWriteOptions): Promise<T> {
  const { patch, value } = await fn(tx.read());
  if (patch !== undefined) await tx.write(patch, opts);
  return value;
}

/** Patches `entry` in place (see EntryPatch) and returns it. */
function applyPatch(entry: Record<string, unknown>, patch: Readonly<Record<string, unknown>>): Record<string, unknown> {
  for (const field of Object.keys(patch)) {
    const v = patch[field];
    if (v === null) delete entry[field];
    else if (v !== undefined) setOwn(entry, field, v);
  }
  return entry;
}

/** Runs `fn` with a transaction whose writes are refused once it has ended (its lock is no longer held). */
async function transaction<T>(read: EntryTx['read'], write: EntryTx['write'], fn: (tx: EntryTx) => Promise<T>): Promise<T> {
  let open = true;
  try {
    return await fn({
      read,
      write: async (patch, opts) => {
        if (!open)
          throw new AlbedoError('ALBEDO_INTERNAL', 'a credentials write after its transaction ended; nothing was written', {
            outcome: 'not_run',
          });
        await write(patch, opts);
      },
    });
  } finally {
    open = false;
  }
}

/** In-process serialisation per key (an entry, a document), on top of the cross-process locks. */
const queues = new Map<string, Promise<unknown>>();

function serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const prev = queues.get(key) ?? Promise.resolve();
  const run = prev.then(fn, fn);
  const tail = run.then(
    () => undefined,
    () => undefined,
  );
  queues.set(key, tail);
  void tail.then(() => {
    if (queues.get(key) === tail) queues.delete(key);
  });
  return run;
}

function invalid(message: string): AlbedoError {
  return new AlbedoError('ALBEDO_INVALID_CONFIG', message, { outcome: 'not_run' });
}

export class FileCredsStore implements CredsStore {
  readonly path: string;
  /** The document lock: held only while the file is re-read, changed and renamed over. */
  readonly lockPath: string;
  /** Where the per-entry locks live. */
  readonly recordLockDir: string;

  constructor(file: string) {
    this.path = file;
    this.lockPath = `${file}.lock`;
    this.recordLockDir = `${file}.locks`;
  }

  /** The lock of one server's entry; the name is digested, so any string makes a safe file name. */
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

  /**
   * Reads the file once (no lock: it is only ever renamed over whole). Throws ALBEDO_INVALID_CONFIG
   * when it cannot be read or is not a JSON object.
   */
  view(): CredsView {
    const doc = this.#read();
    return {
      wellFormed: doc.mcp === undefined || isObject(doc.mcp),
      entry: (name) => entryOf(doc, name),
      names: () => (isObject(doc.mcp) ? Object.keys(doc.mcp) : []),
    };
  }

  async readEntry(name: string): Promise<CredsEntry | undefined> {
    return this.view().entry(name);
  }

  async get(name: string, url: string): Promise<OAuthRecord | undefined> {
    return oauthOf(await this.readEntry(name), url);
  }

  /** Every server's OAuth record, for status listings (a null-prototype object: any name is a plain key). */
  async all(): Promise<Record<string, OAuthRecord>> {
    const view = this.view();
    const out = Object.create(null) as Record<string, OAuthRecord>;
    for (const n of view.names()) {
      const rec = recordOf(view.entry(n));
      if (rec) setOwn(out, n, rec);
    }
    return out;
  }

  update<T>(name: string, url: string, fn: Updater<T>): Promise<T> {
    return this.updateEntry(name, oauthUpdater(url, fn));
  }

  updateEntry<T>(name: string, fn: EntryUpdater<T>, opts?: EntryWriteOptions): Promise<T> {
    return this.withEntry(name, (tx) => runUpdate(tx, fn, opts));
  }

  withEntry<T>(name: string, fn: (tx: EntryTx) => Promise<T>): Promise<T> {
    return serial(`${this.path}\0${name}`, async () => {
      const lost: { err?: Error } = {};
      const lockPath = this.recordLockPath(name);
      const releaseRecord = await this.#lock(lockPath.slice(0, -'.lock'.length), lockPath, lost);
      try {
        return await transaction(
          () => this.view().entry(name),
          (patch, opts) => this.#write(name, patch, lost, opts),
          fn,
        );
      } finally {
        await releaseRecord();
      }
    });
  }

  /** Re-reads the document under its lock (so entries written meanwhile are kept), patches one entry and renames the new file in. */
  #write(name: string, patch: EntryPatch, lost: { err?: Error }, opts: EntryWriteOptions = {}): Promise<void> {
    return serial(this.path, async () => {
      const releaseDoc = await this.#lock(this.path, this.lockPath, lost);
      try {
        const doc = this.#read();
        if (doc.mcp !== undefined && !isObject(doc.mcp)) throw invalid(`${this.path}: "mcp" is not an object; fix or remove the file`);
        const present = isObject(doc.mcp) && Object.hasOwn(doc.mcp, name);
        if (present && !entryOf(doc, name)) throw invalid(`${this.path}: the entry of one server is not an object; fix or remove the file`);
        if (patch === null && !present) return;
        if (!Object.hasOwn(doc, 'mcp')) setOwn(doc, 'mcp', {});
        const mcp = doc.mcp as Record<string, unknown>;
        const entry = patch === null ? {} : applyPatch(entryOf(doc, name) ?? {}, patch);
        if (Object.keys(entry).length === 0) delete mcp[name];
        else setOwn(mcp, name, entry);
        // Someone judged us dead and took a lock: what we read may be stale, so nothing is written.
        if (lost.err) {
          throw new AlbedoError(
            'ALBEDO_TIMEOUT',
            `lost the lock on ${this.path} while working (${lost.err.message}); nothing was written`,
            {
              outcome: 'not_run',
            },
          );
        }
        writeFileAtomic(this.path, `${JSON.stringify(doc, null, 2)}\n`, { mode: 0o600, beforeRename: opts.beforeRename });
        // The temporary file's mode went through the umask: the file is 0600 whatever that is.
        chmodSync(this.path, 0o600);
      } finally {
        await releaseDoc();
      }
    });
  }

  #read(): CredsDoc {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw invalid(`cannot read ${this.path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    if (!text.trim()) return {};
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      // Never quote the file: it holds secrets, and JSON.parse's message quotes the text around the fault. Its position is safe.
      const at = /line (\d+) column (\d+)/.exec((err as Error).message);
      throw invalid(
        `${this.path} is not a valid credentials file (not valid JSON${at ? ` at line ${at[1]}, column ${at[2]}` : ''}); fix or remove it`,
      );
    }
    if (!isObject(doc)) throw invalid(`${this.path} is not a valid credentials file (not a JSON object); fix or remove it`);
    return doc;
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
      return await lockDir(target, lockPath, {
        stale: LOCK_STALE_MS,
        update: LOCK_UPDATE_MS,
        retries: { retries: 1_000, factor: 1.3, minTimeout: 5, maxTimeout: 100, maxRetryTime: LOCK_WAIT_MS },
        onCompromised: (err) => {
          lost.err = err;
        },
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ELOCKED') {
        const why = `another process holds ${lockPath} and is alive`;
        throw new AlbedoError('ALBEDO_TIMEOUT', `could not lock ${this.path} within ${LOCK_WAIT_MS / 1000} s: ${why}`, {
          outcome: 'not_run',
        });
      }
      throw err;
    }
  }
}

/** Credentials kept in memory (no state directory): a worker's own, lost with it. */
export class MemoryCredsStore implements CredsStore {
  readonly path = null;
  #entries = new Map<string, CredsEntry>();
  #version = 0;

  stamp(): string {
    return String(this.#version);
  }

  async readEntry(name: string): Promise<CredsEntry | undefined> {
    return this.#entries.get(name);
  }

  async get(name: string, url: string): Promise<OAuthRecord | undefined> {
    return oauthOf(this.#entries.get(name), url);
  }

  update<T>(name: string, url: string, fn: Updater<T>): Promise<T> {
    return this.updateEntry(name, oauthUpdater(url, fn));
  }

  updateEntry<T>(name: string, fn: EntryUpdater<T>, opts?: EntryWriteOptions): Promise<T> {
    return this.withEntry(name, (tx) => runUpdate(tx, fn, opts));
  }

  withEntry<T>(name: string, fn: (tx: EntryTx) => Promise<T>): Promise<T> {
    return serial(`mem\0${name}`, () =>
      transaction(
        () => this.#entries.get(name),
        async (patch, opts = {}) => {
          const cur = this.#entries.get(name);
          if (patch === null && !cur) return;
          // A copy is patched: an entry handed out before stays as it was.
          const next = patch === null ? {} : applyPatch({ ...cur }, patch);
          opts.beforeRename?.();
          if (Object.keys(next).length === 0) this.#entries.delete(name);
          else this.#entries.set(name, next);
          this.#version++;
        },
        fn,
      ),
    );
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
