/**
 * The settings service: one worker holding the SettingsStore of one
 * $ALBEDO_HOME (store.ts has the logic; this file only maps the messages of
 * protocol/services/settings.ts onto it and publishes its events). Started
 * with `options: { home, env?, watch?, debounceMs? }`; one instance, since
 * it is the one writer of the files in this process.
 */
import { defineService } from '../../kernel/service.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import type { SettingsMethods } from '../../protocol/services/settings.ts';
import { SettingsStore } from './store.ts';

type P<M extends keyof SettingsMethods> = SettingsMethods[M]['params'];

export interface SettingsServiceOptions {
  home: string;
  /** The path extensions.json is read through (SettingsOptions.at; default home). */
  at?: string;
  /** The environment `{ env }` secrets are looked up in (default: the worker's process.env, a copy of the daemon's). */
  env?: Record<string, string>;
  /** Pick up hand edits (default true). */
  watch?: boolean;
  debounceMs?: number;
}

let store: SettingsStore | undefined;

function the(): SettingsStore {
  if (!store) throw new AlbedoError('ALBEDO_CLOSED', 'the settings service is not started', { outcome: 'not_run' });
  return store;
}

function nameOf(p: { name?: unknown }): string {
  if (typeof p?.name !== 'string') throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', 'name must be a string', { outcome: 'not_run' });
  return p.name;
}

export default defineService({
  async start(ctx) {
    const o = ctx.options as SettingsServiceOptions | undefined;
    if (!o || typeof o.home !== 'string') throw new Error('the settings service needs options.home');
    store = await new SettingsStore({
      home: o.home,
      at: o.at,
      env: o.env,
      debounceMs: o.debounceMs,
      onEvent: (name, payload) => ctx.emit(name, payload),
    }).open(o.watch ?? true);
  },
  stop() {
    store?.close();
    store = undefined;
  },
  handlers: {
    'settings/get': () => the().get(),
    'settings/resolve': (p: P<'settings/resolve'>) => the().resolve(nameOf(p)),
    'settings/resolve-all': (p: P<'settings/resolve-all'>) => the().resolveAll({ include: p?.include, exclude: p?.exclude }),
    'settings/resolve-draft': (p: P<'settings/resolve-draft'>) => the().resolveDraft(nameOf(p), p.entry, p.secrets),
    'settings/put-server': (p: P<'settings/put-server'>) => the().putServer(nameOf(p), p.entry, p.secrets, p.expect),
    'settings/put-section': (p: P<'settings/put-section'>) => the().putSection(p),
    'settings/remove-server': (p: P<'settings/remove-server'>) => the().removeServer(nameOf(p)),
    'settings/reload': () => the().reload('file'),
  },
});
