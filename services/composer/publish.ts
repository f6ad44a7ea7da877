/**
 * What the composer service tells the owner about one session, and in which
 * order: the snapshot first, then the events it explains (so a listener that
 * sees `refreshed` finds the new tools, one that sees `state` the new
 * status), at most once per turn of the event loop; and what it records in
 * LMDB, when the generation, the view, the connections or the kept context
 * text changed.
 */
import { DEFAULT_CONTEXT_BUDGET, DEFAULT_RESULT_BUDGET, type SessionEvent } from '../../protocol/composer.ts';
import type { ComposerEvents, KeptContext, SessionSnapshot } from '../../protocol/services/composer.ts';
import type { SessionRecord, SessionRecords } from './records.ts';
import type { Session } from './session.ts';
import { connectionsOf, keptOf, shownRecordOf, viewDigest, viewOf } from './snapshot.ts';

export interface PublishHost {
  emit<E extends keyof ComposerEvents>(name: E, payload: ComposerEvents[E]): void;
  /** The next snapshot version: the incarnation, then a counter. */
  version(): [number, number];
  records: SessionRecords;
  owner: string;
}

export class SessionPublisher {
  readonly session: Session;
  #host: PublishHost;
  /** The generation the last published snapshot carried a view of. */
  #sentGeneration = 0;
  /** What the last record held (generation, view digest, connections, extensions…): a record is written only when it changes. */
  #recorded = '';
  #writing: Promise<void> = Promise.resolve();
  #scheduled = false;
  #queued: SessionEvent[] = [];
  /** The digest of a generation's view, computed once per generation (a view changes only with its generation). */
  #digest: { generation: number; digest: string } | undefined;
  #closed = false;

  /** A deferred session's loaded names, as its owner last said (`session/loaded`); recorded and in every full snapshot. */
  loaded: string[] = [];
  /** The context text kept for the model since the last compaction (at open, the first generation's); recorded. */
  kept: KeptContext;
  /** The kept text the last snapshot carried. */
  #sentKept: KeptContext | undefined;

  constructor(session: Session, host: PublishHost) {
    this.session = session;
    this.#host = host;
    this.kept = keptOf(session.composition, session.generation);
  }

  /** The conversation was compacted: the current generation's text is kept from now on; resolves once it is recorded. */
  async compacted(): Promise<KeptContext> {
    const s = this.session;
    if (this.kept.generation !== s.generation) this.kept = keptOf(s.composition, s.generation);
    await this.record();
    return this.kept;
  }

  snapshot(full: boolean): SessionSnapshot {
    const s = this.session;
    const comp = s.composition;
    const out: SessionSnapshot = {
      id: s.id,
      version: this.#host.version(),
      profile: s.init.profile,
      tools: s.init.options?.tools ?? 'all',
      contextBudget: s.init.options?.contextBudget ?? DEFAULT_CONTEXT_BUDGET,
      resultBudget: s.init.options?.resultBudget ?? DEFAULT_RESULT_BUDGET,
      status: s.status(),
      warnings: s.warnings(),
      connections: connectionsOf(comp),
      overlay: s.overlayStatus(),
      extensions: s.extensions(),
    };
    if (s.init.options?.label !== undefined) out.label = s.init.options.label;
    if (s.init.options?.cwd !== undefined) out.cwd = s.init.options.cwd;
    if (full && this.loaded.length) out.loaded = [...this.loaded];
    if (full || this.kept !== this.#sentKept) {
      out.kept = this.kept;
      this.#sentKept = this.kept;
    }
    if (full || s.generation !== this.#sentGeneration) {
      out.view = viewOf(comp, s.generation);
      this.#sentGeneration = s.generation;
    }
    return out;
  }

  #viewDigest(): string {
    const g = this.session.generation;
    if (this.#digest?.generation !== g) this.#digest = { generation: g, digest: viewDigest(this.session.composition) };
    return this.#digest.digest;
  }

  /** Writes the record when it changed; resolves once what it holds now is on disk. */
  record(): Promise<void> {
    if (this.#closed) return this.#writing;
    const s = this.session;
    const comp = s.composition;
    const connections: SessionRecord['connections'] = comp.slots.flatMap((slot) =>
      slot.upstream && slot.upstream.state !== 'closed' ? [[slot.name, { id: slot.upstream.id, fingerprint: slot.entry.fingerprint }]] : [],
    );
    const digest = this.#viewDigest();
    const overlay = s.overlayRecord();
    const key = JSON.stringify([
      s.generation,
      digest,
      connections,
      this.loaded.length,
      this.kept.generation,
      overlay ?? null,
      s.init.options?.extensions ?? null,
    ]);
    if (key === this.#recorded) return this.#writing;
    this.#recorded = key;
    const rec: SessionRecord = {
      owner: this.#host.owner,
      id: s.id,
      options: { ...(s.init.options ?? {}) },
      generation: s.generation,
      digest,
      shown: shownRecordOf(comp),
      connections,
      savedAt: Date.now(),
      ...(this.loaded.length ? { loaded: [...this.loaded] } : {}),
      kept: this.kept,
      ...(overlay ? { overlay } : {}),
    };
    this.#writing = this.#writing
      .then(() => (this.#closed ? undefined : this.#host.records.put(rec)))
      .catch(() => {
        this.#recorded = '';
      });
    return this.#writing;
  }

  /** Publishes now: the snapshot, then the events queued since the last one; the record after. */
  flush(full = false): void {
    this.#scheduled = false;
    if (this.#closed) return;
    this.#host.emit('session/updated', this.snapshot(full));
    for (const event of this.#queued.splice(0)) this.#host.emit('session/event', { id: this.session.id, event });
    void this.record();
  }

  /** Publishes at the end of this turn of the event loop, however many changes it saw. */
  schedule(): void {
    if (this.#scheduled || this.#closed) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      if (this.#scheduled) this.flush();
    });
  }

  /** A session event: out after the snapshot it belongs with; `closed` at once (after what was queued), and the record goes. */
  event(event: SessionEvent): void {
    if (this.#closed) return;
    if (event.type !== 'closed') {
      this.#queued.push(event);
      this.schedule();
      return;
    }
    for (const e of this.#queued.splice(0)) this.#host.emit('session/event', { id: this.session.id, event: e });
    this.#closed = true;
    this.#scheduled = false;
    this.#host.emit('session/event', { id: this.session.id, event });
    // After any write in flight, so a late put cannot bring the record back.
    this.#writing = this.#writing.then(() => this.#host.records.remove(this.#host.owner, this.session.id)).catch(() => {});
  }

  /** Settles once every record write asked for so far (the removal at close included) is done. */
  written(): Promise<void> {
    return this.#writing;
  }
}
