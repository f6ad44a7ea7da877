/**
 * The settings in force, with no worker or kernel in it (service.ts wraps
 * it): extensions.json (or the file of another codec: codec.ts) read and
 * validated (a broken file keeps the previous settings and reports
 * `settings/invalid`), watched for hand edits, resolved with fingerprints,
 * and written — a server's entry and its typed secrets together or not at
 * all, one write at a time. A save's transaction (plan, try, commit) is
 * apply.ts, over the turns of the queue this store gives it.
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
import path from 'node:path';
import { mkdirSync } from 'node:fs';
import { AlbedoError } from '../../protocol/errors.ts';
import { sectionsPatchSchema } from '../../protocol/settings.ts';
import type { Settings, SettingsIssue, SettingsServer, SettingsServerInput, SecretsPatch, SectionsPatch } from '../../protocol/settings.ts';
import type {
  ResolveAllResult,
  ResolvedSettingsServer,
  SectionView,
  ServerChange,
  ServerState,
  SettingsEvents,
  SettingsView,
} from '../../protocol/services/settings.ts';
import {
  emptySettings,
  parseServerEntry,
  parseSettingsDocument,
  readSettingsFile,
  restoreSettingsFile,
  type SettingsRead,
  type WriteHooks,
} from './file.ts';
import { jsonCodec, type SettingsCodec } from './codec.ts';
import { writeFileAtomic } from '../../platform/atomic-file.ts';
import { SecretsFile, draftSnapshot, storedOf, type CredsSnapshot } from './secrets.ts';
import { WriteJournal } from './journal.ts';
import { problemOf, resolutionOf, resolveSettingsServer, type ResolveEnv } from './resolve.ts';
import { changeOf, diffKnown, gatewaysChanged, knowAll, type Known } from './changes.ts';
import {
  asWriteError,
  documentWith,
  documentWithSections,
  entryIn,
  invalidConfig,
  parseSecretsPatch,
  settingsWith,
  stableJson,
  summaryOf,
  type EntryExpectation,
} from './writes.ts';
import { credsChangeOf, credsPlanOf, nextSecrets, safeCurrent, type CredsPlan } from './creds-plan.ts';
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
  /** The file's format (default JSON: extensions.json). */
  codec?: SettingsCodec;
}

const CREDS_FILE = 'creds.json';

export class SettingsStore {
  readonly home: string;
  readonly file: string;
  /** extensions.json as it is read: through the held home, when there is one. */
  readonly #readFile: string;
  readonly #opts: SettingsOptions;
  readonly #codec: SettingsCodec;
  /** The last read of a valid file (or the document last written): the same bytes again are not parsed again. */
  #lastRead: SettingsRead | undefined;
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
    this.#codec = opts.codec ?? jsonCodec;
    this.home = path.resolve(opts.home);
    this.file = path.join(this.home, this.#codec.file);
    this.#readFile = path.join(opts.at ?? this.home, this.#codec.file);
    this.#secrets = new SecretsFile(path.join(this.home, CREDS_FILE));
    this.#journal = new WriteJournal(this.home, this.file);
  }

  /** Reads the files; with `watch`, hand edits (and creds.json changing) are picked up from then on. */
  async open(watch = true): Promise<this> {
    mkdirSync(this.home, { recursive: true, mode: 0o700 });
    this.#recover();
    // Watching first: an edit made while the first read runs is read again after it.
    if (watch) {
      this.#watch = watchDir(this.#opts.at ?? this.home, [this.#codec.file, CREDS_FILE], this.#opts.debounceMs ?? 100, (name) => {
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
      this.#takeIn(cause);
      return { generation: this.#generation, invalid: this.#invalid };
    });
  }

  /** The file as it is now: parsed and validated only when its bytes are not those of the last valid read. */
  #readNow(): SettingsRead {
    const read = readSettingsFile(this.#readFile, this.#codec, this.#lastRead);
    if (read.result.ok) this.#lastRead = read;
    return read;
  }

  /** Takes in the file as it is now, in a turn of the queue: other bytes than those in force are put in force, or reported invalid. */
  #takeIn(cause: 'file' | 'credentials'): SettingsRead {
    const read = this.#readNow();
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
    return read;
  }

  /**
   * A turn of the queue over the file as it is on disk now (a hand edit not yet picked up is taken in first, as the
   * watcher would): `fn` gets the document as written. A broken file refuses it: ALBEDO_INVALID_CONFIG, `data.broken`.
   */
  turn<T>(fn: (doc: Record<string, unknown>) => Promise<T> | T): Promise<T> {
    return this.#exclusive(async () => {
      const read = this.#takeIn('file');
      if (!read.result.ok || !read.doc) {
        const issues = read.result.ok ? [] : read.result.issues;
        const n = `${issues.length} issue${issues.length === 1 ? '' : 's'}`;
        const data = { issues, broken: true };
        throw new AlbedoError('ALBEDO_INVALID_CONFIG', `${this.file} is not valid (${n}); fix it before saving`, {
          outcome: 'not_run',
          data,
        });
      }
      return fn(read.doc);
    });
  }

  /** A turn of the queue: no reload or write runs meanwhile. */
  queued<T>(fn: () => Promise<T> | T): Promise<T> {
    return this.#exclusive(async () => fn());
  }

  /** Puts `next` in force and publishes which servers changed (entry, enabled, fingerprint or problem). */
  #commit(next: Settings, cause: 'file' | 'write' | 'credentials'): ServerChange[] {
    const known = knowAll(next, this.#env());
    const changes = diffKnown(this.#known, known);
    const prev = this.#settings;
    const gateways = gatewaysChanged(prev.gateways, next.gateways);
    const sectionsChanged =
      !this.#everValid || prev.retryMs !== next.retryMs || stableJson(prev.enabled) !== stableJson(next.enabled) || gateways.length > 0;
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
        gateways,
      });
    }
    return changes;
  }

  /** The settings in force, with which typed secrets each server has (never a value). */
  get(): SettingsView {
    const creds = this.#secrets.snapshot();
    const servers: SettingsView['servers'] = Object.create(null);
    for (const [name, entry] of Object.entries(this.#settings.servers))
      servers[name] = { ...entry, secrets: summaryOf(storedOf(creds, name)) };
    const { retryMs, enabled } = this.#settings;
    const gateways = this.gateways();
    return { generation: this.#generation, path: this.file, servers, retryMs, enabled: { ...enabled }, gateways, invalid: this.#invalid };
  }

  /** The gateways in force: a copy, without a prototype. */
  gateways(): Settings['gateways'] {
    return Object.assign(Object.create(null) as Settings['gateways'], this.#settings.gateways);
  }

  /** The mcp section in force. */
  section(): SectionView {
    return { retryMs: this.#settings.retryMs, enabled: { ...this.#settings.enabled }, path: this.file, invalid: this.#invalid };
  }

  /** One server in force (null: none) as `get` shows it, with what it resolves to (its secret values left out). */
  state(name: string): ServerState | null {
    if (!Object.hasOwn(this.#settings.servers, name)) return null;
    const creds = this.#secrets.snapshot();
    const entry = this.#settings.servers[name]!;
    return { server: { ...entry, secrets: summaryOf(storedOf(creds, name)) }, resolution: resolutionOf(name, entry, this.#env(creds)) };
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

  /** Resolves an entry (validated) that is not saved, with its secrets as a write would store them. Writes nothing. */
  resolveDraft(name: string, entry: SettingsServer, secrets?: SecretsPatch): ResolvedSettingsServer {
    const creds = this.#secrets.snapshot();
    const next = nextSecrets(name, entry, storedOf(creds, name), secrets);
    // A sign-out in the patch: the draft is resolved as it will be, not signed in.
    return resolveSettingsServer(name, entry, this.#env(draftSnapshot(creds, name, next, secrets?.oauth === null)));
  }

  #validate(name: string, input: unknown, patch: unknown): { entry: SettingsServer; secrets: SecretsPatch | undefined } {
    const r = parseServerEntry(name, input);
    if (!r.ok) throw invalidConfig(r.issues);
    return { entry: r.server, secrets: patch === undefined ? undefined : parseSecretsPatch(name, patch) };
  }

  /**
   * Adds or replaces server `name` with `input` (written as given) and applies the secrets patch, together or not at all.
   * `expect`: the entry the caller planned on (null: none); another in the file now refuses the write (ALBEDO_EDIT_CONFLICT).
   */
  async putServer(name: string, input: SettingsServerInput, patch?: SecretsPatch, expect?: EntryExpectation): Promise<ServerChange> {
    const { entry, secrets } = this.#validate(name, input, patch);
    return this.#exclusive(() => this.writeServer(name, input, entry, credsPlanOf(name, entry, secrets), expect));
  }

  /** Removes server `name` and everything creds.json holds for it (its secrets and OAuth record). */
  async removeServer(name: string): Promise<ServerChange> {
    return this.#exclusive(() => this.writeServer(name, undefined, undefined, () => ({ entry: null })));
  }

  /**
   * Writes server `name` — `input` as written, `entry` its validated form (both undefined: removed) — with the
   * creds.json change `credsFor` makes, in the caller's turn of the queue (`turn`, `queued`). `planned`: the entry
   * the caller planned on (null: none); another in the file now refuses the write (ALBEDO_EDIT_CONFLICT).
   */
  async writeServer(
    name: string,
    input: unknown,
    entry: SettingsServer | undefined,
    credsFor: CredsPlan,
    planned?: EntryExpectation,
  ): Promise<ServerChange> {
    try {
      return await this.#writeServer(name, input, entry, credsFor, planned);
    } catch (err) {
      throw asWriteError(err);
    }
  }

  async #writeServer(
    name: string,
    input: unknown,
    entry: SettingsServer | undefined,
    credsFor: CredsPlan,
    planned?: EntryExpectation,
  ): Promise<ServerChange> {
    let done: { text: string; doc: Record<string, unknown>; settings: Settings } | undefined;
    await this.#secrets.withRecord(
      name,
      async (tx) => {
        // Read under the record lock, just before the renames: what the new document keeps, and what `planned` is checked against.
        const read = this.#readNow();
        if (planned && (!read.result.ok || !read.doc)) {
          // The caller planned on a valid file (apply.ts refuses a broken one first): broken since is a hand edit meanwhile.
          const message =
            `${this.file} was changed (and is not valid now) while this save was under way; ` +
            'nothing was written: fix it, then try again';
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
        // The entry was validated once (the caller's plan) and the rest of the file when it was read: not again.
        const settings = settingsWith(read.result.settings, name, entry);
        const text = this.#codec.format(doc);
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
          restoreSettingsFile(this.#readFile, this.file, read.bytes, text, err);
          this.#journal.end();
          throw err;
        }
        this.#journal.end();
        done = { text, doc, settings };
      },
      this.#opts.hooks?.beforeCredsRename,
    );
    this.#wrote(done!.text, done!.doc, done!.settings);
    const changes = this.#commit(done!.settings, 'write');
    return changes.find((c) => c.name === name) ?? this.#unchanged(name);
  }

  /** What this store wrote is what is on disk: the watcher's event for it changes nothing, and a read of it parses nothing. */
  #wrote(text: string, doc: Record<string, unknown>, settings: Settings): void {
    this.#bytes = Buffer.from(text);
    this.#lastRead = { bytes: this.#bytes, doc, result: { ok: true, settings } };
  }

  /** `writeSections` in a turn of its own; answers the section in force. */
  putSection(patch: SectionsPatch): Promise<SectionView> {
    return this.#exclusive(async () => {
      await this.writeSections(patch);
      return this.section();
    });
  }

  /**
   * Changes `mcp.retryMs`, the extensions' defaults and gateways by a merge patch (sectionsPatchSchema), every other key and
   * section kept; one atomic write of the file (creds.json is not touched), in the caller's turn of the queue. A
   * patch that changes nothing writes nothing; `dryRun` checks it as a write would and writes nothing.
   */
  async writeSections(patch: SectionsPatch, dryRun = false): Promise<void> {
    const p = sectionsPatchSchema.safeParse(patch);
    if (!p.success) {
      throw invalidConfig(
        p.error.issues.map((i) => ({ server: null, path: i.path.map((x) => (typeof x === 'symbol' ? String(x) : x)), message: i.message })),
      );
    }
    try {
      const read = this.#readNow();
      if (!read.result.ok || !read.doc)
        throw invalidConfig(read.result.ok ? [] : read.result.issues, `${this.file} is not valid; fix it first`);
      // A gateway is written as given (defaults stay implicit, as a server's entry does): the patch's own value, validated above.
      const given = (patch.gateways ?? {}) as Record<string, unknown>;
      const gateways = p.data.gateways && Object.fromEntries(Object.keys(p.data.gateways).map((n) => [n, given[n]]));
      const doc = documentWithSections(read.doc, { ...p.data, gateways } as SectionsPatch);
      const next = parseSettingsDocument(doc);
      if (!next.ok) throw invalidConfig(next.issues);
      if (dryRun) return;
      if (stableJson(doc) !== stableJson(read.doc)) {
        const text = this.#codec.format(doc);
        writeFileAtomic(this.file, text, { beforeRename: this.#opts.hooks?.beforeConfigRename });
        this.#wrote(text, doc, next.settings);
      }
      this.#commit(next.settings, 'write');
    } catch (err) {
      throw asWriteError(err);
    }
  }

  #unchanged(name: string): ServerChange {
    const k = this.#known.get(name);
    return k ? changeOf(name, k, 'updated') : { name, change: 'removed', enabled: false, fingerprint: null };
  }
}
