/**
 * Which servers changed between two settings: each server is known by its
 * entry (canonical JSON), whether it is enabled, and what it resolves to —
 * its fingerprint, or the problem that keeps it from resolving — so a
 * sign-in or a changed secret counts as a change as much as an edit does.
 */
import type { Settings } from '../../protocol/settings.ts';
import type { ServerChange } from '../../protocol/services/settings.ts';
import { problemOf, resolveSettingsServer, type ResolveEnv } from './resolve.ts';
import { stableJson } from './writes.ts';

export interface Known {
  entry: string;
  enabled: boolean;
  fingerprint: string | null;
  /** The ResolveProblem as JSON, so two can be compared as strings. */
  problem: string | null;
}

/** What every server of `settings` is and resolves to now. */
export function knowAll(settings: Settings, env: ResolveEnv): Map<string, Known> {
  const out = new Map<string, Known>();
  for (const [name, entry] of Object.entries(settings.servers)) {
    const k: Known = { entry: stableJson(entry), enabled: entry.enabled, fingerprint: null, problem: null };
    try {
      k.fingerprint = resolveSettingsServer(name, entry, env).fingerprint;
    } catch (err) {
      k.problem = JSON.stringify(problemOf(err, name));
    }
    out.set(name, k);
  }
  return out;
}

/** The change `name` shows as (added or updated, with its fingerprint or problem). */
export function changeOf(name: string, k: Known, change: 'added' | 'updated'): ServerChange {
  const c: ServerChange = { name, change, enabled: k.enabled, fingerprint: k.fingerprint };
  if (k.problem !== null) c.problem = JSON.parse(k.problem);
  return c;
}

/** The servers that differ from `before` to `after`, in the order of `after`, then the removed ones. */
export function diffKnown(before: Map<string, Known>, after: Map<string, Known>): ServerChange[] {
  const changes: ServerChange[] = [];
  for (const [name, k] of after) {
    const old = before.get(name);
    if (old && old.entry === k.entry && old.enabled === k.enabled && old.fingerprint === k.fingerprint && old.problem === k.problem)
      continue;
    changes.push(changeOf(name, k, old ? 'updated' : 'added'));
  }
  for (const name of before.keys()) if (!after.has(name)) changes.push({ name, change: 'removed', enabled: false, fingerprint: null });
  return changes;
}

/**
 * The gateways whose definition differs from `before` to `after` (added, replaced or removed), in the order of
 * `after`, then the removed ones.
 */
export function gatewaysChanged(before: Settings['gateways'], after: Settings['gateways']): string[] {
  const out: string[] = [];
  for (const [name, def] of Object.entries(after)) {
    if (!Object.hasOwn(before, name) || stableJson(before[name]) !== stableJson(def)) out.push(name);
  }
  for (const name of Object.keys(before)) if (!Object.hasOwn(after, name)) out.push(name);
  return out;
}
