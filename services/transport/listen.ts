/**
 * The held `subscriptions/listen` of a modern server whose capabilities say
 * a list can change (2026-07-28 basic/utilities/subscriptions). A listen
 * that breaks is held again after 1 s, doubling to 60 s, and the lists are
 * fetched again (changes may have been missed meanwhile); a listen that
 * lived 30 s counts as healthy; eight short-lived ones in a row give up with
 * a warning. A server that ends the subscription with a result is left alone.
 * `Listens` adds the resources a caller subscribed to (`resourceSubscriptions`:
 * 2026-07-28 has no resources/subscribe): a new filter replaces the listen.
 */
import type { AlbedoError } from '../../protocol/errors.ts';
import { META_SUBSCRIPTION_ID, type ListenFilter } from '../../protocol/rev2026-07-28/index.ts';
import type { ServerCapabilities } from '../../protocol/mcp.ts';

const LISTEN_BACKOFF_MS = 1_000;
const LISTEN_BACKOFF_MAX_MS = 60_000;
const LISTEN_HEALTHY_MS = 30_000;
const LISTEN_MAX_FAILURES = 8;
/** How long a resources/subscribe waits for the new listen's acknowledgement. */
const LISTEN_ACK_WAIT_MS = 5_000;

/** What a listen needs of its connection; every callback runs inside the connection's boundary. */
export interface ListenHost {
  /** False once the link this listen belongs to is gone or the connection closed. */
  current(): boolean;
  /** Sends the listen request with era params; resolves when the server ends it, rejects when it breaks. */
  send(filter: ListenFilter): Promise<unknown>;
  /** The listen was held again: fetch the lists, changes may have been missed. */
  resync(): void;
  warn(message: string): void;
  /** Wraps `fn` in the connection's containment boundary. */
  guard<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void;
}

/** The notifications a server's capabilities let us listen for; empty when none can change. */
export function listenFilter(c: ServerCapabilities): ListenFilter {
  const filter: ListenFilter = {};
  if (c.tools?.listChanged) filter.toolsListChanged = true;
  if (c.resources?.listChanged) filter.resourcesListChanged = true;
  if (c.prompts?.listChanged) filter.promptsListChanged = true;
  return filter;
}

/** Holds one listen for `filter` (which must not be empty), re-holding it as the header says. */
export function holdListen(host: ListenHost, filter: ListenFilter, failures = 0): void {
  const started = Date.now();
  host.send(filter).then(
    () => {},
    host.guard((err: AlbedoError) => {
      if (!host.current()) return;
      const n = Date.now() - started > LISTEN_HEALTHY_MS ? 1 : failures + 1;
      if (n >= LISTEN_MAX_FAILURES) {
        host.warn(
          `subscriptions/listen broke ${n} times in a row (last: ${err.message}); list changes will not be seen until the next reconnect`,
        );
        return;
      }
      const wait = Math.min(LISTEN_BACKOFF_MS * 2 ** (n - 1), LISTEN_BACKOFF_MAX_MS);
      const timer = setTimeout(
        host.guard(() => {
          if (!host.current()) return;
          holdListen(host, filter, n);
          host.resync();
        }),
        wait,
      );
      timer.unref?.();
    }),
  );
}

/** What one live link's listens need; `send` is given the signal that ends a listen a new filter replaces. */
export interface ListenLink extends Omit<ListenHost, 'send'> {
  send(filter: ListenFilter, signal: AbortSignal): Promise<unknown>;
  /** The JSON-RPC id of the listen `send` sent last (which the server's acknowledgement names). */
  sentId(): number | undefined;
}

/** A resources/subscribe (or unsubscribe) waiting for the listen held for it (`id`), or a later one, to be acknowledged. */
interface Waiter {
  id: number;
  uri: string;
  on: boolean;
  settle(err?: AlbedoError): void;
}

/** The listen id an acknowledgement names (`_meta` subscriptionId); undefined when it names none. */
function ackedId(params: unknown): number | undefined {
  const id = (params as { _meta?: Record<string, unknown> } | undefined)?._meta?.[META_SUBSCRIPTION_ID];
  return typeof id === 'number' ? id : undefined;
}

/** A connection's listen: the list changes its capabilities allow, and the resources subscribed to. */
export class Listens {
  #uris = new Set<string>();
  /** Ends the listen held now. */
  #abort: AbortController | undefined;
  /** The subscribes waiting for an acknowledgement, oldest first. */
  #waiters: Waiter[] = [];

  /** Holds the listen for `capabilities` and the subscribed resources on `link`, replacing the one held now (if any). */
  hold(link: ListenLink, capabilities: ServerCapabilities): void {
    const filter = listenFilter(capabilities);
    if (this.#uris.size) filter.resourceSubscriptions = [...this.#uris];
    this.#abort?.abort();
    this.#abort = undefined;
    if (Object.keys(filter).length === 0) return;
    const ctl = (this.#abort = new AbortController());
    const send = (f: ListenFilter): Promise<unknown> => {
      const sent = link.send(f, ctl.signal);
      const id = link.sentId();
      // A listen refused before it was acknowledged fails the subscribes waiting for it (not one a newer filter replaced).
      sent.catch(
        link.guard((err: AlbedoError) => {
          if (!ctl.signal.aborted && id !== undefined) this.#refused(link, capabilities, id, err);
        }),
      );
      return sent;
    };
    holdListen({ ...link, current: () => link.current() && !ctl.signal.aborted, send }, filter);
  }

  /**
   * The server acknowledged a listen (`notifications/subscriptions/acknowledged`): the subscribes waiting for that
   * one or an older one are done (an acknowledgement naming no listen, from a server that does not say, ends them all).
   */
  acknowledged(params?: unknown): void {
    const id = ackedId(params);
    this.#settle((w) => id === undefined || w.id <= id);
  }

  #settle(which: (w: Waiter) => boolean, err?: AlbedoError): Waiter[] {
    const done = this.#waiters.filter(which);
    if (!done.length) return done;
    this.#waiters = this.#waiters.filter((w) => !which(w));
    for (const w of done) w.settle(err);
    return done;
  }

  /** The listen `id` broke before its acknowledgement: its subscribes fail, and the listen is held again without them. */
  #refused(link: ListenLink, capabilities: ServerCapabilities, id: number, err: AlbedoError): void {
    const failed = this.#settle((w) => w.id <= id, err);
    if (!failed.length) return;
    for (const w of failed) if (w.on) this.#uris.delete(w.uri);
    if (link.current()) this.hold(link, capabilities);
  }

  /**
   * Subscribes to `uri` (or, `on` false, unsubscribes): the listen is held again; resolves once it is acknowledged
   * (or after LISTEN_ACK_WAIT_MS, from a server that never says), rejects when that listen is refused.
   */
  subscribe(link: ListenLink, capabilities: ServerCapabilities, uri: string, on: boolean): Promise<void> {
    if (on ? this.#uris.has(uri) : !this.#uris.delete(uri)) return Promise.resolve();
    if (on) this.#uris.add(uri);
    this.hold(link, capabilities);
    const id = link.sentId();
    if (!this.#abort || id === undefined) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = {
        id,
        uri,
        on,
        settle: (err) => {
          clearTimeout(timer);
          if (err) reject(err);
          else resolve();
        },
      };
      const timer = setTimeout(() => this.#settle((x) => x === w), LISTEN_ACK_WAIT_MS);
      timer.unref?.();
      this.#waiters.push(w);
    });
  }
}
