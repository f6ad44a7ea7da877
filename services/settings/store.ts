/**
 * The settings in force, with no worker or kernel in it (service.ts wraps
 * it): extensions.json read and validated (a broken file keeps the previous
 * settings and reports `settings/invalid`), watched for hand edits, resolved
 * with fingerprints, and written — a server's entry and its typed secrets
 * together or not at all, one write at a time.
 *
 * Write order: extensions.json first, then creds.json, holding the server's
 * creds record lock across both; extensions.json is read under that lock,
 * just before its rename, and a caller's expectation of the entry (what its
 * write was planned on) is checked there. If the creds write fails,
 * extensions.json is put back byte for byte — unless it no longer holds
 * what this write put there (a hand edit since then stands). A write that
 * changes both files is journaled first (journal.ts): a process killed
 * between the two renames leaves a journal, and the next store to open the
 * home completes or undoes that write, so the files are the old pair or the
 * new pair, never one of each.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { mkdirSync, readFileSync } from 'node:fs';
import { AlbedoError } from '../../protocol/errors.ts';
import { sectionsPatchSchema } from '../../protocol/settings.ts';
import type {
  Settings,
  SettingsIssue,
  SettingsServer,
  SettingsServerInput,
  SecretsPatch,
  SectionsPatch,
  StoredSecrets,
  ExtensionsEnabled,
} from '../../protocol/settings.ts';
import type {
  ResolveAllResult,
  ResolvedSettingsServer,
  ServerChange,
  SettingsEvents,
  SettingsView,
} from '../../protocol/services/settings.ts';
import {
  SETTINGS_FILE,
  emptySettings,
  formatDocument,
  parseServerEntry,
  parseSettingsDocument,
  readSettingsFile,
  removeFileDurably,
  writeFileAtomic,
  type WriteHooks,
} from './file.ts';
import { SecretsFile, signedOutRecord, type CredsSnapshot } from './secrets.ts';
import { WriteJournal, secretsDigest, type CredsExpectation } from './journal.ts';
import { problemOf, resolveSettingsServer, type ResolveEnv } from './resolve.ts';
import { changeOf, diffKnown, knowAll, type Known } from './changes.ts';
import {
  applySecretsPatch,
  documentWith,
  documentWithSections,
  entryIn,
  invalidConfig,
  parseSecretsPatch,
  sameSecrets,
  secretsConflicts,
  stableJson,
  summaryOf,
  type EntryExpectation,
} from './writes.ts';
import { watchDir, type DirWatch } from './watch.ts';

export interface SettingsOptions {
  /** $ALBEDO_HOME: extensions.json and creds.json live here; relative paths in entries are taken from here. */
  home: string;
  /**
   * The path extensions.json is read and the home watched through (default `home`): the daemon's
   * `/proc/self/fd/N` of the home it checked and holds (protocol/private-dir.ts).
   */
  at?: string;
  /** Where `{ env }` secrets are looked up (default: process.env). */
  env?: NodeJS.ProcessEnv;
  onEvent?: <E extends keyof SettingsEvents>(name: E, payload: SettingsEvents[E]) => void;
  /** Quiet time before a hand edit is read (default 100 ms). */
  debounceMs?: number;
  /** Fault injection for tests. */
  hooks?: WriteHooks;
}

const CREDS_FILE = 'creds.json';

export class SettingsStore {
  readonly home: string;
  readonly file: string;
  /** extensions.json as it is read: through the held home, when there is one. */
  readonly #readFile: string;
  readonly #opts: SettingsOptions;
  readonly #secrets: SecretsFile;
  readonly #journal: WriteJournal;
  #settings: Settings = emptySettings();
  #generation = 0;
  /** Issues of the file on disk when it is broken; null when what is in force is what is on disk. */
  #invalid: SettingsIssue[] | null = null;
  #everValid = false;
  /** The bytes last taken in (null: absent): a watch event for the same bytes (our own write) changes nothing. */
  #bytes: Buffer | null | undefined = undefined;
  #known = new Map<string, Known>();
  #queue: Promise<unknown> = Promise.resolve();
  #watch: DirWatch | undefined;

  constructor(opts: SettingsOptions) {
    this.#opts = opts;
    this.home = path.resolve(opts.home);
    this.file = path.join(this.home, SETTINGS_FILE);
    this.#readFile = path.join(opts.at ?? this.home, SETTINGS_FILE);
    this.#secrets = new SecretsFile(path.join(this.home, CREDS_FILE));
    this.#journal = new WriteJournal(this.home, this.file);
  }

  /** Reads the files; with `watch`, hand edits (and creds.json changing) are picked up from then on. */
  async open(watch = true): Promise<this> {
    mkdirSync(this.home, { recursive: true, mode: 0o700 });
    this.#recover();
    // Watching first: an edit made while the first read runs is read again after it.
    if (watch) {
      this.#watch = watchDir(this.#opts.at ?? this.home, [SETTINGS_FILE, CREDS_FILE], this.#opts.debounceMs ?? 100, (name) => {
        void this.reload(name === CREDS_FILE ? 'credentials' : 'file').catch(() => {});
      });
    }
    await this.reload('file');
    return this;
  }

  /** Completes or undoes a two-file write a killed process left half done (journal.ts), before anything is read. */
  #recover(): void {
    try {
      this.#journal.recover((name) => this.#secrets.entry(name));
    } catch {
      // creds.json cannot be read now: the journal stays for a later start to decide; the settings load as they are.
    }
  }

  close(): void {
    this.#watch?.close();
    this.#watch = undefined;
  }

  /** One reload or write at a time, in order. */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  #env(creds: CredsSnapshot = this.#secrets.snapshot()): ResolveEnv {
    return { home: this.home, credsPath: this.#secrets.path, env: this.#opts.env ?? process.env, creds };
  }

  #emit<E extends keyof SettingsEvents>(name: E, payload: SettingsEvents[E]): void {
    try {
      this.#opts.onEvent?.(name, payload);
    } catch {
      // A listener's bug must not break the settings.
    }
  }

  /** Re-reads extensions.json (cause `file`) or re-resolves for creds.json (`credentials`); returns what is in force. */
  reload(cause: 'file' | 'credentials' = 'file'): Promise<{ generation: number; invalid: SettingsIssue[] | null }> {
    return this.#exclusive(async () => {
      const read = readSettingsFile(this.#readFile);
      const same =
        this.#bytes !== undefined && (read.bytes === null ? this.#bytes === null : this.#bytes !== null && read.bytes.equals(this.#bytes));
      if (!same) {
        this.#bytes = read.bytes;
        if (!read.result.ok) {
          this.#invalid = read.result.issues;
          this.#emit('settings/invalid', { path: this.file, issues: read.result.issues });
        } else {
          this.#commit(read.result.settings, 'file');
        }
      } else if (cause === 'credentials' && this.#everValid) {
        this.#commit(this.#settings, 'credentials');
      }
      return { generation: this.#generation, invalid: this.#invalid };
    });
  }

  /** Puts `next` in force and publishes which servers changed (entry, enabled, fingerprint or problem). */
  #commit(next: Settings, cause: 'file' | 'write' | 'credentials'): ServerChange[] {
    const known = knowAll(next, this.#env());
    const changes = diffKnown(this.#known, known);
    const prev = this.#settings;
    const sectionsChanged = !this.#everValid || prev.retryMs !== next.retryMs || stableJson(prev.enabled) !== stableJson(next.enabled);
    this.#settings = next;
    this.#known = known;
    this.#invalid = null;
    this.#everValid = true;
    if (changes.length || sectionsChanged) {
      this.#generation++;
      this.#emit('settings/changed', {
        generation: this.#generation,
        cause,
        servers: changes,
        retryMs: next.retryMs,
        enabled: { ...next.enabled },
      });
    }
    return changes;
  }

  /** The settings in force, with which typed secrets each server has (never a value). */
  get(): SettingsView {
    const creds = this.#secrets.snapshot();
    const servers: SettingsView['servers'] = Object.create(null);
    for (const [name, entry] of Object.entries(this.#settings.servers)) {
      let stored: StoredSecrets | undefined;
      try {
        stored = creds.secrets(name);
      } catch {
        stored = undefined;
      }
      servers[name] = { ...entry, secrets: summaryOf(stored) };
    }
    const { retryMs, enabled } = this.#settings;
    const digest = this.#bytes ? createHash('sha256').update(this.#bytes).digest('hex') : null;
    return { generation: this.#generation, path: this.file, servers, retryMs, enabled: { ...enabled }, invalid: this.#invalid, digest };
  }

  #entry(name: string): SettingsServer {
    if (!Object.hasOwn(this.#settings.servers, name)) {
      throw new AlbedoError('ALBEDO_NOT_FOUND', `no server ${JSON.stringify(name)} in ${this.file}`, {
        outcome: 'not_run',
        data: { server: name },
      });
    }
    return this.#settings.servers[name]!;
  }

  /** One server resolved, enabled or not. */
  resolve(name: string): ResolvedSettingsServer {
    return resolveSettingsServer(name, this.#entry(name), this.#env());
  }

  /** Every enabled server (narrowed by include/exclude); one that fails fails the call, naming every failing server. */
  resolveAll(p: { include?: string[]; exclude?: string[] } = {}): ResolveAllResult {
    if (!this.#everValid) throw invalidConfig(this.#invalid ?? [], `${this.file} is not valid`);
    for (const n of p.include ?? []) this.#entry(n);
    const env = this.#env();
    const servers: ResolvedSettingsServer[] = [];
    const disabled: string[] = [];
    const problems = [];
    for (const [name, entry] of Object.entries(this.#settings.servers)) {
      if ((p.include && !p.include.includes(name)) || p.exclude?.includes(name)) continue;
      if (!entry.enabled) {
        if (p.include) disabled.push(name);
        continue;
      }
      try {
        servers.push(resolveSettingsServer(name, entry, env));
      } catch (err) {
        problems.push(problemOf(err, name));
      }
    }
    if (problems.length) {
      throw new AlbedoError('ALBEDO_INVALID_CONFIG', `cannot prepare: ${problems.map((x) => x.message).join('; ')}`, {
        outcome: 'not_run',
        data: { issues: problems },
      });
    }
    return {
      generation: this.#generation,
      retryMs: this.#settings.retryMs,
      enabled: { ...this.#settings.enabled },
      servers,
      disabled,
      invalid: this.#invalid,
    };
  }

  /** Resolves an entry that is not saved, with its secrets as `put` would store them. Writes nothing. */
  resolveDraft(name: string, input: SettingsServerInput, patch?: SecretsPatch): ResolvedSettingsServer {
    const { entry, secrets } = this.#validate(name, input, patch);
    const creds = this.#secrets.snapshot();
    let cur: StoredSecrets | undefined;
    try {
      cur = creds.secrets(name);
    } catch {
      cur = undefined;
    }
    const next = this.#nextSecrets(name, entry, cur, secrets);
    // A sign-out in the patch: the draft is resolved as it will be, not signed in.
    const signOut = secrets?.oauth === null;
    const draft: CredsSnapshot = {
      secrets: (n) => (n === name ? (next ?? undefined) : creds.secrets(n)),
      oauth: (n, u) => {
        const rec = creds.oauth(n, u);
        return n === name && signOut && rec ? signedOutRecord(rec) : rec;
      },
    };
    return resolveSettingsServer(name, entry, this.#env(draft));
  }

  #validate(name: string, input: unknown, patch: unknown): { entry: SettingsServer; secrets: SecretsPatch | undefined } {
    const r = parseServerEntry(name, input);
    if (!r.ok) throw invalidConfig(r.issues);
    return { entry: r.server, secrets: patch === undefined ? undefined : parseSecretsPatch(name, patch) };
  }

  #nextSecrets(name: string, entry: SettingsServer, cur: StoredSecrets | undefined, patch: SecretsPatch | undefined): StoredSecrets | null {
    const next = applySecretsPatch(name, entry, cur, patch);
    const conflicts = secretsConflicts(name, entry, next);
    if (conflicts.length) throw invalidConfig(conflicts);
    return next;
  }

  /**
   * Adds or replaces server `name` with `input` (written as given) and applies the secrets patch, together or not at all.
   * `expect`: the entry the caller planned on (null: none); another in the file now refuses the write (ALBEDO_EDIT_CONFLICT).
   */
  async putServer(name: string, input: SettingsServerInput, patch?: SecretsPatch, expect?: EntryExpectation): Promise<ServerChange> {
    const { entry, secrets } = this.#validate(name, input, patch);
    const plan: CredsPlan = (cur) => ({ secrets: this.#nextSecrets(name, entry, cur, secrets), signOut: secrets?.oauth === null });
    return this.#write(name, input, plan, expect);
  }

  /** Removes server `name` and everything creds.json holds for it (its secrets and OAuth record). */
  async removeServer(name: string): Promise<ServerChange> {
    return this.#write(name, undefined, () => ({ entry: null }));
  }

  async #write(name: string, input: unknown, credsFor: CredsPlan, expect?: EntryExpectation): Promise<ServerChange> {
    try {
      return await this.#writeOnce(name, input, credsFor, expect);
    } catch (err) {
      throw asWriteError(err);
    }
  }

  #writeOnce(name: string, input: unknown, credsFor: CredsPlan, planned?: EntryExpectation): Promise<ServerChange> {
    return this.#exclusive(async () => {
      let done: { text: string; settings: Settings } | undefined;
      await this.#secrets.withRecord(
        name,
        async (tx) => {
          // Read under the record lock, just before the renames: what the new document keeps, and what `planned` is checked against.
          const read = readSettingsFile(this.#readFile);
          if (planned && (!read.result.ok || !read.doc)) {
            // The caller planned on a valid file (daemon/writes.ts refuses a broken one first): broken since is a hand edit meanwhile.
            const message = `${this.file} was changed (and is not valid now) while this save was under way; nothing was written: fix it, then try again`;
            throw new AlbedoError('ALBEDO_EDIT_CONFLICT', message, { outcome: 'not_run', data: { server: name } });
          }
          if (!read.result.ok || !read.doc)
            throw invalidConfig(read.result.ok ? [] : read.result.issues, `${this.file} is not valid; fix it first`);
          if (input === undefined && !Object.hasOwn(read.result.settings.servers, name)) {
            throw new AlbedoError('ALBEDO_NOT_FOUND', `no server ${JSON.stringify(name)} in ${this.file}`, {
              outcome: 'not_run',
              data: { server: name },
            });
          }
          if (planned && stableJson(entryIn(read.doc, name) ?? null) !== stableJson(planned.entry)) {
            const message = `${name} was changed in ${this.file} while this save was under way; nothing was written: read it again`;
            throw new AlbedoError('ALBEDO_EDIT_CONFLICT', message, { outcome: 'not_run', data: { server: name } });
          }
          const doc = documentWith(read.doc, name, input);
          const next = parseSettingsDocument(doc);
          if (!next.ok) throw invalidConfig(next.issues);
          const text = formatDocument(doc);
          const cur = safeCurrent(tx.current);
          const { change, expect } = credsChangeOf(credsFor(cur), cur, tx.signedIn());
          // Both files change: journaled first, so a kill between the two renames is completed or undone at the next start.
          if (expect) this.#journal.begin(name, read.bytes, text, expect);
          try {
            writeFileAtomic(this.file, text, { beforeRename: this.#opts.hooks?.beforeConfigRename });
          } catch (err) {
            this.#journal.end();
            throw err;
          }
          try {
            if (change) await tx.write(change.next, { signOut: change.signOut });
          } catch (err) {
            this.#restore(read.bytes, text, err);
            this.#journal.end();
            throw err;
          }
          this.#journal.end();
          done = { text, settings: next.settings };
        },
        this.#opts.hooks?.beforeCredsRename,
      );
      this.#bytes = Buffer.from(done!.text);
      const changes = this.#commit(done!.settings, 'write');
      return changes.find((c) => c.name === name) ?? this.#unchanged(name);
    });
  }

  /**
   * Changes `mcp.retryMs` and the extensions' defaults by a merge patch
   * (sectionsPatchSchema), every other key and section kept; one atomic
   * write of extensions.json (creds.json is not touched). A patch that
   * changes nothing writes nothing.
   */
  async putSection(patch: SectionsPatch): Promise<{ generation: number; retryMs: number; enabled: ExtensionsEnabled }> {
    const p = sectionsPatchSchema.safeParse(patch);
    if (!p.success) {
      throw invalidConfig(
        p.error.issues.map((i) => ({ server: null, path: i.path.map((x) => (typeof x === 'symbol' ? String(x) : x)), message: i.message })),
      );
    }
    try {
      return await this.#exclusive(async () => {
        const read = readSettingsFile(this.#readFile);
        if (!read.result.ok || !read.doc)
          throw invalidConfig(read.result.ok ? [] : read.result.issues, `${this.file} is not valid; fix it first`);
        const doc = documentWithSections(read.doc, p.data);
        const next = parseSettingsDocument(doc);
        if (!next.ok) throw invalidConfig(next.issues);
        if (stableJson(doc) !== stableJson(read.doc)) {
          const text = formatDocument(doc);
          writeFileAtomic(this.file, text, { beforeRename: this.#opts.hooks?.beforeConfigRename });
          this.#bytes = Buffer.from(text);
        }
        this.#commit(next.settings, 'write');
        return { generation: this.#generation, retryMs: this.#settings.retryMs, enabled: { ...this.#settings.enabled } };
      });
    } catch (err) {
      throw asWriteError(err);
    }
  }

  /**
   * Puts extensions.json back as it was (`bytes`) before a write whose creds half failed (`cause`) — only while it
   * still holds what that write put there (`wrote`): a hand edit made since then stands, as the journal's recovery keeps it.
   */
  #restore(bytes: Buffer | null, wrote: string, cause: unknown): void {
    let now: Buffer | null;
    try {
      now = readFileSync(this.#readFile);
    } catch {
      now = null;
    }
    if (now === null || !now.equals(Buffer.from(wrote))) return;
    try {
      if (bytes === null) removeFileDurably(this.file);
      else writeFileAtomic(this.file, bytes);
    } catch (err) {
      throw new AlbedoError(
        'ALBEDO_INTERNAL',
        `the credentials could not be written (${(cause as Error).message}), and restoring ${this.file} failed too ` +
          `(${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); it holds the new entry`,
        { outcome: 'not_run', cause },
      );
    }
  }

  #unchanged(name: string): ServerChange {
    const k = this.#known.get(name);
    return k ? changeOf(name, k, 'updated') : { name, change: 'removed', enabled: false, fingerprint: null };
  }
}

/** What a server write does to its creds.json entry, given the stored secrets. */
type CredsPlan = (cur: StoredSecrets | undefined) => { secrets: StoredSecrets | null; signOut: boolean } | { entry: null };

interface CredsChange {
  next: StoredSecrets | null | { entry: null };
  signOut: boolean;
}

/**
 * The creds.json change a plan makes (null: none, creds.json is not
 * written) and, when there is one, what the entry looks like once it is
 * written (for the journal): always different from what it is now.
 */
function credsChangeOf(
  plan: ReturnType<CredsPlan>,
  cur: StoredSecrets | undefined,
  signedIn: boolean,
): { change: CredsChange | null; expect: CredsExpectation | null } {
  if ('entry' in plan) return { change: { next: plan, signOut: false }, expect: { removed: true } };
  const secretsChange = !sameSecrets(cur, plan.secrets);
  const signOut = plan.signOut && signedIn;
  if (!secretsChange && !signOut) return { change: null, expect: null };
  // A sign-out alone writes the secrets as they are (the same content).
  const next = secretsChange ? plan.secrets : (cur ?? null);
  return { change: { next, signOut }, expect: { removed: false, secrets: secretsDigest(next), signedOut: signOut } };
}

/** A write's failure: an AlbedoError as it is; a filesystem failure (both files as they were) as ALBEDO_INTERNAL, its errno named. */
function asWriteError(err: unknown): unknown {
  if (AlbedoError.is(err)) return err;
  const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  return new AlbedoError('ALBEDO_INTERNAL', `the settings could not be written (${why}); nothing changed`, {
    outcome: 'not_run',
    cause: err,
  });
}

/** The stored secrets, or none when the record cannot be read: a write then replaces it. */
function safeCurrent(read: () => StoredSecrets | undefined): StoredSecrets | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}
