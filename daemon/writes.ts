/**
 * Settings writes through the API. Each is one call, `settings/apply`: the
 * settings service's transaction (services/settings/apply.ts), given the
 * plan — a PUT's entry, a merge patch, enable, disable, remove, the
 * sections' patch — and the request's typed secrets. In a turn of its queue
 * it re-reads the file, asks the daemon's `save/check` (the If-Match or
 * If-None-Match against the version of what is in force: 412 changes
 * nothing), builds the entry over the one as written and validates it; out
 * of the queue it asks the daemon's `save/try` to try an enabled server
 * (strict-save.ts: 409 changes nothing); then, in another turn, it writes
 * the entry and its secrets together or not at all. The daemon provides
 * `save` on the kernel's thread and never reads the settings files itself.
 *
 * The writes of one server run one at a time, start to end; those of
 * different servers interleave only while a server is tried (a try can take
 * twice its startupTimeoutMs: a slow server does not hold up the others,
 * and `albedo mcp import` tries several at once). Whatever lands while a
 * server is tried — a hand edit, or (through the API) a write of another
 * server, which leaves this one's entry alone — the service compares the
 * entry in the file with the one the plan was built on and refuses
 * (ALBEDO_EDIT_CONFLICT) when it is another by then — 409, or 412
 * (ALBEDO_PRECONDITION_FAILED) for a write with If-Match or If-None-Match,
 * whose version is then no longer the current one. Nothing is written
 * either way. Reads are not queued.
 *
 * A write whose client goes away (its request's `signal`: Ctrl-C on `albedo
 * mcp add`, a closed page) while it waits behind another write of its
 * server, or while its server is tried, writes nothing: the one waiting is
 * not sent; the try is given up on at once, and `save/check` and `save/try`
 * refuse the save (ALBEDO_CLOSED), so the service writes nothing. The call
 * itself is not cancelled (a cancel could land while the service writes, and
 * the daemon would never learn that it did): a save past its try, or one
 * not tried, is written and seen through — its try's discovery kept, a
 * removed server forgotten, a sign-in ended — whether or not anyone is left
 * to hear the answer.
 *
 * A write that removes a server, changes its URL or signs it out ends the
 * server's pending sign-in (its tokens would be for a server that is no
 * longer there, or were just dropped on purpose).
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { ApplyParams, ApplyResult, SectionView, ServerState, SettingsPlan } from '../protocol/services/settings.ts';
import type { ResolvedServer } from '../protocol/config.ts';
import type { SectionsPatch, SettingsIssue } from '../protocol/settings.ts';
import { AlbedoError, ErrorCodes, type AlbedoErrorCode } from '../protocol/errors.ts';
import { ApiError, pathOf, validationError } from './errors.ts';
import { checkPreconditions, etagOf, type Preconditions } from './etag.ts';
import { describeServer, mcpSection, SETTINGS_TIMEOUT_MS, type McpSection, type Reader } from './servers.ts';
import { tryServer, type TryResult } from './strict-save.ts';
import type { SavedCatalogue } from '../protocol/catalogue.ts';
import { bad, isObject, keepError, toSecretsPlan } from './validate.ts';
import type { SecretsInput, ServerDto } from './schemas.ts';
import type { Logins } from './logins.ts';

export type Check = { tried: true; result: 'connected' | 'needs_sign_in' } | { tried: false; reason: 'disabled' };

export interface SaveResult {
  saved: boolean;
  created: boolean;
  check: Check;
  server: ServerDto | null;
  etag: string | null;
}

export interface WritesOptions {
  /** $ALBEDO_HOME/store, for the era verdicts a try finds. */
  eraCachePath: string | null;
  /** The daemon's sign-ins, ended by a write that removes, moves or signs out their server. */
  logins?: Pick<Logins, 'remove'>;
}

/** A save under way, as `save/check` and `save/try` find it by its id. */
interface Save {
  name: string | null;
  pre: Preconditions;
  /** The request's: its client went away. */
  signal?: AbortSignal;
  /** What the try found (its discovery is kept once the save is written). */
  tried?: TryResult;
  /**
   * What a callback refused the save with, as it was thrown (an ApiError's status and path, a defect's stack, do not
   * cross threads), and what the settings service was sent instead: the answer, when the save failed with that.
   */
  failure?: { thrown: unknown; sent: AlbedoError };
}

/** The longest a try may take (twice the largest startupTimeoutMs and 5 s), and the service's own work around it. */
const MAX_TRY_MS = 2 * 600_000 + 5_000 + 20_000;

export class SettingsWrites {
  readonly #reader: Reader;
  readonly #opts: WritesOptions;
  /** Per server: the end of its last write (#byName). */
  #names = new Map<string, Promise<void>>();
  /** The saves under way, by the id `settings/apply` calls back with. */
  #saves = new Map<string, Save>();

  constructor(reader: Reader, opts: WritesOptions) {
    this.#reader = reader;
    this.#opts = opts;
    // The settings service's transaction calls back here: the precondition, and the strict save's try.
    reader.kernel.provide('save', {
      'save/check': (p: { id: string; server?: ServerState | null; section?: SectionView }) => this.#check(p),
      'save/try': (p: TryParams, ctx: { signal: AbortSignal }) => this.#try(p, ctx.signal),
    });
  }

  get #kernel() {
    return this.#reader.kernel;
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
    const { entry, secrets } = split(body);
    const startup = typeof entry.startupTimeoutMs === 'number' ? entry.startupTimeoutMs : 30_000;
    // Only an enabled server is tried: the call's deadline covers its try.
    const timeoutMs = entry.enabled === false ? SETTINGS_TIMEOUT_MS : 2 * startup + 5_000 + 20_000 + SETTINGS_TIMEOUT_MS;
    return this.#write(name, pre, dryRun, { op: 'put', name, entry, ...toSecretsPlan(secrets) }, timeoutMs, signal);
  }

  /** PATCH: a merge patch of the entry as saved (404 when there is none). */
  patch(name: string, body: Record<string, unknown>, pre: Preconditions, dryRun: boolean, signal?: AbortSignal): Promise<SaveResult> {
    const { entry: patch, secrets } = split(body);
    return this.#write(name, pre, dryRun, { op: 'patch', name, patch, ...toSecretsPlan(secrets) }, MAX_TRY_MS, signal);
  }

  /** POST enable / disable: `enabled` set in the entry as saved (enabling tries it). */
  setEnabled(name: string, enabled: boolean, pre: Preconditions, signal?: AbortSignal): Promise<SaveResult> {
    const plan: SettingsPlan = { op: enabled ? 'enable' : 'disable', name };
    return this.#write(name, pre, false, plan, enabled ? MAX_TRY_MS : SETTINGS_TIMEOUT_MS, signal);
  }

  /** DELETE: the server and everything creds.json holds for it. */
  async remove(name: string, pre: Preconditions, signal?: AbortSignal): Promise<void> {
    await this.#write(name, pre, false, { op: 'remove', name }, SETTINGS_TIMEOUT_MS, signal);
  }

  /** PATCH /v1/mcp: retryMs and the extensions' defaults, by a merge patch (validated by the route). */
  async patchSection(patch: SectionsPatch, pre: Preconditions): Promise<{ section: McpSection; etag: string }> {
    const r = await this.#apply(null, pre, { plan: { op: 'sections', patch } }, SETTINGS_TIMEOUT_MS);
    const section = mcpSection(r.section);
    return { section, etag: etagOf(section) };
  }

  #write(
    name: string,
    pre: Preconditions,
    dryRun: boolean,
    plan: SettingsPlan,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<SaveResult> {
    return this.#byName(name, () =>
      this.#apply(name, pre, { plan, dryRun }, timeoutMs, signal, (save, r) => this.#answer(name, plan, save, r)),
    );
  }

  /** What a save answers once `settings/apply` ended: the try's discovery kept, a sign-in ended, the server described. */
  async #answer(name: string, plan: SettingsPlan, save: Save, r: ApplyResult): Promise<SaveResult> {
    const check: Check = r.tried ? { tried: true, result: r.tried } : { tried: false, reason: 'disabled' };
    const created = !r.before;
    if (!r.saved) {
      const d = r.before ? await describeServer(this.#reader, name, r.before.server, undefined, r.before.resolution) : null;
      return { saved: false, created, check, server: d?.dto ?? null, etag: d?.etag ?? null };
    }
    if (plan.op === 'remove') {
      await this.#forget(name);
      await this.#opts.logins?.remove(name);
      return { saved: true, created: false, check, server: null, etag: null };
    }
    if (save.tried?.result === 'connected' && r.change?.fingerprint === save.tried.row.fingerprint) await this.#keep(save.tried.row);
    const after = r.server;
    if (!after) throw new ApiError(500, 'ALBEDO_INTERNAL', `${name} was saved but is not in the settings in force`);
    const was = r.before?.server;
    const moved = was?.type === 'http' && (after.server.type !== 'http' || after.server.url !== was.url);
    const signOut = (plan.op === 'put' || plan.op === 'patch') && plan.secrets?.oauth === null;
    if (signOut || moved) await this.#opts.logins?.remove(name);
    const d = await describeServer(this.#reader, name, after.server, undefined, after.resolution);
    return { saved: true, created, check, server: d.dto, etag: d.etag };
  }

  /** `save/check`: the request's preconditions against the version of what is in force now (412 changes nothing). */
  async #check(p: { id: string; server?: ServerState | null; section?: SectionView }): Promise<Record<string, never>> {
    const save = this.#save(p.id);
    try {
      if (save.signal?.aborted) throw withdrawn();
      if (p.section) checkPreconditions(save.pre, etagOf(mcpSection(p.section)));
      else {
        const s = p.server ?? null;
        // The tag a read shows (servers.ts); the sign-in's state is left out of it, so it is not asked for.
        const tag = s ? (await describeServer(this.#reader, save.name!, s.server, null, s.resolution)).etag : null;
        checkPreconditions(save.pre, tag);
      }
    } catch (err) {
      throw refused(save, err);
    }
    return {};
  }

  /**
   * `save/try`: the strict save's try (strict-save.ts); given up on when the service gives up the save (`signal`) or
   * the client goes away — then refused, however the try ended, so the service writes nothing.
   */
  async #try(p: TryParams, signal: AbortSignal): Promise<{ result: 'connected' | 'needs_sign_in' }> {
    const save = this.#save(p.id);
    try {
      if (save.signal?.aborted) throw withdrawn();
      const { name, server, isolate, fingerprint, signOut } = p;
      const tried = await tryServer(this.#kernel, {
        name,
        server,
        isolate,
        fingerprint,
        signOut,
        eraCachePath: this.#opts.eraCachePath,
        signal: save.signal ? AbortSignal.any([signal, save.signal]) : signal,
      }).catch((err: unknown) => {
        throw save.signal?.aborted ? withdrawn() : err;
      });
      if (save.signal?.aborted) throw withdrawn();
      save.tried = tried;
      return { result: tried.result };
    } catch (err) {
      throw refused(save, err);
    }
  }

  #save(id: unknown): Save {
    const save = typeof id === 'string' ? this.#saves.get(id) : undefined;
    if (!save) throw new AlbedoError('ALBEDO_NOT_FOUND', 'no save under way with this id', { outcome: 'not_run' });
    return save;
  }

  /**
   * One `settings/apply`, with this save known to `save/check` and `save/try` by a fresh id while it runs; its
   * failure as the API answers it. `then` runs while the save is still known (its try's discovery is kept there).
   */
  async #apply<T = ApplyResult>(
    name: string | null,
    pre: Preconditions,
    params: Omit<ApplyParams, 'save'>,
    timeoutMs: number,
    signal?: AbortSignal,
    then?: (save: Save, r: ApplyResult) => Promise<T>,
  ): Promise<T> {
    // Gone while it waited behind another write of its server: not sent.
    if (signal?.aborted) throw withdrawn();
    const id = randomUUID();
    const save: Save = signal ? { name, pre, signal } : { name, pre };
    this.#saves.set(id, save);
    try {
      const check = pre.ifMatch !== undefined || pre.ifNoneMatch !== undefined;
      let r: ApplyResult;
      try {
        // Not cancelled by the client (see the top of this file): the callbacks refuse a save it gave up on.
        r = await this.#kernel.call('settings', 'settings/apply', { ...params, save: { id, check, try: true } }, { timeoutMs });
      } catch (err) {
        throw saveError(err, save, name, pre);
      }
      return then ? await then(save, r) : (r as T);
    } finally {
      this.#saves.delete(id);
    }
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

type TryParams = { id: string; name: string; server: ResolvedServer; isolate: boolean; fingerprint: string; signOut: boolean };

/** A body's entry (every field but `secrets`, as sent: the file keeps what the user wrote) and its secrets (checked by the route). */
function split(body: unknown): { entry: Record<string, unknown>; secrets: SecretsInput | undefined } {
  if (!isObject(body)) throw new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', 'the body must be a JSON object', { path: ['body'] });
  const entry: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    if (k !== 'secrets') Object.defineProperty(entry, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return { entry, secrets: body.secrets as SecretsInput | undefined };
}

/**
 * A callback's refusal: kept for the answer as it was thrown (an ApiError's status and path would be lost crossing
 * threads; a defect — anything else — is answered and logged as in any route, never by its message) and sent to the
 * settings service as an AlbedoError, which it passes back.
 */
function refused(save: Save, err: unknown): AlbedoError {
  let sent: AlbedoError;
  if (AlbedoError.is(err)) sent = err;
  else if (err instanceof ApiError) {
    const code = (ErrorCodes as readonly string[]).includes(err.code) ? (err.code as AlbedoErrorCode) : 'ALBEDO_EDIT_CONFLICT';
    sent = new AlbedoError(code, err.message, { outcome: 'not_run' });
  } else sent = new AlbedoError('ALBEDO_INTERNAL', 'the daemon failed while it checked or tried the save', { outcome: 'not_run' });
  save.failure = { thrown: err, sent };
  return sent;
}

/** A failed `settings/apply` as the API answers it (services/settings/apply.ts and protocol/services/settings.ts say its errors). */
function saveError(err: unknown, save: Save, name: string | null, pre: Preconditions): unknown {
  if (!AlbedoError.is(err)) return err;
  // The service passes a callback's refusal back as it was sent: the answer is what was thrown.
  const f = save.failure;
  if (f && err.code === f.sent.code && err.message === f.sent.message) return f.thrown;
  const d = (isObject(err.data) ? err.data : {}) as Record<string, unknown>;
  switch (err.code) {
    case 'ALBEDO_NOT_FOUND':
      return name !== null && d.server === name ? notFound(name) : err;
    case 'ALBEDO_INVALID_CONFIG':
      if (d.broken === true) return new ApiError(409, err.code, err.message, { outcome: 'not_run' });
      // A value it cannot look up (a variable not set, a file missing) means it cannot start: 409, naming the field.
      if (typeof d.reason === 'string') return new ApiError(409, err.code, err.message, { path: pathOf(err), outcome: 'not_run' });
      return entryError(d) ?? err;
    case 'ALBEDO_INVALID_ARGUMENT':
      if (d.signOut === true) return bad(['secrets', 'oauth'], 'a stdio server has no sign-in to sign out of');
      return keepError(d.keep, d.key) ?? err;
    case 'ALBEDO_EDIT_CONFLICT':
      return editConflict(err, pre);
    case 'ALBEDO_CLOSED':
      return d.withdrawn === true ? withdrawn() : err;
    default:
      return err;
  }
}

/** The entry a plan made is not valid: a 400 naming the field, as the request's own validation names one (app.ts, validate.ts). */
function entryError(d: Record<string, unknown>): ApiError | null {
  if (d.entry !== true) return null;
  if (Array.isArray(d.schema)) return validationError('body', { issues: d.schema } as unknown as z.ZodError);
  const issue = (d.issues as SettingsIssue[] | undefined)?.[0];
  return issue ? bad(issue.path, issue.message) : null;
}

/** The request was given up by its client (it closed the connection) before anything was written: nothing is. */
function withdrawn(): ApiError {
  return new ApiError(409, 'ALBEDO_CLOSED', 'the request was given up by its client before the save was written; nothing was written', {
    outcome: 'not_run',
  });
}

function notFound(name: string): ApiError {
  return new ApiError(404, 'ALBEDO_NOT_FOUND', `no server ${JSON.stringify(name)} in the settings`, { path: ['params', 'name'] });
}

/**
 * The entry changed on disk while the write was tried: 409 ALBEDO_EDIT_CONFLICT, or, when the
 * request named a version (If-Match, If-None-Match), 412 as for any other version that is not it.
 */
function editConflict(err: AlbedoError, pre: Preconditions): ApiError {
  const header = pre.ifMatch !== undefined ? 'if-match' : pre.ifNoneMatch !== undefined ? 'if-none-match' : null;
  if (header === null) return new ApiError(409, err.code, err.message, { outcome: 'not_run' });
  const since = header === 'if-match' ? 'that version was read' : 'the save began';
  const message = `the server changed since ${since} (edited while it was tried); read it again`;
  return new ApiError(412, 'ALBEDO_PRECONDITION_FAILED', message, { path: ['headers', header], outcome: 'not_run' });
}
