/**
 * One round of come-back probes of a session (session.ts `activity`): the servers are resolved again (a sign-in
 * changes a fingerprint), then dialled in parallel; each one's `probed` event says how it went. An overlay server is
 * not in the settings: it is dialled again as it was published.
 */
import type { SessionEvent } from '../../protocol/composer.ts';
import type { Composition } from './composition.ts';
import type { ResolvedServers, ServerChoice, SettingsPort } from './ports.ts';

export interface ProbeHost {
  settings: SettingsPort;
  choice: ServerChoice;
  /** The composition the session shows now (a reload may have swapped it) and whether the session is closed. */
  active(): Composition;
  closed(): boolean;
  emit(event: SessionEvent): void;
}

export async function probeRound(host: ProbeHost, comp: Composition, due: Composition['slots'], now: number): Promise<void> {
  let fresh: ResolvedServers | undefined;
  try {
    fresh = await host.settings.servers(host.choice);
  } catch (err) {
    host.emit({ type: 'warning', message: `come-back probes skipped: the servers could not be resolved (${(err as Error).message})` });
  }
  await Promise.all(
    due.map(async (s) => {
      const entry = s.entry.overlay ? s.entry : fresh?.servers.find((e) => e.name === s.name);
      let ok = false;
      if (entry && s.upstream && !host.closed()) {
        s.entry = entry;
        s.upstream.entry = entry;
        ok = await s.upstream.dial().then(
          () => true,
          () => false,
        );
      }
      s.probing = false;
      if (!ok) s.comeBack?.failed(now);
      if (comp !== host.active() || host.closed()) return;
      host.emit(
        ok
          ? { type: 'probed', server: s.name, ok, at: now }
          : { type: 'probed', server: s.name, ok, at: now, nextProbeAt: s.comeBack?.dueAt },
      );
    }),
  );
}
