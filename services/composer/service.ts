/**
 * The composer service (a worker): owns the sessions of its owner (one
 * embedder's instance), publishes each one's snapshot (`session/updated`)
 * and events (`session/event`), keeps a record of each in LMDB and, when it
 * is restarted after a crash, restores them from those records: same ids,
 * same generation when nothing changed, the same connections resumed. A call
 * reaches this service only when its server is not open (the owner's thread
 * sends the others straight to the transport); nothing here retries a call.
 */
import path from 'node:path';
import { defineService, type ServiceContext } from '../../kernel/service.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import type { SessionEvent } from '../../protocol/composer.ts';
import type { ComposerMethods, SessionSnapshot } from '../../protocol/services/composer.ts';
import { PROFILES } from '../catalogue/schema/normalise.ts';
import { Composer } from './composer.ts';
import type { TransportEvent } from './ports.ts';
import { SessionRecords, closeSessionRecords, type SessionRecord } from './records.ts';
import type { Session } from './session.ts';
import { connectionsOf, shownRecordOf, viewDigest, viewOf } from './snapshot.ts';
import { TRANSPORT_TOPICS, transportEvent } from './transport-port.ts';
import { SettingsFollower } from './follow-settings.ts';
import { workerPorts } from './worker-ports.ts';
import { Ledger } from './ledger.ts';

export interface ComposerServiceOptions {
  /** The owner's id: its sessions' records are kept under it. */
  owner: string;
  home: string;
  /** The client capabilities declared to the sessions' servers. */
  capabilities: Record<string, unknown>;
}

/** The topics the composer's spec subscribes to. */
export const COMPOSER_TOPICS = [...TRANSPORT_TOPICS, 'settings:settings/changed', 'settings:settings/invalid'];

type P<M extends keyof ComposerMethods> = ComposerMethods[M]['params'];

interface Entry {
  session: Session;
  follower: SettingsFollower;
  /** The generation the last published snapshot carried a view of. */
  sentGeneration: number;
  /** What the last record held (generation, view digest, connection ids): a record is written only when it changes. */
  recorded: string;
  scheduled: boolean;
}

let ctxRef: ServiceContext;
let opts: ComposerServiceOptions;
let composer: Composer;
let transportClose: (id: string) => Promise<void>;
let records: SessionRecords;
let seq = 0;
const entries = new Map<string, Entry>();
/** Sessions being restored after a restart: their calls wait for them. */
const restoring = new Map<string, Promise<Entry | undefined>>();
const transportListeners = new Set<(e: TransportEvent) => void>();

/** Whether a process is alive (EPERM: it is, under another user). */
function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function snapshot(e: Entry, full: boolean): SessionSnapshot {
  const s = e.session;
  const comp = s.composition;
  const out: SessionSnapshot = {
    id: s.id, version: [ctxRef.incarnation, ++seq], profile: s.init.profile, status: s.status(), warnings: s.warnings(), connections: connectionsOf(comp),
  };
  if (full || s.generation !== e.sentGeneration) {
    out.view = viewOf(comp, s.generation);
    e.sentGeneration = s.generation;
  }
  return out;
}

function record(e: Entry): void {
  const s = e.session;
  const comp = s.composition;
  const connections: SessionRecord['connections'] = comp.slots.flatMap((slot) =>
    slot.upstream && slot.upstream.state !== 'closed' ? [[slot.name, { id: slot.upstream.id, fingerprint: slot.entry.fingerprint }]] : []);
  const digest = viewDigest(comp);
  const key = JSON.stringify([s.generation, digest, connections]);
  if (key === e.recorded) return;
  e.recorded = key;
  const options = { ...(s.init.options ?? {}) };
  const rec: SessionRecord = {
    owner: opts.owner, id: s.id, options, generation: s.generation, digest, shown: shownRecordOf(comp), connections, savedAt: Date.now(),
  };
  records.put(rec).catch(() => { e.recorded = ''; });
}

/** Publishes the session's snapshot once per turn of the event loop, however many changes it saw. */
function schedule(e: Entry): void {
  if (e.scheduled) return;
  e.scheduled = true;
  queueMicrotask(() => {
    e.scheduled = false;
    if (entries.get(e.session.id) !== e) return;
    ctxRef.emit('session/updated', snapshot(e, false));
    record(e);
  });
}

function onEvent(id: string, event: SessionEvent): void {
  ctxRef.emit('session/event', { id, event });
  const e = entries.get(id);
  if (event.type === 'closed') {
    entries.delete(id);
    void records.remove(opts.owner, id).catch(() => {});
    return;
  }
  if (e) schedule(e);
}

function adopt(session: Session): Entry {
  const e: Entry = { session, follower: new SettingsFollower(session, (ev) => onEvent(session.id, ev)), sentGeneration: 0, recorded: '', scheduled: false };
  entries.set(session.id, e);
  return e;
}

async function entryOf(id: unknown): Promise<Entry> {
  const e = typeof id === 'string' ? entries.get(id) ?? await restoring.get(id) : undefined;
  if (!e) throw new AlbedoError('ALBEDO_NOT_FOUND', 'no open session has this id', { outcome: 'not_run' });
  return e;
}

/** Restores one recorded session; one that cannot be restored is closed (its connections too) and its record dropped. */
async function restore(rec: SessionRecord): Promise<Entry | undefined> {
  const resume = { generation: rec.generation, digest: rec.digest, shown: rec.shown, connections: new Map(rec.connections) };
  let session: Session | undefined;
  const early: SessionEvent[] = [];
  try {
    session = await composer.open(rec.options, (ev) => (session ? undefined : early.push(ev)), { id: rec.id, resume });
  } catch (err) {
    const e = err as AlbedoError;
    const message = `the session could not be restored after the composer restarted: ${e.message}`;
    ctxRef.emit('session/event', { id: rec.id, event: { type: 'warning', message, ...(e.code ? { code: e.code } : {}) } });
    ctxRef.emit('session/event', { id: rec.id, event: { type: 'closed' } });
    await Promise.allSettled(rec.connections.map(([, c]) => transportClose(c.id)));
    await records.remove(rec.owner, rec.id).catch(() => {});
    return undefined;
  }
  const entry = adopt(session);
  session.on((ev) => onEvent(session!.id, ev));
  for (const ev of early) if (ev.type === 'refreshed') ctxRef.emit('session/event', { id: rec.id, event: ev });
  ctxRef.emit('session/updated', snapshot(entry, true));
  record(entry);
  return entry;
}

export default defineService({
  events: {
    ...Object.fromEntries(TRANSPORT_TOPICS.map((topic) => [topic, (payload: unknown) => {
      const e = transportEvent(topic, payload);
      if (e) for (const fn of transportListeners) fn(e);
    }])),
    'settings:settings/changed': () => { for (const e of entries.values()) e.follower.changed(); },
    'settings:settings/invalid': (payload: { path: string; issues: unknown[] }) => {
      for (const e of entries.values()) e.follower.invalid(path.basename(payload.path), payload.issues.length);
    },
  },
  start(ctx) {
    ctxRef = ctx;
    opts = ctx.options as ComposerServiceOptions;
    const storePath = path.join(opts.home, 'store');
    records = new SessionRecords(storePath);
    const subscribe = (fn: (e: TransportEvent) => void): (() => void) => {
      transportListeners.add(fn);
      return () => transportListeners.delete(fn);
    };
    // A first start prunes what killed embedders left; a restart has its own rows to restore first.
    if (ctx.incarnation === 1) void records.pruneDead(pidAlive).catch(() => {});
    const ledger = new Ledger(records, opts.owner);
    const ports = workerPorts(ctx, { eraCachePath: storePath, capabilities: opts.capabilities, profiles: PROFILES, ledger }, subscribe);
    composer = new Composer(ports);
    transportClose = ports.transport.close;
    // Restored in the background: the worker is ready at once, and a call for a session waits for its restore.
    const saved = records.list(opts.owner);
    for (const rec of saved) {
      const p = restore(rec).finally(() => restoring.delete(rec.id));
      restoring.set(rec.id, p);
    }
    // What the previous incarnation dialled that no record names (it crashed mid-preparation): closed, so no server outlives its owner.
    const named = new Set(saved.flatMap((r) => r.connections.map(([, c]) => c.id)));
    for (const id of ledger.ids) if (!named.has(id)) void transportClose(id);
  },
  async stop() {
    await closeSessionRecords();
  },
  handlers: {
    async 'session/open'(p: P<'session/open'>) {
      let session: Session | undefined;
      session = await composer.open(p.options ?? {}, (ev) => { if (session) onEvent(session.id, ev); });
      const entry = adopt(session);
      const snap = snapshot(entry, true);
      record(entry);
      return snap;
    },
    async 'session/call'(p: P<'session/call'>, call) {
      const e = await entryOf(p.id);
      const o = p.timeoutMs === undefined ? { signal: call.signal } : { timeoutMs: p.timeoutMs, signal: call.signal };
      try {
        return await e.session.call(p.name, p.args, o);
      } finally {
        schedule(e);
      }
    },
    async 'session/activity'(p: P<'session/activity'>) {
      const e = await entryOf(p.id);
      await e.session.activity(p.kind);
      schedule(e);
      return {};
    },
    async 'session/reload'(p: P<'session/reload'>) {
      const e = await entryOf(p.id);
      await e.session.reload();
      schedule(e);
      return {};
    },
    async 'session/close'(p: P<'session/close'>) {
      const e = await entryOf(p.id).catch(() => undefined);
      await e?.session.close();
      return {};
    },
    async 'session/snapshot'(p: P<'session/snapshot'>) {
      return snapshot(await entryOf(p.id), true);
    },
    async 'session/idle'(p: P<'session/idle'>) {
      const e = await entryOf(p.id);
      await e.follower.settled();
      await e.session.idle();
      return {};
    },
    async 'composer/sessions'(p: P<'composer/sessions'>) {
      if (p.owner !== opts.owner) return [];
      await Promise.allSettled([...restoring.values()]);
      return [...entries.values()].map((e) => snapshot(e, true));
    },
    async 'composer/close-owner'(p: P<'composer/close-owner'>) {
      if (p.owner !== opts.owner) return {};
      await Promise.allSettled([...restoring.values()]);
      await Promise.allSettled([...entries.values()].map((e) => e.session.close()));
      return {};
    },
  },
});
