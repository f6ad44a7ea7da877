/** A kernel running the kernel test service, stopped at teardown. */
import { Kernel, type ServiceSpec } from '../../kernel/kernel.ts';
import { Faults } from '../../kernel/faults.ts';
import { fixture } from '../helpers.ts';

// The kernel is typed by the service maps; the test service is outside them.
export type Loose = {
  call(s: string, m: string, p: unknown, o?: object): Promise<any>;
  on(s: string, e: string, fn: (p: any) => void): () => void;
  provide(name: string, handlers: Record<string, (p: any, ctx: { signal: AbortSignal; deadline: number }) => unknown>): () => void;
};

export const spec = (over: Partial<ServiceSpec> = {}): ServiceSpec => ({
  name: 'test',
  module: fixture('services/test-service.ts'),
  restart: { intensity: 3, periodMs: 60_000, backoffMs: 20, maxBackoffMs: 200 },
  heartbeat: { intervalMs: 100, timeoutMs: 1_000 },
  ...over,
});

export async function kernel(
  t: { teardown(fn: () => unknown): void },
  over: Partial<ServiceSpec> = {},
): Promise<{ k: Kernel; K: Loose; faults: Faults }> {
  // Fault injection on: the tests crash, hang, delay and drop.
  const k = new Kernel({ faults: true });
  k.start(spec(over));
  t.teardown(() => k.stop(2_000));
  return { k, K: k as unknown as Loose, faults: new Faults(k) };
}
