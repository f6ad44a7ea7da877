/**
 * The settings port over the settings service through a kernel on this
 * thread: `settings/resolve-all` for the session's choice, its answer mapped
 * onto the composer's ResolvedServers (`settings/get` for every configured name); its errors (ALBEDO_INVALID_CONFIG
 * with `data.issues` naming each server, ALBEDO_NOT_FOUND for an `include`
 * naming no configured server) pass through unchanged. `subscribe` follows
 * the service's events, so the owner can reload sessions when the settings
 * change.
 */
import type { Kernel } from '../../kernel/kernel.ts';
import type { ResolveAllResult, SettingsChangedEvent, SettingsEvents } from '../../protocol/services/settings.ts';
import type { ComposerServer, ResolvedServers, ServerChoice, SettingsPort } from './ports.ts';

/** How long a resolution may take (it reads no network; a worker restarting is what it may wait for). */
const RESOLVE_TIMEOUT_MS = 15_000;

export type SettingsNotice =
  { type: 'changed'; event: SettingsChangedEvent } | { type: 'invalid'; event: SettingsEvents['settings/invalid'] };

export interface KernelSettings extends SettingsPort {
  /** Follows settings/changed and settings/invalid; returns the unsubscribe function. */
  subscribe(listener: (notice: SettingsNotice) => void): () => void;
}

/** The service's answer in the composer's shape. */
export function resolvedServers(r: ResolveAllResult): ResolvedServers {
  const servers: ComposerServer[] = r.servers.map((s) => ({
    name: s.name,
    fingerprint: s.fingerprint,
    server: s.server,
    filters: {
      ...(s.enabledTools === null ? {} : { enabledTools: s.enabledTools }),
      disabledTools: s.disabledTools,
      ...(Array.isArray(s.alwaysLoad) ? { alwaysLoad: s.alwaysLoad } : {}),
    },
    alwaysLoad: s.alwaysLoad,
    resultBudget: s.resultBudget,
    isolate: s.isolate,
    share: s.share,
    startupTimeoutMs: s.server.startupTimeoutMs,
    callTimeoutMs: s.server.callTimeoutMs,
    ...(s.warnings?.length ? { warnings: s.warnings.map((w) => w.message) } : {}),
  }));
  return { servers, retryMs: r.retryMs, disabled: r.disabled, mcpEnabled: r.enabled.mcp, editorMcpEnabled: r.enabled['editor-mcp'] };
}

/** A session's choice as `settings/resolve-all` params. */
export function choiceParams(choice: ServerChoice): { include?: string[]; exclude?: string[] } {
  const params: { include?: string[]; exclude?: string[] } = {};
  if (choice.include) params.include = [...choice.include];
  if (choice.exclude) params.exclude = [...choice.exclude];
  return params;
}

export function kernelSettings(kernel: Kernel): KernelSettings {
  return {
    async servers(choice) {
      return resolvedServers(
        await kernel.call('settings', 'settings/resolve-all', choiceParams(choice), { timeoutMs: RESOLVE_TIMEOUT_MS }),
      );
    },
    async names() {
      return Object.keys((await kernel.call('settings', 'settings/get', {}, { timeoutMs: RESOLVE_TIMEOUT_MS })).servers);
    },
    subscribe(listener) {
      const offs = [
        kernel.on('settings', 'settings/changed', (event) => listener({ type: 'changed', event })),
        kernel.on('settings', 'settings/invalid', (event) => listener({ type: 'invalid', event })),
      ];
      return () => {
        for (const off of offs) off();
      };
    },
  };
}
