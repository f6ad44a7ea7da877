/**
 * The settings service's definition: one worker holding the SettingsStore of
 * one $ALBEDO_HOME (store.ts has the logic, apply.ts a save's transaction;
 * this file only maps the messages of protocol/services/settings.ts onto
 * them and publishes the store's events). The format of the settings file
 * is the codec's (codec.ts): service.ts is the service over extensions.json,
 * toml-service.ts the same over extensions.toml. Started with
 * `options: { home, at?, env?, watch?, debounceMs? }`; one instance, since it
 * is the one writer of the files in this process.
 */
import type { ServiceDefinition } from '../../kernel/service.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import type { SettingsPlan } from '../../protocol/services/settings.ts';
import { applyPlan } from './apply.ts';
import type { SettingsCodec } from './codec.ts';
import { SettingsStore } from './store.ts';

export interface SettingsServiceOptions {
  home: string;
  /** The path the settings file is read through (SettingsOptions.at; default home). */
  at?: string;
  /** The environment `{ env }` secrets are looked up in (default: the worker's process.env, a copy of the daemon's). */
  env?: Record<string, string>;
  /** Pick up hand edits (default true). */
  watch?: boolean;
  debounceMs?: number;
}

const invalidArgument = (message: string): AlbedoError => new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, { outcome: 'not_run' });

function nameOf(p: { name?: unknown } | undefined): string {
  if (typeof p?.name !== 'string') throw invalidArgument('name must be a string');
  return p.name;
}

const OPS: ReadonlySet<string> = new Set(['put', 'patch', 'enable', 'disable', 'remove', 'sections']);

/** The plan, checked as far as the map cannot check a caller on another thread. */
function planOf(p: { plan?: unknown } | undefined): SettingsPlan {
  const plan = p?.plan as { op?: unknown; name?: unknown } | undefined;
  if (typeof plan !== 'object' || plan === null || typeof plan.op !== 'string' || !OPS.has(plan.op))
    throw invalidArgument('plan.op must be one of put, patch, enable, disable, remove, sections');
  if (plan.op !== 'sections') nameOf(plan);
  return plan as SettingsPlan;
}

/** The settings service over the file `codec` reads and writes. */
export function settingsDefinition(codec: SettingsCodec): ServiceDefinition<'settings'> {
  let store: SettingsStore | undefined;
  const the = (): SettingsStore => {
    if (!store) throw new AlbedoError('ALBEDO_CLOSED', 'the settings service is not started', { outcome: 'not_run' });
    return store;
  };
  return {
    async start(ctx) {
      const o = ctx.options as SettingsServiceOptions | undefined;
      if (!o || typeof o.home !== 'string') throw new Error('the settings service needs options.home');
      store = await new SettingsStore({
        home: o.home,
        at: o.at,
        env: o.env,
        debounceMs: o.debounceMs,
        codec,
        onEvent: (name, payload) => ctx.emit(name, payload),
      }).open(o.watch ?? true);
    },
    stop() {
      store?.close();
      store = undefined;
    },
    handlers: {
      'settings/get': () => the().get(),
      'settings/resolve': (p) => the().resolve(nameOf(p)),
      'settings/resolve-all': (p) => the().resolveAll({ include: p?.include, exclude: p?.exclude }),
      'settings/apply': (p, ctx) => applyPlan(the(), { ...p, plan: planOf(p) }, { call: ctx.call, signal: ctx.signal }),
    },
  };
}
