/**
 * The transport port over a kernel on this thread (tests of the composer
 * core drive it so): the kernel's calls and events through transport-port.ts.
 * The composer service uses the same port over its worker context.
 */
import type { Kernel } from '../../kernel/kernel.ts';
import type { TransportEvent, TransportPort } from './ports.ts';
import { transportEvent, transportPort, type ServiceCaller, type TransportPortOptions } from './transport-port.ts';

export type KernelTransportOptions = TransportPortOptions;

/** The kernel as a ServiceCaller. */
export function kernelCaller(kernel: Kernel): ServiceCaller {
  return {
    call: (service, method, params, opts) => kernel.call(service, method, params, opts),
    release: (service, key) => kernel.release(service, key),
  };
}

export function kernelTransport(kernel: Kernel, opts: KernelTransportOptions): TransportPort {
  return transportPort(
    kernelCaller(kernel),
    (listener) => {
      const deliver = (e: TransportEvent | null): void => {
        if (e) listener(e);
      };
      // The topics of TRANSPORT_TOPICS, each by its publisher and name.
      const offs = [
        kernel.on('transport', 'connection/dropped', (p) => deliver(transportEvent('transport:connection/dropped', p))),
        kernel.on('transport', 'connection/catalogue-changed', (p) => deliver(transportEvent('transport:connection/catalogue-changed', p))),
        kernel.on('transport', 'connection/warned', (p) => deliver(transportEvent('transport:connection/warned', p))),
        kernel.on('kernel', 'service/lost', (p) => deliver(transportEvent('kernel:service/lost', p))),
      ];
      return () => {
        for (const off of offs) off();
      };
    },
    opts,
  );
}
