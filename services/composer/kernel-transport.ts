/**
 * The transport port over a kernel on this thread (tests of the composer
 * core drive it so): the kernel's calls and events through transport-port.ts.
 * The composer service uses the same port over its worker context.
 */
import type { Kernel } from '../../kernel/kernel.ts';
import type { ServiceName } from '../../protocol/services/maps.ts';
import type { TransportPort } from './ports.ts';
import { TRANSPORT_TOPICS, transportEvent, transportPort, type ServiceCaller, type TransportPortOptions } from './transport-port.ts';

export type KernelTransportOptions = TransportPortOptions;

/** The kernel as a ServiceCaller. */
export function kernelCaller(kernel: Kernel): ServiceCaller {
  return {
    call: (service, method, params, opts) => kernel.call(service as never, method as never, params as never, opts),
    release: (service, key) => kernel.release(service as ServiceName, key),
  };
}

export function kernelTransport(kernel: Kernel, opts: KernelTransportOptions): TransportPort {
  return transportPort(
    kernelCaller(kernel),
    (listener) => {
      const offs = TRANSPORT_TOPICS.map((topic) => {
        const [service, name] = [topic.slice(0, topic.indexOf(':')), topic.slice(topic.indexOf(':') + 1)];
        return kernel.on(service as never, name as never, (payload) => {
          const e = transportEvent(topic, payload);
          if (e) listener(e);
        });
      });
      return () => {
        for (const off of offs) off();
      };
    },
    opts,
  );
}
