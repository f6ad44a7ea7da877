/**
 * The context text an AlbedoSession (api/session.ts) gives the model: the one
 * kept since the last compaction, so the system prompt it goes into stays the
 * same (and a provider's prompt cache holds) while `refreshed` events tell the
 * model what changed; and what that text costs.
 */
import type { ContextCost } from '../protocol/composer.ts';
import type { KeptContext, SessionSnapshot } from '../protocol/services/composer.ts';

/** The kept text of a full snapshot; a composer that sends none keeps nothing: the current generation's. */
export function keptOfSnapshot(snap: SessionSnapshot): KeptContext {
  if (snap.kept) return snap.kept;
  const { generation, context, cost } = snap.view!;
  return { generation, context, tokens: cost.context, servers: cost.servers.map((s) => [s.name, s.context]) };
}

/** A generation's cost with its context counted as the kept text: the whole, and each server's part (0: it has none in it). */
export function keptCost(cost: ContextCost, kept: KeptContext): ContextCost {
  const parts = new Map(kept.servers);
  return { ...cost, context: kept.tokens, servers: cost.servers.map((s) => ({ ...s, context: parts.get(s.name) ?? 0 })) };
}
