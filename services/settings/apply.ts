/**
 * A save, one transaction (`settings/apply`): in a turn of the store's
 * queue the file is re-read (a hand edit not yet picked up is taken in
 * first), the caller's `save/check` asked with the server as it is (a stale
 * If-Match refuses the save there), the plan applied to the entry as written
 * (so defaults stay implicit) and the result validated, once; out of the
 * queue an enabled server is tried through the caller's `save/try` (a try
 * can take twice the server's startupTimeoutMs: saves of other servers go
 * on meanwhile); in another turn the entry and its typed secrets are
 * written together or not at all, unless the entry in the file is no longer
 * the one the plan was built on (a hand edit meanwhile: ALBEDO_EDIT_CONFLICT).
 * A removal and a change of the sections are written in the first turn.
 *
 * A call cancelled (its caller went away) writes nothing: the try is given
 * up on at once (its signal is the call's), and the cancel is checked again
 * just before the write.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import type {
  ApplyParams,
  ApplyResult,
  GatewayExpectation,
  SecretsKeep,
  SectionView,
  ServerState,
  SettingsPlan,
} from '../../protocol/services/settings.ts';
import type { SecretsSummary, SettingsServer } from '../../protocol/settings.ts';
import type { CallOut } from '../../kernel/service.ts';
import { parseServerEntry } from './file.ts';
import { credsPlanOf } from './creds-plan.ts';
import { entryIn, invalidConfig, parseSecretsPatch, stableJson } from './writes.ts';
import type { SettingsStore } from './store.ts';

/** What a transaction is given of the worker: its calls out (to `save`), and the call's signal. */
export interface ApplyContext {
  call: CallOut;
  signal: AbortSignal;
}

/** `save/check` answers from the caller's memory and a catalogue lookup. */
const CHECK_TIMEOUT_MS = 15_000;
/** Past the transport's own deadline for the try (twice startupTimeoutMs and 5 s): closing and releasing the server. */
const TRY_MARGIN_MS = 20_000;

type ServerPlan = Exclude<SettingsPlan, { op: 'sections' }>;

export function applyPlan(store: SettingsStore, p: ApplyParams, ctx: ApplyContext): Promise<ApplyResult> {
  if (p.plan.op === 'sections') {
    const { patch, expect } = p.plan;
    return store.turn(async () => {
      withdrawn(ctx.signal);
      if (p.save?.check) await check(ctx, p.save.id, { section: store.section() });
      if (expect) expected(store, expect);
      await store.writeSections(patch, p.dryRun === true);
      return { saved: !p.dryRun, tried: null, section: store.section(), gateways: store.gateways() };
    });
  }
  return applyToServer(store, p.plan, p, ctx);
}

async function applyToServer(store: SettingsStore, plan: ServerPlan, p: ApplyParams, ctx: ApplyContext): Promise<ApplyResult> {
  const { name } = plan;
  const planned = await store.turn(async (doc) => {
    withdrawn(ctx.signal);
    const before = store.state(name);
    if (p.save?.check) await check(ctx, p.save.id, { server: before });
    const written = entryIn(doc, name) as Record<string, unknown> | undefined;
    if (plan.op !== 'put' && written === undefined) {
      throw new AlbedoError('ALBEDO_NOT_FOUND', `no server ${JSON.stringify(name)} in ${store.file}`, {
        outcome: 'not_run',
        data: { server: name },
      });
    }
    // A dry run writes nothing, a removal included: the server is found, and that is all it plans.
    if (plan.op === 'remove') {
      return { before, removed: p.dryRun ? null : await store.writeServer(name, undefined, undefined, () => ({ entry: null })) };
    }
    const raw = entryOf(plan, written);
    const entry = validEntry(name, raw);
    const secrets = 'secrets' in plan ? plan.secrets : undefined;
    if (entry.type === 'stdio' && secrets?.oauth === null) {
      const data = { server: name, signOut: true };
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', 'a stdio server has no sign-in to sign out of', { outcome: 'not_run', data });
    }
    if ('keep' in plan && plan.keep) checkKeep(name, plan.keep, before?.server.secrets);
    const patch = secrets === undefined ? undefined : parseSecretsPatch(name, secrets);
    // Resolved only to be tried; a server not tried has its secrets checked against its entry as they are written.
    const draft = entry.enabled && p.save?.try ? store.resolveDraft(name, entry, patch) : null;
    return { before, raw, entry, patch, written: written ?? null, draft };
  });
  if ('removed' in planned) {
    const { before, removed } = planned;
    if (!removed) return { saved: false, before, server: before, change: null, tried: null, section: store.section() };
    return { saved: true, before, server: null, change: removed, tried: null, section: store.section() };
  }
  const { before, raw, entry, patch, written, draft } = planned;
  let tried: ApplyResult['tried'] = null;
  if (draft && p.save) {
    const params = {
      id: p.save.id,
      name,
      server: draft.server,
      isolate: draft.isolate,
      fingerprint: draft.fingerprint,
      signOut: patch?.oauth === null,
    };
    const timeoutMs = draft.server.startupTimeoutMs * 2 + 5_000 + TRY_MARGIN_MS;
    tried = (await ctx.call('save', 'save/try', params, { signal: ctx.signal, timeoutMs })).result;
  }
  if (p.dryRun) return { saved: false, before, server: before, change: null, tried, section: store.section() };
  return store.queued(async () => {
    withdrawn(ctx.signal);
    const change = await store.writeServer(name, raw, entry, credsPlanOf(name, entry, patch), { entry: written });
    return { saved: true, before, server: store.state(name), change, tried, section: store.section() };
  });
}

/** The entry a plan makes of the one written (a copy: the document read is shared). */
function entryOf(plan: Exclude<ServerPlan, { op: 'remove' }>, written: Record<string, unknown> | undefined): Record<string, unknown> {
  if (plan.op === 'put') return plan.entry;
  const cur = written ?? {};
  if (plan.op === 'patch') return mergePatch(cur, plan.patch) as Record<string, unknown>;
  const next = { ...cur };
  // The default is true: enabling a server whose entry never said otherwise leaves the entry as written.
  if (plan.op === 'enable' && !Object.hasOwn(cur, 'enabled')) return next;
  next.enabled = plan.op === 'enable';
  return next;
}

/** RFC 7396: objects merge key by key, null removes, anything else replaces. Keys are own data properties, never a prototype. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = {};
  const set = (k: string, v: unknown): void => {
    Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  };
  if (isObject(target)) for (const [k, v] of Object.entries(target)) set(k, v);
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else set(k, mergePatch(Object.hasOwn(out, k) ? out[k] : undefined, v));
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The entry validated, once: ALBEDO_INVALID_CONFIG with the issues and the schema's own (`data.schema`). */
function validEntry(name: string, raw: unknown): SettingsServer {
  const r = parseServerEntry(name, raw);
  if (r.ok) return r.server;
  const e = invalidConfig(r.issues);
  const data = r.schema ? { issues: r.issues, entry: true, schema: r.schema } : { issues: r.issues, entry: true };
  throw new AlbedoError(e.code, e.message, { outcome: 'not_run', data });
}

/** Each secret to keep must be stored (`stored`: the summary of what is). */
function checkKeep(name: string, keep: SecretsKeep, stored: SecretsSummary | undefined): void {
  const missing = (what: 'header' | 'env' | 'oauthClient', message: string, key?: string): AlbedoError => {
    const data = key === undefined ? { server: name, keep: what } : { server: name, keep: what, key };
    return new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, { outcome: 'not_run', data });
  };
  // A plan comes from another thread: a keep list of the wrong shape is refused as such, not met with a TypeError.
  const shapeOk =
    typeof keep === 'object' &&
    keep !== null &&
    (keep.header === undefined || typeof keep.header === 'string') &&
    (keep.env === undefined || (Array.isArray(keep.env) && keep.env.every((k) => typeof k === 'string'))) &&
    (keep.oauthClient === undefined || typeof keep.oauthClient === 'boolean');
  if (!shapeOk) {
    const why = 'keep must be { header?: string, env?: string[], oauthClient?: boolean }';
    throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', why, { outcome: 'not_run', data: { server: name, path: ['keep'] } });
  }
  if (keep.header !== undefined && stored?.header !== keep.header) throw missing('header', 'no stored header of this name to keep');
  for (const k of keep.env ?? []) if (!stored?.env.includes(k)) throw missing('env', 'no stored value to keep', k);
  if (keep.oauthClient && !stored?.oauthClient) throw missing('oauthClient', 'no stored client to keep');
}

/** Asks the caller's `save/check`, which refuses the save by throwing. */
async function check(ctx: ApplyContext, id: string, what: { server: ServerState | null } | { section: SectionView }): Promise<void> {
  await ctx.call('save', 'save/check', { id, ...what }, { signal: ctx.signal, timeoutMs: CHECK_TIMEOUT_MS });
}

/** The gateway is still the one the plan was made on (the file was taken in first): else ALBEDO_EDIT_CONFLICT, nothing written. */
function expected(store: SettingsStore, e: GatewayExpectation): void {
  const now = store.gateways();
  const cur = typeof e?.gateway === 'string' && Object.hasOwn(now, e.gateway) ? now[e.gateway] : null;
  if (stableJson(cur) === stableJson(e?.definition ?? null)) return;
  const message = `the gateway ${JSON.stringify(e.gateway)} changed in ${store.file} since it was read; nothing was written: read it again`;
  throw new AlbedoError('ALBEDO_EDIT_CONFLICT', message, { outcome: 'not_run', data: { gateway: e.gateway } });
}

/** The caller went away: nothing is written. */
function withdrawn(signal: AbortSignal): void {
  if (!signal.aborted) return;
  throw new AlbedoError('ALBEDO_CLOSED', 'the save was cancelled by its caller before it was written; nothing was written', {
    outcome: 'not_run',
    data: { withdrawn: true },
  });
}
