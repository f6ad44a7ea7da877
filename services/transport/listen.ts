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
import type { ListenFilter } from '../../protocol/rev2026-07-28/index.ts';
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
}

/** A connection's listen: the list changes its capabilities allow, and the resources subscribed to. */
export class Listens {
  #uris = new Set<string>();
  /** Ends the listen held now. */
  #abort: AbortController | undefined;
  /** Resolves a subscribe waiting for the new listen's acknowledgement. */
  #acked: (() => void) | undefined;

  /** Holds the listen for `capabilities` and the subscribed resources on `link`, replacing the one held now (if any). */
  hold(link: ListenLink, capabilities: ServerCapabilities): void {
    const filter = listenFilter(capabilities);
    if (this.#uris.size) filter.resourceSubscriptions = [...this.#uris];
    this.#abort?.abort();
    this.#abort = undefined;
    if (Object.keys(filter).length === 0) return;
    const ctl = (this.#abort = new AbortController());
    const host: ListenHost = { ...link, current: () => link.current() && !ctl.signal.aborted, send: (f) => link.send(f, ctl.signal) };
    holdListen(host, filter);
  }

  /** The server acknowledged a listen (`notifications/subscriptions/acknowledged`). */
  acknowledged(): void {
    this.#acked?.();
  }

  /** Subscribes to `uri` (or, `on` false, unsubscribes): the listen is held again; resolves once it is acknowledged. */
  subscribe(link: ListenLink, capabilities: ServerCapabilities, uri: string, on: boolean): Promise<void> {
    if (on ? this.#uris.has(uri) : !this.#uris.delete(uri)) return Promise.resolve();
    if (on) this.#uris.add(uri);
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, LISTEN_ACK_WAIT_MS);
      this.#acked = () => {
        clearTimeout(timer);
        this.#acked = undefined;
        resolve();
      };
      this.hold(link, capabilities);
      if (!this.#abort) this.#acked();
    });
  }
}
