/**
 * Typed secrets in creds.json, under `mcp.<server>.secrets` (beside the
 * OAuth record `mcp.<server>.oauth`, which services/oauth/store.ts owns).
 *
 * The store's public API writes only the `oauth` field of a record, so the
 * write here is a stand-in until it gains one for the other fields
 * (reported to the lead): it follows the store's protocol exactly — the
 * record's lock (`FileCredsStore.recordLockPath`, held across the caller's
 * whole change), then the document lock (`FileCredsStore.lockPath`, held
 * only to re-read, replace this one field and rename the new file in), the
 * same proper-lockfile settings, a holder that lost a lock writes nothing,
 * mode 0600 — so the oauth worker's refreshes and sign-ins, in any thread
 * or process, and these writes never lose each other's changes.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import lockfile from 'proper-lockfile';
import { AlbedoError } from '../../protocol/errors.ts';
import { storedSecretsSchema, type StoredSecrets } from '../../protocol/settings.ts';
import { FileCredsStore, type OAuthRecord } from '../oauth/store.ts';
import { writeFileAtomic } from './file.ts';

/** The store's lock timings (services/oauth/store.ts): stale after 30 s untouched, refreshed every 5 s, waited for up to 15 s. */
const LOCK = { stale: 30_000, update: 5_000, wait: 15_000 };

type Doc = Record<string, unknown> & { mcp?: Record<string, unknown> };

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** One read of creds.json: every server's typed secrets and OAuth record, or why the file cannot be used. */
export interface CredsSnapshot {
  /** Set when creds.json cannot be read or parsed (never quoting it); every lookup then fails. */
  problem?: string;
  /** The stored secrets of `name` (undefined: none); throws `invalid` for a record that fails its schema. */
  secrets(name: string): StoredSecrets | undefined;
  /** The OAuth record of `name` when it belongs to `url` (as FileCredsStore.get). */
  oauth(name: string, url: string): OAuthRecord | undefined;
}

function entryOf(doc: Doc, name: string): Record<string, unknown> | undefined {
  const mcp = doc.mcp;
  if (!isObject(mcp) || !Object.hasOwn(mcp, name)) return undefined;
  return isObject(mcp[name]) ? mcp[name] : undefined;
}

export class SecretsFile {
  readonly path: string;
  readonly #store: FileCredsStore;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(credsPath: string) {
    this.path = credsPath;
    this.#store = new FileCredsStore(credsPath);
  }

  /** Reads the document; no lock is needed, the file is only ever renamed over whole. */
  #read(): Doc {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw new AlbedoError('ALBEDO_INVALID_CONFIG', `cannot read ${this.path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, { outcome: 'not_run' });
    }
    if (!text.trim()) return {};
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      doc = undefined;
    }
    // Never quote the file: it holds secrets.
    if (!isObject(doc) || (doc.mcp !== undefined && !isObject(doc.mcp))) {
      throw new AlbedoError('ALBEDO_INVALID_CONFIG', `${this.path} is not a valid credentials file; fix or remove it`, { outcome: 'not_run' });
    }
    return doc as Doc;
  }

  snapshot(): CredsSnapshot {
    let doc: Doc;
    try {
      doc = this.#read();
    } catch (err) {
      const problem = (err as Error).message;
      const fail = (): never => { throw new AlbedoError('ALBEDO_INVALID_CONFIG', problem, { outcome: 'not_run' }); };
      return { problem, secrets: fail, oauth: fail };
    }
    return {
      secrets: (name) => parseStored(entryOf(doc, name)?.secrets, this.path),
      oauth: (name, url) => {
        const rec = entryOf(doc, name)?.oauth;
        return isObject(rec) && rec.url === url ? (rec as OAuthRecord) : undefined;
      },
    };
  }

  /**
   * Runs `fn` holding `name`'s record lock. `fn` gets the record's secrets as
   * read under the lock and a `write` that replaces them (null: removes them;
   * `{ entry: null }`: removes the server's whole entry, OAuth record
   * included) under the document lock. `beforeRename` is fault injection.
   */
  withRecord<T>(name: string, fn: (tx: SecretsTx) => Promise<T>, beforeRename?: () => void): Promise<T> {
    const run = this.#queue.then(async () => {
      const lost: { err?: Error } = {};
      const recordLock = this.#store.recordLockPath(name);
      const release = await this.#lock(recordLock.slice(0, -'.lock'.length), recordLock, lost);
      try {
        const tx: SecretsTx = {
          current: () => parseStored(entryOf(this.#read(), name)?.secrets, this.path),
          write: (next) => this.#writeField(name, next, lost, beforeRename),
        };
        return await fn(tx);
      } finally {
        await release();
      }
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #writeField(name: string, next: StoredSecrets | null | { entry: null }, lost: { err?: Error }, beforeRename?: () => void): Promise<void> {
    const release = await this.#lock(this.path, this.#store.lockPath, lost);
    try {
      const doc = this.#read();
      if (!Object.hasOwn(doc, 'mcp')) setOwn(doc, 'mcp', {});
      const mcp = doc.mcp!;
      if (Object.hasOwn(mcp, name) && !isObject(mcp[name])) {
        throw new AlbedoError('ALBEDO_INVALID_CONFIG', `${this.path}: the entry of one server is not an object; fix or remove the file`, {
          outcome: 'not_run',
        });
      }
      let entry = entryOf(doc, name);
      if (next !== null && 'entry' in next) {
        if (!entry) return;
        delete mcp[name];
      } else {
        if (!entry) setOwn(mcp, name, (entry = {}));
        if (next === null) delete entry.secrets;
        else entry.secrets = { ...next, updatedAt: Date.now() };
        if (Object.keys(entry).length === 0) delete mcp[name];
      }
      if (lost.err) {
        throw new AlbedoError('ALBEDO_TIMEOUT', `lost the lock on ${this.path} while working; nothing was written`, { outcome: 'not_run' });
      }
      writeFileAtomic(this.path, `${JSON.stringify(doc, null, 2)}\n`, { mode: 0o600, beforeRename });
    } finally {
      await release();
    }
  }

  async #lock(target: string, lockPath: string, lost: { err?: Error }): Promise<() => Promise<void>> {
    mkdirSync(this.#store.recordLockDir, { recursive: true, mode: 0o700 });
    try {
      const release = await lockfile.lock(target, {
        lockfilePath: lockPath,
        realpath: false,
        stale: LOCK.stale,
        update: LOCK.update,
        retries: { retries: 1_000, factor: 1.3, minTimeout: 5, maxTimeout: 100, maxRetryTime: LOCK.wait },
        onCompromised: (err) => { lost.err = err; },
      });
      return async () => { await release().catch(() => {}); };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ELOCKED') {
        throw new AlbedoError('ALBEDO_TIMEOUT', `could not lock ${this.path} within ${LOCK.wait / 1000} s: another process holds it`, { outcome: 'not_run' });
      }
      throw err;
    }
  }
}

export interface SecretsTx {
  current(): StoredSecrets | undefined;
  write(next: StoredSecrets | null | { entry: null }): Promise<void>;
}

function parseStored(v: unknown, file: string): StoredSecrets | undefined {
  if (v === undefined) return undefined;
  const r = storedSecretsSchema.safeParse(v);
  if (!r.success) {
    throw new AlbedoError('ALBEDO_INVALID_CONFIG', `${file}: the stored secrets of this server are not valid; save the server again`, { outcome: 'not_run' });
  }
  return r.data;
}
