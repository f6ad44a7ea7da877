/**
 * A connection's catalogue as last discovered, and keeping it current: a
 * server's list-change notification fetches the lists it names again, in the
 * background, one run at a time (a change meanwhile runs it once more), never
 * racing the first discovery and never more often than once a second; a
 * catalogue that differs is published. Everything it does is inside the
 * connection's boundary: a failure is a warning, never an unhandled rejection.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import { LIST_FIELD, type Catalogue, type ListMethod } from '../../protocol/mcp.ts';
import { listAll, checkTotal, type Lister, type ListBytes } from './discovery.ts';

/** Looked up with Map, never a plain object: a wire string such as `constructor` must not reach Object.prototype. */
const LIST_FOR_NOTIFICATION: ReadonlyMap<string, ListMethod[]> = new Map([
  ['notifications/tools/list_changed', ['tools/list']],
  ['notifications/resources/list_changed', ['resources/list', 'resources/templates/list']],
  ['notifications/prompts/list_changed', ['prompts/list']],
]);
/** Rediscoveries of one connection start at least this far apart. */
const REDISCOVER_GAP_MS = 1_000;

/** The lists a notification says have changed; undefined when it is no list change. */
export function listsChangedBy(method: string): ListMethod[] | undefined {
  return LIST_FOR_NOTIFICATION.get(method);
}

/** What the keeper needs of its connection. */
export interface KeeperHost {
  /** The server's name, for errors. */
  readonly name: string;
  /** How long each list request may take. */
  readonly timeoutMs: number;
  /** Whether the connection was closed: nothing more is fetched. */
  closed(): boolean;
  /** How to list on the link live now; undefined when the server dropped (the next dial checks the lists again). */
  lister(): Lister | undefined;
  warn(message: string, code?: string): void;
  /** The catalogue changed (`connection/catalogue-changed`). */
  changed(catalogue: Catalogue): void;
}

export class CatalogueKeeper {
  #host: KeeperHost;
  #catalogue: Catalogue = { tools: [], resources: [], resourceTemplates: [], prompts: [] };
  #sizes: ListBytes = {};
  #rediscovering: Promise<void> | undefined;
  #lastRediscovery = 0;
  #again = new Set<ListMethod>();
  /** Settles when the first discovery has; rediscovery never races it. */
  #initial: Promise<void> = Promise.resolve();

  constructor(host: KeeperHost) {
    this.#host = host;
  }

  get catalogue(): Catalogue {
    return this.#catalogue;
  }

  /** The first discovery is under way: list changes that arrive meanwhile wait for it to settle. */
  discovering(first: Promise<unknown>): void {
    this.#initial = first.then(
      () => undefined,
      () => undefined,
    );
  }

  /** The catalogue as the first discovery found it. */
  accept(catalogue: Catalogue, sizes: ListBytes): void {
    this.#catalogue = catalogue;
    this.#sizes = sizes;
  }

  /** Fetches the named lists again in the background (see the module's comment). */
  rediscover(lists: ListMethod[]): void {
    for (const l of lists) this.#again.add(l);
    if (this.#rediscovering) return;
    this.#rediscovering = this.#loop()
      .catch((err) => this.#host.warn(`rediscovery failed: ${(err as Error)?.message ?? String(err)}`))
      .finally(() => {
        this.#rediscovering = undefined;
      });
  }

  async #loop(): Promise<void> {
    const host = this.#host;
    await this.#initial;
    while (this.#again.size && !host.closed()) {
      // A server that announces a change with every answer must not keep us listing in a loop.
      const wait = this.#lastRediscovery + REDISCOVER_GAP_MS - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait).unref());
      if (host.closed()) return;
      this.#lastRediscovery = Date.now();
      const todo = [...this.#again];
      this.#again.clear();
      const lister = host.lister();
      if (!lister) return;
      const fresh: Partial<Record<string, unknown[]>> = {};
      const sizes: ListBytes = { ...this.#sizes };
      try {
        for (const m of todo) {
          const listed = await listAll(lister, m, host.timeoutMs, []);
          fresh[LIST_FIELD[m]] = listed.items;
          sizes[LIST_FIELD[m]] = listed.bytes;
        }
        checkTotal(host.name, sizes);
      } catch (err) {
        const code = AlbedoError.is(err) ? err.code : undefined;
        host.warn(`rediscovery failed, the previous catalogue stays: ${(err as Error).message}`, code);
        continue;
      }
      // Merge into the catalogue as it is now: only the lists just fetched are replaced.
      const next = { ...this.#catalogue, ...fresh } as Catalogue;
      if (JSON.stringify(next) !== JSON.stringify(this.#catalogue)) {
        this.#catalogue = next;
        this.#sizes = sizes;
        host.changed(next);
      }
    }
  }
}
