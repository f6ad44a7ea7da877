/**
 * What the composer service publishes of a session, and what it records of
 * one so a restarted composer can restore it: the view of a generation (the
 * tools, the context and the routes behind the names), the connections calls
 * go to, and a summary of what each server showed, by digest.
 */
import { createHash } from 'node:crypto';
import type { KeptContext, SessionConnection, SessionView } from '../../protocol/services/composer.ts';
import type { Change } from './context.ts';
import type { Composition, ServerSlot } from './composition.ts';

/** What a generation showed of one server, by digest (a session record keeps this, not the catalogues). */
export interface ShownRecord {
  server: string;
  /** Digest of the catalogue it advertised; null: not advertised. */
  catalogue: string | null;
  shown: string;
}

const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

function catalogueDigest(s: ServerSlot): string | null {
  const a = s.advertised;
  return a ? sha(JSON.stringify([a.catalogue, a.instructions, a.serverInfo, a.era])) : null;
}

export function viewOf(comp: Composition, generation: number): SessionView {
  return {
    generation,
    tools: comp.definitions.tools,
    context: comp.context,
    routes: [...comp.definitions.routes],
    inputs: [...comp.definitions.inputs],
    servers: comp.slots.map((s) => s.name),
    alwaysLoad: alwaysLoadOf(comp),
    cost: comp.cost,
    resultBudgets: comp.slots.flatMap((s) =>
      typeof s.entry.resultBudget === 'number' ? [[s.name, s.entry.resultBudget] as [string, number]] : [],
    ),
  };
}

/** The context text of a generation as a session keeps it until the next compaction, with what it costs. */
export function keptOf(comp: Composition, generation: number): KeptContext {
  const servers = comp.cost.servers.flatMap((s) => (s.context > 0 ? [[s.name, s.context] as [string, number]] : []));
  return { generation, context: comp.context, tokens: comp.cost.context, servers };
}

/** The advertised names whose server's `alwaysLoad` covers them: every definition of a server with `true`, or its listed raw tools. */
export function alwaysLoadOf(comp: Composition): string[] {
  const out: string[] = [];
  for (const [name, r] of comp.definitions.routes) {
    const a = comp.slot(r.server)?.entry.alwaysLoad;
    if (a === true || (Array.isArray(a) && r.kind === 'tool' && a.includes(r.tool))) out.push(name);
  }
  return out;
}

/** Where each server's calls go: its connection, open or not. A switched-off server has none. */
export function connectionsOf(comp: Composition): SessionConnection[] {
  return comp.slots.flatMap((s) =>
    s.upstream && s.upstream.state !== 'closed'
      ? [
          {
            server: s.name,
            id: s.upstream.id,
            open: s.upstream.state === 'open',
            callTimeoutMs: s.entry.callTimeoutMs,
            startupTimeoutMs: s.entry.startupTimeoutMs,
          },
        ]
      : [],
  );
}

/** The digest of what the model sees in a generation: equal digests, nothing to tell the model. */
export const viewDigest = (comp: Composition): string => sha(`${JSON.stringify(comp.definitions.tools)}\n${comp.context}`);

export const shownRecordOf = (comp: Composition): ShownRecord[] =>
  comp.slots.map((s) => ({ server: s.name, catalogue: catalogueDigest(s), shown: s.shown }));

/** How each server's part changed from a recorded generation to the one the slots show now (composition.ts `changesSince`, by digest). */
export function changesSinceRecord(
  before: readonly ShownRecord[],
  slots: readonly ServerSlot[],
): Array<{ server: string; change: Change }> {
  const was = new Map(before.map((b) => [b.server, b]));
  const out: Array<{ server: string; change: Change }> = [];
  for (const s of slots) {
    const b = was.get(s.name);
    const now = catalogueDigest(s);
    const gone: Change = s.state === 'needs_sign_in' ? 'needs_sign_in' : 'left';
    let change: Change | null = null;
    if (!b) change = 'added';
    else if (!b.catalogue && now) change = 'joined';
    else if (b.catalogue && !now) change = gone;
    else if (b.catalogue && now) change = b.catalogue === now ? null : 'changed';
    else if (b.shown !== s.shown) change = gone;
    if (change) out.push({ server: s.name, change });
  }
  const names = new Set(slots.map((s) => s.name));
  for (const b of before) if (!names.has(b.server)) out.push({ server: b.server, change: 'removed' });
  return out;
}
