/**
 * Every service's message map, by service name: the kernel's `call` and `on`,
 * a service's handlers (kernel/service.ts `defineService`), its context's
 * `call` and `emit`, and the topics it may follow are all typed from these, so
 * both sides of a message are checked against the same entry.
 */
import type { TransportEvents, TransportMethods } from './transport.ts';
import type { OAuthMethods } from './oauth.ts';
import type { SaveMethods, SettingsEvents, SettingsMethods } from './settings.ts';
import type { CatalogueEvents, CatalogueMethods } from './catalogue.ts';
import type { ComposerEvents, ComposerMethods, HostMethods } from './composer.ts';

/** The embedder's own service, on the kernel's thread: answers servers' input requests with its handlers. */
export interface ClientMethods {
  /**
   * `key`: the server's name for the question in a 2026-07-28 input_required round; `tag`: the progress token of the
   * request that asks, when it has one (the API's: api/progress.ts knows whose call it is).
   */
  'client/input': { params: { id: string; method: string; params: unknown; key?: string; tag?: string }; result: Record<string, unknown> };
  /** Shows the user an authorization URL (a browser); may answer with a callback URL the user pasted. */
  'client/authorize': { params: { server: string; url: string }; result: { callbackUrl?: string } };
}

export interface LifecyclePayload {
  service: string;
  instance: number;
  incarnation: number;
  keys: string[];
  reason: string;
  /** `service/lost`: why, as a stable word (uncaught_exception, unhandled_rejection, unresponsive, start_timeout, error, exit). */
  cause?: string;
}

export interface ServiceMethods {
  transport: TransportMethods;
  client: ClientMethods;
  oauth: OAuthMethods;
  settings: SettingsMethods;
  catalogue: CatalogueMethods;
  composer: ComposerMethods;
  host: HostMethods;
  save: SaveMethods;
}
export interface ServiceEvents {
  transport: TransportEvents;
  client: Record<never, never>;
  oauth: Record<never, never>;
  settings: SettingsEvents;
  catalogue: CatalogueEvents;
  composer: ComposerEvents;
  host: Record<never, never>;
  save: Record<never, never>;
  kernel: {
    /** A worker died; its in-flight calls failed with ALBEDO_SERVICE_LOST. */
    'service/lost': LifecyclePayload;
    /** A new incarnation is ready; the actors it held (`keys`) must be re-opened by their owners. */
    'service/restarted': LifecyclePayload;
    /**
     * The restart intensity was exceeded: the slot takes no new keys and refuses calls
     * until a retry after `coolDownMs` is ready (`service/restarted`).
     */
    'service/failed': LifecyclePayload;
  };
}
export type ServiceName = keyof ServiceMethods;

/** The methods of a service. */
export type MethodOf<S extends ServiceName> = keyof ServiceMethods[S] & string;
/** What a method takes. */
export type ParamsOf<S extends ServiceName, M extends MethodOf<S>> = ServiceMethods[S][M] extends { params: infer P } ? P : never;
/** What a method answers. */
export type ResultOf<S extends ServiceName, M extends MethodOf<S>> = ServiceMethods[S][M] extends { result: infer R } ? R : never;

/** Who publishes events: every service, and the kernel itself. */
export type Publisher = keyof ServiceEvents;
/** The events of a publisher. */
export type EventOf<S extends Publisher> = keyof ServiceEvents[S] & string;
/** What an event carries. */
export type PayloadOf<S extends Publisher, E extends EventOf<S>> = ServiceEvents[S][E];
/**
 * Every topic a service may follow (ServiceSpec.subscribe, a definition's
 * `events`): `publisher:event`, as `transport:connection/dropped` or
 * `kernel:service/lost`.
 */
export type Topic = { [S in Publisher]: `${S}:${EventOf<S>}` }[Publisher];
/** What a topic's event carries. */
export type TopicPayload<T extends Topic> = T extends `${infer S extends Publisher}:${infer E}`
  ? E extends EventOf<S>
    ? ServiceEvents[S][E]
    : never
  : never;
