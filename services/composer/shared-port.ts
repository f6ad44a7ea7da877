/**
 * Shared connections (docs/architecture.md, "Shared connections"): sessions
 * composing the same server under the same fingerprint and client
 * capabilities use one transport connection — one process, one HTTP
 * session — whose id is derived from both (`sharedId`), so each session's
 * Upstream, its record, the owner's direct calls and the transport's events
 * all name the one connection. This port wraps the transport for the
 * composer: an open of a shared id joins the connection when it is live (or
 * its open is under way); a close or drain reaches the transport only when
 * no other session's Upstream holds the id (`holders`). Opens and closes of
 * one id are serialised, so a late close never takes a new open's actor.
 * Per-session connections (random ids) pass straight through.
 */
import { createHash } from 'node:crypto';
import { SHARED_CONNECTION_PREFIX, type OpenResult } from '../../protocol/services/transport.ts';
import type { Era } from '../../protocol/versions.ts';
import type { ComposerServer, TransportPort } from './ports.ts';

const PREFIX = SHARED_CONNECTION_PREFIX;

/** Canonical JSON (sorted keys), so equal capabilities give one id whatever their order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

/**
 * Whether a server's connection is shared: asked for (`auto`, HTTP's default: when its saved catalogue says it
 * speaks 2026-07-28, which keeps no state per client; a 2025-era HTTP session may), and neither an overlay (the
 * editor's) nor isolated.
 */
export function isShared(entry: ComposerServer, era?: Era): boolean {
  if (entry.overlay || entry.isolate) return false;
  return entry.share === true || (entry.share === 'auto' && era === 'modern');
}

/** The id of the connection sessions share for `entry` (its name and fingerprint) with these client capabilities. */
export function sharedId(entry: ComposerServer, capabilities: Record<string, unknown> | undefined): string {
  const h = createHash('sha256').update(entry.name).update('\0').update(entry.fingerprint).update('\0');
  h.update(canonical(capabilities ?? null));
  return PREFIX + h.digest('hex').slice(0, 32);
}

export const isSharedId = (id: string): boolean => id.startsWith(PREFIX);

/**
 * `holders(id)`: how many Upstreams (of any session) hold `id` and are not
 * closed. A closing Upstream is closed before it asks, so at its close the
 * count is of the others; at a drain it still counts itself.
 */
export function sharedPort(base: TransportPort, holders: (id: string) => number): TransportPort {
  const opening = new Map<string, Promise<OpenResult>>();
  /** The last open or close of each shared id, so the next waits for it. */
  const tail = new Map<string, Promise<unknown>>();
  const serial = <T>(id: string, run: () => Promise<T>): Promise<T> => {
    const p = (tail.get(id) ?? Promise.resolve()).catch(() => {}).then(run);
    const settled = p.catch(() => {});
    tail.set(id, settled);
    void settled.then(() => {
      if (tail.get(id) === settled) tail.delete(id);
    });
    return p;
  };
  return {
    ...base,
    open(id, server, o) {
      if (!isSharedId(id)) return base.open(id, server, o);
      const joined = opening.get(id);
      if (joined) return joined;
      const p = serial(id, async () => {
        // Live already (another session opened it, or a restarted composer's session resumed it): joined as it is.
        const live = base.info ? await base.info(id).catch(() => null) : null;
        return live ?? (await base.open(id, server, o));
      }).finally(() => {
        if (opening.get(id) === p) opening.delete(id);
      });
      opening.set(id, p);
      return p;
    },
    close(id) {
      if (!isSharedId(id)) return base.close(id);
      if (holders(id) > 0) return Promise.resolve();
      return serial(id, async () => {
        // A session that joined meanwhile keeps it.
        if (holders(id) > 0 || opening.has(id)) return;
        await base.close(id);
      });
    },
    ...(base.drain
      ? {
          drain: (id: string): Promise<void> => (isSharedId(id) && holders(id) > 1 ? Promise.resolve() : base.drain!(id)),
        }
      : {}),
  };
}
