/**
 * Compile-time proof that a service's contract is checked on both sides
 * (tsc checks this file; nothing runs it). Each `@ts-expect-error` marks a
 * line the compiler must refuse: one it accepted would leave the directive
 * unused, which is itself an error, so a loosening of kernel/service.ts or
 * of the maps fails `tsc --noEmit`. The lines without one must compile.
 */
import { defineService, type ServiceContext, type WorkerContext, type UncheckedContext } from '../../kernel/service.ts';
import type { Kernel, ServiceSpec } from '../../kernel/kernel.ts';
import type { CatalogueStats } from '../../protocol/services/catalogue.ts';

const stats: CatalogueStats = { tid: null, threshold: 0, inThread: 0, pooled: 0, running: 0, cancelled: 0, pool: null, loopDelay: null };

/** Every catalogue handler, right: the base each case below changes one thing of. */
const right = {
  'catalogue/current': (p: { servers: { server: string; fingerprint: string }[] }) => p.servers.map(() => null),
  'catalogue/put': async () => ({ changed: false }),
  'catalogue/remove': () => ({}),
  'catalogue/normalise': async () => [],
  'catalogue/profiles': () => ['openai'],
  'catalogue/stats': () => stats,
};

export function cases(kernel: Kernel): void {
  defineService('catalogue', { handlers: right });

  defineService('catalogue', {
    handlers: {
      ...right,
      // @ts-expect-error a handler whose params are not the map's
      'catalogue/remove': (p: { name: string }) => ({ gone: p.name }),
    },
  });

  defineService('catalogue', {
    handlers: {
      ...right,
      // @ts-expect-error a handler returning another result than the map's
      'catalogue/profiles': () => [1, 2],
    },
  });

  defineService('catalogue', {
    handlers: {
      ...right,
      // @ts-expect-error an async handler resolving to another result
      'catalogue/put': async () => ({ changed: 'yes' }),
    },
  });

  defineService('catalogue', {
    // @ts-expect-error a handler missing (catalogue/stats)
    handlers: {
      'catalogue/current': right['catalogue/current'],
      'catalogue/put': right['catalogue/put'],
      'catalogue/remove': right['catalogue/remove'],
      'catalogue/normalise': right['catalogue/normalise'],
      'catalogue/profiles': right['catalogue/profiles'],
    },
  });

  defineService('catalogue', {
    handlers: {
      ...right,
      // @ts-expect-error a handler for a method the map does not have
      'catalogue/unknown': () => null,
    },
  });

  // @ts-expect-error a service no map names
  defineService('nobody', { handlers: {} });

  defineService('catalogue', {
    handlers: {
      ...right,
      'catalogue/profiles': async (_p, ctx) => {
        // Right: the result is inferred from the settings map.
        const view = await ctx.call('settings', 'settings/get', {});
        const generation: number = view.generation;
        // @ts-expect-error ctx.call with params that are not the method's
        await ctx.call('settings', 'settings/resolve', { name: 42 });
        // @ts-expect-error ctx.call of a method the service does not have
        await ctx.call('settings', 'settings/unknown', {});
        // @ts-expect-error the inferred result is not any
        const wrong: string = (await ctx.call('settings', 'settings/resolve', { name: 'x' })).fingerprint.length;
        void [generation, wrong];
        return ['openai'];
      },
    },
  });

  defineService('transport', {
    handlers: {
      'connection/open': async (p, call) => {
        // Right: its own event with its payload.
        call.emit('connection/warned', { id: p.id, message: 'm' });
        // @ts-expect-error ctx.emit with a payload that is not the event's
        call.emit('connection/warned', { id: p.id, text: 'm' });
        // @ts-expect-error ctx.emit of another service's event
        call.emit('settings/changed', { generation: 1 });
        throw new Error('not run');
      },
      'connection/request': () => null,
      'connection/info': () => null,
      'connection/close': () => ({ stderrTail: '' }),
    },
  });

  const handlers = {
    'session/open': () => new Promise<never>(() => {}),
    'session/call': () => null,
    'session/request': () => null,
    'session/activity': () => ({}),
    'session/reload': () => ({}),
    'session/overlay': () => new Promise<never>(() => {}),
    'session/extensions': () => new Promise<never>(() => {}),
    'session/close': () => ({}),
    'session/loaded': () => ({}),
    'session/compacted': () => new Promise<never>(() => {}),
    'session/snapshot': () => new Promise<never>(() => {}),
    'session/idle': () => ({}),
    'composer/sessions': () => [],
    'composer/close-owner': () => ({}),
  };
  defineService('composer', {
    handlers,
    events: {
      // Right: payloads typed by topic.
      'transport:connection/dropped': (p) => void p.error.code,
      'kernel:service/lost': (p) => void p.keys.length,
      // @ts-expect-error an events handler for a topic nobody publishes
      'transport:connection/exploded': () => {},
    },
  });
  defineService('composer', {
    handlers,
    events: {
      // @ts-expect-error an events handler taking another payload than its topic's
      'settings:settings/invalid': (p: { generation: number }) => void p,
    },
  });

  const spec: ServiceSpec = { name: 'composer', module: '/m.ts', subscribe: ['settings:settings/changed'] };
  // @ts-expect-error a subscription to a topic nobody publishes
  spec.subscribe = ['settings:settings/exploded'];

  // The kernel's side, from the same maps.
  void kernel.call('catalogue', 'catalogue/remove', { server: 'x' }).then((r: Record<string, never>) => r);
  // @ts-expect-error kernel.call with params that are not the method's
  void kernel.call('catalogue', 'catalogue/remove', { name: 'x' });
  // @ts-expect-error kernel.on with a listener for another payload
  kernel.on('transport', 'connection/dropped', (e: { generation: number }) => e);
  kernel.provide('host', { 'host/drain': async () => ({}) });
  // @ts-expect-error a local service's handler answering another result than its map's
  kernel.provide('host', { 'host/drain': () => ({ drained: true }) });
  // @ts-expect-error a local service missing a handler
  kernel.provide('client', { 'client/input': () => ({}) });
}

/** What a worker gives every service implements the typed context of each, and the unchecked one. */
export function workerContext(w: WorkerContext): [ServiceContext<'transport'>, ServiceContext<'composer'>, UncheckedContext] {
  return [w, w, w];
}
