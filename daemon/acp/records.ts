/**
 * What the ACP side reads back: the records of `acp-sessions.json` (a file that
 * is not exactly such a record is refused whole: sessions.ts sets it aside),
 * and which of a session's overlay servers its composition left out because a
 * configured server took their name. Pure.
 */

export type Saved = { acpSessionId?: string; cwd: string; agent: { command: string; args: string[] } };
const isSaved = (v: unknown): v is Saved => {
  const r = v as Saved | null;
  if (!r || typeof r !== 'object' || Array.isArray(r) || typeof r.cwd !== 'string') return false;
  if (r.acpSessionId !== undefined && typeof r.acpSessionId !== 'string') return false;
  const a = r.agent as unknown as { command?: unknown; args?: unknown } | null;
  return !!a && typeof a.command === 'string' && Array.isArray(a.args) && a.args.every((x) => typeof x === 'string');
};

/** The records of `text`, or null when it is not `{ sessions: { ID: record } }`. */
export function parseSaved(text: string): Record<string, Saved> | null {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return null;
  }
  const sessions = (doc as { sessions?: unknown } | null)?.sessions;
  if (!sessions || typeof sessions !== 'object' || Array.isArray(sessions)) return null;
  return Object.values(sessions).every(isSaved) ? (sessions as Record<string, Saved>) : null;
}

/**
 * Which overlay servers the session's composition left out because a configured server has their name, by its warning
 * (services/composer/prepare.ts: `the overlay server "NAME" is left out: a configured server now has its name`; a
 * name longer than 64 characters is quoted cut, so it is matched by the part that is kept).
 */
export function shadowedOf(warnings: string[]): (name: string) => boolean {
  const head = 'the overlay server ';
  const tail = ' is left out: a configured server now has its name';
  const names: string[] = [];
  for (const w of warnings) {
    if (!w.startsWith(head) || !w.endsWith(tail)) continue;
    try {
      const n: unknown = JSON.parse(w.slice(head.length, -tail.length));
      if (typeof n === 'string') names.push(n);
    } catch {
      // Not a quoted name: not this warning.
    }
  }
  return (name) => names.some((n) => n === name || (name.length > 64 && n.endsWith('…') && name.startsWith(n.slice(0, -1))));
}
