/**
 * Property names a provider rejects, renamed deterministically: Anthropic
 * (and Claude on Bedrock) takes `^[a-zA-Z0-9_.-]{1,64}$`, Gemini documents
 * `^[a-zA-Z_][a-zA-Z0-9_]{0,63}$` (so does portable). Valid names keep theirs;
 * an invalid one has each other character replaced by `_`, a leading `_` when
 * it must start with a letter, is cut to 64, and gets `_2`, `_3`, … when that
 * name is taken. The caller records the mapping in the ArgPlan.
 */
import { KEY_RULES } from './profiles.ts';

/** Original name → name the model sees, for every name of one properties map. */
export function renameKeys(names: readonly string[], rule: RegExp): Map<string, string> {
  const out = new Map<string, string>();
  const taken = new Set<string>();
  for (const n of names) {
    if (rule.test(n)) {
      out.set(n, n);
      taken.add(n);
    }
  }
  const gemini = rule === KEY_RULES.gemini;
  for (const n of names) {
    if (out.has(n)) continue;
    let base = [...n].map((ch) => ((gemini ? /[a-zA-Z0-9_]/ : /[a-zA-Z0-9_.-]/).test(ch) ? ch : '_')).join('');
    if (gemini && !/^[a-zA-Z_]/.test(base)) base = `_${base}`;
    if (!base) base = '_';
    base = base.slice(0, 64);
    let name = base;
    for (let i = 2; taken.has(name); i++) {
      const suffix = `_${i}`;
      name = base.slice(0, 64 - suffix.length) + suffix;
    }
    out.set(n, name);
    taken.add(name);
  }
  return out;
}
