/**
 * Every service's message map, by service name: the kernel's `call` and `on`
 * are typed from these.
 */
import type { TransportEvents, TransportMethods } from './transport.ts';
import type { OAuthMethods } from './oauth.ts';
import type { SettingsEvents, SettingsMethods } from './settings.ts';
import type { CatalogueEvents, CatalogueMethods } from './catalogue.ts';
import type { ComposerEvents, ComposerMethods, HostMethods } from './composer.ts';

/** The embedder's own service, on the kernel's thread: answers servers' input requests with its handlers. */
export interface ClientMethods {
  'client/input': { params: { id: string; method: string; params: unknown }; result: Record<string, unknown> };
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
}
export interface ServiceEvents {
  transport: TransportEvents;
  client: Record<never, never>;
  oauth: Record<never, never>;
  settings: SettingsEvents;
  catalogue: CatalogueEvents;
  composer: ComposerEvents;
  host: Record<never, never>;
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
