/**
 * Settings writes through the API. Each write, in one turn of the queue:
 * re-read the files (`settings/reload`), take the current version, check
 * the preconditions against it (412 changes nothing), build the entry (a
 * PUT's body; a merge patch, enable or disable applied to the entry as
 * saved), validate it. Then, out of the queue, try an enabled server
 * (strict-save.ts: 409 changes nothing), and in another turn of the queue
 * `settings/put-server` — which writes the entry and its secrets together
 * or not at all.
 *
 * The writes of one server run one at a time, start to end; those of
 * different servers interleave only while a server is tried (a try can take
 * twice its startupTimeoutMs: a slow server does not hold up the others,
 * and `albedo mcp import` tries several at once). The queue is what makes a
 * read-modify-write (PATCH, enable, disable) and an If-Match check safe
 * against another client's write: the settings service serializes its own
 * writes, but the merge happens here. Reads are not queued. Whatever lands
 * while a server is tried — a hand edit, or (through the API) a write of
 * another server, which leaves this one's entry alone — `settings/put-server`
 * is given the entry as read when the write was planned and refuses
 * (ALBEDO_EDIT_CONFLICT) when the file holds another by then — 409, or 412
 * (ALBEDO_PRECONDITION_FAILED) for a write with If-Match or If-None-Match,
 * whose version is then no longer the current one. Nothing is written
 * either way. `PATCH /v1/mcp` (`settings/put-section`) goes through the
 * same queue; it tries no server.
 *
 * A write whose client goes away (its request's `signal`: Ctrl-C on `albedo
 * mcp add`, a closed page) before it is written writes nothing: it is
 * checked before the write is planned, and again after the try, before the
 * commit; the try itself is given up on at once.
 *
 * A write that removes a server, changes its URL or signs it out ends the
 * server's pending sign-in (its tokens would be for a server that is no
 * longer there, or were just dropped on purpose).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { SettingsView } from '../protocol/services/settings.ts';
import type { SectionsPatch } from '../protocol/settings.ts';
import { AlbedoError } from '../protocol/errors.ts';
import { ApiError } from './errors.ts';
import { checkPreconditions, type Preconditions } from './etag.ts';
import { etagOf } from './etag.ts';
import {
  describeServer,
  entryOf,
  mcpSection,
  settingsView,
  SETTINGS_TIMEOUT_MS,
  type McpSection,
  type Reader,
  type ViewServer,
} from './servers.ts';
import { tryServer, type TryResult } from './strict-save.ts';
import type { SavedCatalogue } from '../protocol/catalogue.ts';
import { isObject, mergePatch, parseBody, toSecretsPatch } from './validate.ts';
import type { ServerDto } from './schemas.ts';
import type { Logins } from './logins.ts';

export type Check = { tried: true; result: 'connected' | 'needs_sign_in' } | { tried: false; reason: 'disabled' };

export interface SaveResult {
  saved: boolean;
  created: boolean;
  check: Check;
  server: ServerDto | null;
  etag: string | null;
}

/** What a write makes of the current server (undefined: none): a body (entry + secrets) to save, or a removal. */
type Plan = { body: unknown } | { remove: true };

export interface WritesOptions {
  /** $ALBEDO_HOME/store, for the era verdicts a try finds. */
  eraCachePath: string | null;
  /** The daemon's sign-ins, ended by a write that removes, moves or signs out their server. */
  logins?: Pick<Logins, 'remove'>;
}

export class SettingsWrites {
  readonly #reader: Reader;
  readonly #opts: WritesOptions;
  #queue: Promise<unknown> = Promise.resolve();
  /** Per server: the end of its last write (#byName). */
  #names = new Map<string, Promise<void>>();

  constructor(reader: Reader, opts: WritesOptions) {
    this.#reader = reader;
    this.#opts = opts;
  }

  get #kernel() {
    return this.#reader.kernel;
  }

  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Saves what the try discovered, as a session's dial would: the next
   * session advertises the server at once, and reads show its tools. A
   * cache: failing to keep it (the catalogue service busy or lost) costs
   * the next session one dial and fails nothing.
   */
  async #keep(row: SavedCatalogue): Promise<void> {
    try {
      await this.#kernel.call('catalogue', 'catalogue/put', { row }, { timeoutMs: SETTINGS_TIMEOUT_MS });
    } catch {
      // See above.
    }
  }

  /** Drops a removed server's saved catalogue (a server added later under its name starts afresh); a cache, as above. */
  async #forget(server: string): Promise<void> {
    try {
      await this.#kernel.call('catalogue', 'catalogue/remove', { server }, { timeoutMs: SETTINGS_TIMEOUT_MS });
    } catch {
      // See #keep.
    }
  }

  /** PUT: create or replace with the body as given. */
  put(name: string, body: unknown, pre: Preconditions, dryRun: boolean, signal?: AbortSignal): Promise<SaveResult> {
    return this.#write(name, pre, dryRun, () => ({ body }), signal);
  }

  /** PATCH: a merge patch of the entry as saved (404 when there is none). */
  patch(name: string, body: Record<string, unknown>, pre: Preconditions, dryRun: boolean, signal?: AbortSignal): Promise<SaveResult> {
    return this.#write(
      name,
      pre,
      dryRun,
      (cur, raw) => {
        if (!cur) throw notFound(name);
        const { secrets, ...patch } = body;
        const merged = mergePatch(raw, patch) as Record<string, unknown>;
        return { body: secrets === undefined ? merged : { ...merged, secrets } };
      },
      signal,
    );
  }

  /** POST enable / disable: `enabled` set in the entry as saved (enabling tries it). */
  setEnabled(name: string, enabled: boolean, pre: Preconditions, signal?: AbortSignal): Promise<SaveResult> {
    return this.#write(
      name,
      pre,
      false,
      (cur, raw) => {
        if (!cur) throw notFound(name);
        const next = { ...raw };
        // The default is true: enabling a server whose entry never said otherwise leaves the entry as written.
        if (enabled && !Object.hasOwn(raw, 'enabled')) return { body: next };
        next.enabled = enabled;
        return { body: next };
      },
      signal,
    );
  }

  /** DELETE: the server and everything creds.json holds for it. */
  async remove(name: string, pre: Preconditions, signal?: AbortSignal): Promise<void> {
    await this.#write(
      name,
      pre,
      false,
      (cur) => {
        if (!cur) throw notFound(name);
        return { remove: true };
      },
      signal,
    );
  }

  /** PATCH /v1/mcp: retryMs and the extensions' defaults, by a merge patch (validated by the route). */
  patchSection(patch: SectionsPatch, pre: Preconditions): Promise<{ section: McpSection; etag: string }> {
    return this.#exclusive(async () => {
      const view = await this.#fresh();
      checkPreconditions(pre, etagOf(mcpSection(view)));
      await this.#kernel.call('settings', 'settings/put-section', patch, { timeoutMs: SETTINGS_TIMEOUT_MS });
      const section = mcpSection(await settingsView(this.#kernel));
      return { section, etag: etagOf(section) };
    });
  }

  /** The settings as on disk now (a hand edit not yet picked up is taken in first); a broken file refuses the write (409). */
  async #fresh(): Promise<SettingsView> {
    await this.#kernel.call('settings', 'settings/reload', {}, { timeoutMs: SETTINGS_TIMEOUT_MS });
    const view = await settingsView(this.#kernel);
    if (view.invalid) {
      const why = `${view.path} is not valid (${view.invalid.length} issue${view.invalid.length === 1 ? '' : 's'}); fix it before saving through the API`;
      throw new ApiError(409, 'ALBEDO_INVALID_CONFIG', why, { outcome: 'not_run' });
    }
    return view;
  }

  #write(
    name: string,
    pre: Preconditions,
    dryRun: boolean,
    plan: (cur: ViewServer | undefined, raw: Record<string, unknown>) => Plan,
    signal?: AbortSignal,
  ): Promise<SaveResult> {
    return this.#byName(name, async () => {
      const kernel = this.#kernel;
      // Planned in a turn of the queue: the files re-read, the preconditions checked and the entry built, all from one read.
      const planned = await this.#exclusive(async () => {
        withdrawn(signal);
        const view = await this.#fresh();
        const cur = Object.hasOwn(view.servers, name) ? view.servers[name] : undefined;
        if (pre.ifMatch !== undefined || pre.ifNoneMatch !== undefined) {
          checkPreconditions(pre, cur ? (await describeServer(this.#reader, name, cur)).etag : null);
        }
        // The entry as written, from the bytes the view (and so the ETag checked above) came from: a file changed in between
        // (a hand edit landing between the reload and this read) is refused, so the plan and the version are of one read.
        const written = writtenEntry(view, name);
        if (written === undefined) {
          throw editConflict(
            new AlbedoError('ALBEDO_EDIT_CONFLICT', `${view.path} changed while it was read; nothing was written: try again`),
            pre,
          );
        }
        const p = plan(cur, cur ? (written ?? { ...entryOf(cur) }) : {});
        if ('remove' in p) {
          await kernel.call('settings', 'settings/remove-server', { name }, { timeoutMs: SETTINGS_TIMEOUT_MS });
          await this.#forget(name);
          await this.#opts.logins?.remove(name);
          return { removed: true } as const;
        }
        const { raw, entry, secrets } = parseBody(p.body);
        return { cur, written, raw, entry, patch: toSecretsPatch(secrets, cur?.secrets) };
      });
      if ('removed' in planned)
        return { saved: true, created: false, check: { tried: false, reason: 'disabled' }, server: null, etag: null };
      const { cur, written, raw, entry, patch } = planned;
      // Tried outside the queue (the try can take twice the server's startupTimeoutMs): writes of other servers go on
      // meanwhile — `albedo mcp import` tries several at once —, those of this one wait (#byName).
      let check: Check = { tried: false, reason: 'disabled' };
      let tried: TryResult | undefined;
      if (entry.enabled) {
        tried = await tryServer(kernel, { name, entry: raw as never, secrets: patch, eraCachePath: this.#opts.eraCachePath, signal });
        check = { tried: true, result: tried.result };
      }
      if (dryRun) {
        const d = cur ? await describeServer(this.#reader, name, cur) : null;
        return { saved: false, created: !cur, check, server: d?.dto ?? null, etag: d?.etag ?? null };
      }
      return this.#exclusive(async () => {
        // A client that went away while the server was tried (Ctrl-C on `albedo mcp add`) saves nothing.
        withdrawn(signal);
        // Checked against the file inside the write: the entry the plan was built on.
        const change = await kernel
          .call(
            'settings',
            'settings/put-server',
            { name, entry: raw as never, secrets: patch, expect: { entry: written } },
            {
              timeoutMs: SETTINGS_TIMEOUT_MS,
            },
          )
          .catch((err: unknown) => {
            throw editConflict(err, pre);
          });
        if (tried?.result === 'connected' && change.fingerprint === tried.row.fingerprint) await this.#keep(tried.row);
        const moved = cur?.type === 'http' && (entry.type !== 'http' || entry.url !== cur.url);
        if (patch?.oauth === null || moved) await this.#opts.logins?.remove(name);
        const after = await settingsView(kernel);
        if (!Object.hasOwn(after.servers, name))
          throw new ApiError(500, 'ALBEDO_INTERNAL', `${name} was saved but is not in the settings in force`);
        const d = await describeServer(this.#reader, name, after.servers[name]!);
        return { saved: true, created: !cur, check, server: d.dto, etag: d.etag };
      });
    });
  }

  /** The writes of one server, one at a time: each plans on what the one before it saved (a Map: any name is a key). */
  #byName<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.#names.get(name) ?? Promise.resolve()).then(fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.#names.set(name, tail);
    void tail.then(() => {
      if (this.#names.get(name) === tail) this.#names.delete(name);
    });
    return run;
  }
}

/** The request was given up by its client (it closed the connection) before anything was written: nothing is. */
function withdrawn(signal: AbortSignal | undefined): void {
  if (!signal?.aborted) return;
  throw new ApiError(409, 'ALBEDO_CLOSED', 'the request was given up by its client before the save was written; nothing was written', {
    outcome: 'not_run',
  });
}

function notFound(name: string): ApiError {
  return new ApiError(404, 'ALBEDO_NOT_FOUND', `no server ${JSON.stringify(name)} in the settings`, { path: ['params', 'name'] });
}

/**
 * The server's entry as written in extensions.json (null: none), so a merge
 * patch keeps what the user wrote (defaults stay implicit), and the commit
 * can tell whether it changed meanwhile. Read once, and taken only when
 * those bytes are the ones the settings in force (`view`, of which the
 * ETag) were read from (`view.digest`); undefined when they are not (the
 * file changed since), or the file cannot be read now (an edit under way).
 */
function writtenEntry(view: SettingsView, name: string): Record<string, unknown> | null | undefined {
  let bytes: Buffer | null;
  try {
    bytes = readFileSync(view.path!);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return undefined;
    bytes = null;
  }
  if (view.digest !== undefined && (bytes === null ? null : createHash('sha256').update(bytes).digest('hex')) !== view.digest)
    return undefined;
  if (bytes === null) return null;
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
  const servers = isObject(doc) && isObject(doc.mcp) ? doc.mcp.servers : undefined;
  const e = isObject(servers) && Object.hasOwn(servers, name) ? servers[name] : undefined;
  return e === undefined ? null : isObject(e) ? e : undefined;
}

/**
 * The entry changed on disk while the write was tried: 409 ALBEDO_EDIT_CONFLICT, or, when the
 * request named a version (If-Match, If-None-Match), 412 as for any other version that is not it.
 */
function editConflict(err: unknown, pre: Preconditions): unknown {
  if (!AlbedoError.is(err) || err.code !== 'ALBEDO_EDIT_CONFLICT') return err;
  const header = pre.ifMatch !== undefined ? 'if-match' : pre.ifNoneMatch !== undefined ? 'if-none-match' : null;
  if (header === null) return new ApiError(409, err.code, err.message, { outcome: 'not_run' });
  const message = `the server changed since ${header === 'if-match' ? 'that version was read' : 'the save began'} (edited while it was tried); read it again`;
  return new ApiError(412, 'ALBEDO_PRECONDITION_FAILED', message, { path: ['headers', header], outcome: 'not_run' });
}
