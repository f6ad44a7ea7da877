/**
 * The composer service (a worker): owns the sessions of its owner (one
 * embedder's instance), publishes each one's snapshot (`session/updated`)
 * and events (`session/event`, after the snapshot they explain:
 * publish.ts), keeps a record of each in LMDB and, when it is restarted
 * after a crash, restores them from those records: same ids, same
 * generation when nothing changed, the same kept context text, the same
 * connections resumed. A call reaches this service only when its server is
 * not open (the owner's thread sends the others straight to the transport);
 * nothing here retries a call.
 */
import path from 'node:path';
import { defineService, type ServiceContext } from '../../kernel/service.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import { isAlive } from '../../platform/process.ts';
import type { SessionEvent } from '../../protocol/composer.ts';
import { PROFILES } from '../catalogue/schema/normalise.ts';
import { Composer } from './composer.ts';
import { SettingsFollower } from './follow-settings.ts';
import { Ledger } from './ledger.ts';
import type { TransportEvent, TransportPort } from './ports.ts';
import { SessionPublisher } from './publish.ts';
import { MAX_LOADED, SessionRecords, closeSessionRecords, type SessionRecord } from './records.ts';
import type { Session } from './session.ts';
import type { TopicPayload } from '../../protocol/services/maps.ts';
import { COMPOSER_TOPICS, transportEvent, type TransportTopic } from './transport-port.ts';
import { workerPorts } from './worker-ports.ts';

export interface ComposerServiceOptions {
  /** The owner's id: its sessions' records are kept under it. */
  owner: string;
  home: string;
  /** The client capabilities declared to the sessions' servers. */
  capabilities: Record<string, unknown>;
}

export { COMPOSER_TOPICS };

interface Entry {
  pub: SessionPublisher;
  follower: SettingsFollower;
}

let ctxRef: ServiceContext<'composer'>;
let opts: ComposerServiceOptions;
let composer: Composer;
let transport: TransportPort;
let records: SessionRecords;
let seq = 0;
const entries = new Map<string, Entry>();
/** Sessions being restored after a restart: their calls wait for them. */
const restoring = new Map<string, Promise<Entry | undefined>>();
/** Restoring sessions the settings changed under: they reload once restored. */
const changedWhileRestoring = new Set<string>();
const transportListeners = new Set<(e: TransportEvent) => void>();

/** Whether an embedder's process is alive (an owner names its pid only, no start time; a zombie is dead). */
const pidAlive = (pid: number): boolean => isAlive({ pid, start: null });

/** Closes a connection once the direct calls in flight on it have settled. */
async function retire(id: string): Promise<void> {
  await transport.drain?.(id).catch(() => {});
  await transport.close(id);
}

function adopt(session: Session): Entry {
  const pub = new SessionPublisher(session, {
    emit: (name, payload) => ctxRef.emit(name, payload),
    version: () => [ctxRef.incarnation, ++seq],
    records,
    owner: opts.owner,
  });
  const e: Entry = { pub, follower: new SettingsFollower(session, (ev) => pub.event(ev)) };
  entries.set(session.id, e);
  session.on((ev) => {
    pub.event(ev);
    if (ev.type === 'closed' && entries.get(session.id) === e) entries.delete(session.id);
  });
  return e;
}

async function entryOf(id: unknown): Promise<Entry> {
  const e = typeof id === 'string' ? (entries.get(id) ?? (await restoring.get(id))) : undefined;
  // data.session says it is the session that is unknown (a call's unknown tool is ALBEDO_NOT_FOUND too).
  if (!e) throw new AlbedoError('ALBEDO_NOT_FOUND', 'no open session has this id', { outcome: 'not_run', data: { session: String(id) } });
  return e;
}

/** Restores one recorded session; one that cannot be restored is closed (its connections too) and its record dropped. */
async function restore(rec: SessionRecord): Promise<Entry | undefined> {
  const resume = {
    generation: rec.generation,
    digest: rec.digest,
    shown: rec.shown,
    connections: new Map(rec.connections),
    ...(rec.overlay ? { overlay: rec.overlay } : {}),
  };
  let session: Session | undefined;
  const early: SessionEvent[] = [];
  try {
    session = await composer.open(rec.options, (ev) => (session ? undefined : early.push(ev)), { id: rec.id, resume });
  } catch (err) {
    const e = err as AlbedoError;
    const message = `the session could not be restored after the composer restarted: ${e.message}`;
    ctxRef.emit('session/event', { id: rec.id, event: { type: 'warning', message, ...(e.code ? { code: e.code } : {}) } });
    ctxRef.emit('session/event', { id: rec.id, event: { type: 'closed' } });
    await Promise.allSettled(rec.connections.map(([, c]) => retire(c.id)));
    await records.remove(rec.owner, rec.id).catch(() => {});
    return undefined;
  }
  const entry = adopt(session);
  entry.pub.loaded = rec.loaded ?? [];
  // The model keeps the text it had until its conversation is compacted, whatever the restored generation shows.
  if (rec.kept && rec.kept.generation <= session.generation) entry.pub.kept = rec.kept;
  // The snapshot first, then the refreshed event that explains it.
  entry.pub.flush(true);
  for (const ev of early) if (ev.type === 'refreshed') ctxRef.emit('session/event', { id: rec.id, event: ev });
  if (changedWhileRestoring.delete(rec.id)) onSettingsChanged(entry);
  return entry;
}

/** The settings changed: reload, then publish what the reload changed (it may emit no event: a new fingerprint, same state). */
function onSettingsChanged(e: Entry): void {
  e.follower.changed();
  void e.follower.settled().then(() => e.pub.schedule());
}

/** A transport event: the composer core handles it; the sessions holding the connection publish what it changed. */
function onTransport(event: TransportEvent): void {
  for (const fn of transportListeners) fn(event);
  const ids = new Set(event.type === 'lost' ? event.ids : [event.id]);
  for (const e of entries.values()) {
    if (e.pub.session.composition.upstreams().some((up) => ids.has(up.id))) e.pub.schedule();
  }
}

/** A handler for each transport topic (a topic added to TRANSPORT_TOPICS without one here fails to compile). */
const onTopic =
  <T extends TransportTopic>(topic: T) =>
  (payload: TopicPayload<T>) => {
    const e = transportEvent(topic, payload);
    if (e) onTransport(e);
  };
const transportHandlers: { [T in TransportTopic]: (payload: TopicPayload<T>) => void } = {
  'transport:connection/dropped': onTopic('transport:connection/dropped'),
  'transport:connection/catalogue-changed': onTopic('transport:connection/catalogue-changed'),
  'transport:connection/warned': onTopic('transport:connection/warned'),
  'kernel:service/lost': onTopic('kernel:service/lost'),
};

export default defineService('composer', {
  events: {
    ...transportHandlers,
    'settings:settings/changed': () => {
      for (const e of entries.values()) onSettingsChanged(e);
      for (const id of restoring.keys()) changedWhileRestoring.add(id);
    },
    'settings:settings/invalid': (payload) => {
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
    // Before the owner is asked to drain a connection, every session's snapshot goes out: the owner stops naming it first.
    const beforeDrain = (): void => {
      for (const e of entries.values()) e.pub.flush();
    };
    const ports = workerPorts(
      ctx,
      { eraCachePath: storePath, capabilities: opts.capabilities, profiles: PROFILES, ledger, beforeDrain },
      subscribe,
    );
    composer = new Composer(ports);
    transport = ports.transport;
    // Restored in the background: the worker is ready at once, and a call for a session waits for its restore.
    const saved = records.list(opts.owner);
    for (const rec of saved) {
      const p = restore(rec).finally(() => restoring.delete(rec.id));
      restoring.set(rec.id, p);
    }
    // What the previous incarnation dialled that no record names (it crashed mid-preparation): closed, so no server outlives its owner.
    const named = new Set(saved.flatMap((r) => r.connections.map(([, c]) => c.id)));
    for (const id of ledger.ids) if (!named.has(id)) void retire(id);
  },
  async stop() {
    await closeSessionRecords();
  },
  handlers: {
    async 'session/open'(p) {
      const session = await composer.open(p.options ?? {});
      const entry = adopt(session);
      const snap = entry.pub.snapshot(true);
      // Recorded before the owner hears of it: a crash after this answer restores the session.
      await entry.pub.record();
      return snap;
    },
    async 'session/call'(p, call) {
      const e = await entryOf(p.id);
      const o: { timeoutMs?: number; signal: AbortSignal; progressToken?: string; capabilities?: Record<string, unknown> } = {
        signal: call.signal,
      };
      if (p.timeoutMs !== undefined) o.timeoutMs = p.timeoutMs;
      if (p.progressToken !== undefined) o.progressToken = p.progressToken;
      if (p.capabilities && typeof p.capabilities === 'object') o.capabilities = p.capabilities;
      try {
        return await e.pub.session.call(p.name, p.args, o);
      } finally {
        e.pub.schedule();
      }
    },
    async 'session/request'(p, call) {
      const e = await entryOf(p.id);
      const o = p.timeoutMs === undefined ? { signal: call.signal } : { timeoutMs: p.timeoutMs, signal: call.signal };
      try {
        return await e.pub.session.request(p.server, p.op, o);
      } finally {
        e.pub.schedule();
      }
    },
    async 'session/activity'(p) {
      const e = await entryOf(p.id);
      await e.pub.session.activity(p.kind);
      e.pub.schedule();
      return {};
    },
    async 'session/reload'(p) {
      const e = await entryOf(p.id);
      await e.pub.session.reload();
      e.pub.schedule();
      return {};
    },
    async 'session/overlay'(p) {
      const e = await entryOf(p.id);
      try {
        return await e.pub.session.setOverlay(p.cwd, p.servers);
      } finally {
        // The owner sees the overlay's state with the answer, and a restart after it finds the record saying so.
        e.pub.flush();
        await e.pub.written();
      }
    },
    async 'session/extensions'(p) {
      const e = await entryOf(p.id);
      try {
        return { extensions: await e.pub.session.setExtensions(p.extensions) };
      } finally {
        // The owner sees the new choice with the answer, and a restart after it finds the record keeping it.
        e.pub.flush();
        await e.pub.written();
      }
    },
    async 'session/close'(p) {
      const e = await entryOf(p.id).catch(() => undefined);
      await e?.pub.session.close();
      // Resolves once its record is gone too: a restart after this never brings the session back.
      await e?.pub.written();
      return {};
    },
    async 'session/loaded'(p) {
      const e = await entryOf(p.id);
      if (!Array.isArray(p.names) || p.names.length > MAX_LOADED || !p.names.every((n) => typeof n === 'string')) {
        throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `loaded names: an array of at most ${MAX_LOADED} strings`, { outcome: 'not_run' });
      }
      // Only ever longer: a late, shorter list (calls crossing) is not taken.
      if (p.names.length > e.pub.loaded.length) {
        e.pub.loaded = [...p.names];
        await e.pub.record();
      }
      return {};
    },
    async 'session/compacted'(p) {
      const e = await entryOf(p.id);
      const kept = await e.pub.compacted();
      // The owner sees the kept text with the answer.
      e.pub.flush();
      return kept;
    },
    async 'session/snapshot'(p) {
      return (await entryOf(p.id)).pub.snapshot(true);
    },
    async 'session/idle'(p) {
      const e = await entryOf(p.id);
      await e.follower.settled();
      await e.pub.session.idle();
      return {};
    },
    async 'composer/sessions'(p) {
      if (p.owner !== opts.owner) return [];
      await Promise.allSettled([...restoring.values()]);
      return [...entries.values()].map((e) => e.pub.snapshot(true));
    },
    async 'composer/close-owner'(p) {
      if (p.owner !== opts.owner) return {};
      await Promise.allSettled([...restoring.values()]);
      await Promise.allSettled(
        [...entries.values()].map(async (e) => {
          await e.pub.session.close();
          await e.pub.written();
        }),
      );
      return {};
    },
  },
});
