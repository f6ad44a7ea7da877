/**
 * Every service's message map, by service name: the kernel's `call` and `on`
 * are typed from these.
 */
import type { TransportEvents, TransportMethods } from './transport.ts';

export interface LifecyclePayload {
  service: string;
  instance: number;
  incarnation: number;
  keys: string[];
  reason: string;
}

export interface ServiceMethods {
  transport: TransportMethods;
}
export interface ServiceEvents {
  transport: TransportEvents;
  kernel: {
    /** A worker died; its in-flight calls failed with ALBEDO_SERVICE_LOST. */
    'service/lost': LifecyclePayload;
    /** A new incarnation is ready; the actors it held (`keys`) must be re-opened by their owners. */
    'service/restarted': LifecyclePayload;
    /** The restart intensity was exceeded; the slot stays down. */
    'service/failed': LifecyclePayload;
  };
}
export type ServiceName = keyof ServiceMethods;
