/**
 * Model-facing names (docs/design.md, "Names and schemas"):
 * `mcp_<server>_<operation>_<hash>`, matching the portable rule every major provider accepts at once,
 * `^[a-zA-Z][a-zA-Z0-9_]{0,63}$`. The hash is always present and comes from
 * the raw (server, operation) identity alone, so a name never depends on
 * which other servers or tools are loaded: adding a server never renames a
 * tool already advertised (Codex does; Gemini CLI lets the last duplicate
 * win). The readable segments are sanitised and truncated to fit; nothing
 * ever parses a name back (calls resolve through the routing table).
 * Pure functions, no I/O.
 */
import { createHash } from 'node:crypto';
import type { Identity, PseudoOperation } from '../../protocol/catalogue.ts';

/** The rule every name satisfies (OpenAI, Anthropic, Gemini and Bedrock all accept it). */
export const NAME_RULE = /^[a-zA-Z][a-zA-Z0-9_]{0,63}$/;
export const MAX_NAME_LENGTH = 64;
/**
 * Hash characters per name: 10 base32 characters are 50 bits. Among n
 * identities whose sanitised segments are also equal, the chance that any two
 * share a hash is about n² / 2⁵¹: 4·10⁻⁸ for 10,000 tools, 4·10⁻⁶ for 100,000.
 */
export const HASH_CHARS = 10;
const PREFIX = 'mcp_';
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';
/** Rehash rounds tried for a colliding identity before the counter fallback (which always terminates). */
const REHASH_ROUNDS = 4;
/** Versioned domain of the identity encoding: changing the algorithm means changing this (and the golden names in the tests). */
const DOMAIN = 'albedo/tool-name/v1';

/** A digest over bytes; at least 7 bytes of output are used. Injectable so tests can force collisions. */
export type Digest = (data: Uint8Array) => Uint8Array;
export const sha256: Digest = (data) => createHash('sha256').update(data).digest();

/**
 * Letters NFKD does not decompose but that have an obvious ASCII spelling.
 * Everything else outside ASCII letters and digits becomes a separator.
 */
const FOLD: Readonly<Record<string, string>> = {
  ß: 'ss',
  ẞ: 'SS',
  æ: 'ae',
  Æ: 'AE',
  œ: 'oe',
  Œ: 'OE',
  ø: 'o',
  Ø: 'O',
  đ: 'd',
  Đ: 'D',
  ð: 'd',
  Ð: 'D',
  ł: 'l',
  Ł: 'L',
  þ: 'th',
  Þ: 'Th',
  ı: 'i',
  ħ: 'h',
  Ħ: 'H',
  ŧ: 't',
  Ŧ: 'T',
};
const MARK = /^\p{M}$/u;
const isAlnum = (c: string): boolean => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

/**
 * `s` folded to ASCII letters and digits joined by single `_` (NFKD with the
 * marks dropped, a few letters spelt out, anything else a separator), no
 * leading or trailing `_`, at most `max` characters. Streams code point by
 * code point and stops once `max` characters are out, so a long name is not
 * folded past what can be shown (one made only of separators is still walked
 * once, without allocating). (Per-code-point NFKD equals whole-string
 * NFKD here: they differ only in the order of combining marks, which are dropped.)
 */
export function sanitise(s: string, max = MAX_NAME_LENGTH): string {
  let out = '';
  let gap = false;
  for (const ch of s) {
    // ASCII needs no folding (the common case, and the hot one for big catalogues).
    const folded = ch.charCodeAt(0) < 0x80 ? ch : (FOLD[ch] ?? ch.normalize('NFKD'));
    for (const c of folded) {
      if (isAlnum(c)) {
        if (gap && out.length) {
          if (out.length + 2 > max) return out;
          out += '_';
        }
        gap = false;
        out += c;
        if (out.length >= max) return out;
      } else if (c.charCodeAt(0) < 0x80 || !MARK.test(c)) gap = true;
    }
  }
  return out;
}

/**
 * A key unique to the identity (JSON keeps even lone surrogates distinct):
 * used to deduplicate and as the key of assignNames' result.
 */
export function identityKey(id: Identity): string {
  return JSON.stringify([id.server, id.kind, id.kind === 'tool' ? id.tool : '']);
}

/**
 * The bytes hashed: the domain, the kind, the server and the tool name, each
 * as a length (UTF-16 code units, 4 bytes) followed by its UTF-16LE code units,
 * so ("a_b", "c") and ("a", "b_c") differ and every JS string is encoded
 * exactly (lone surrogates included). Pseudo-operations have kinds of their
 * own and an empty tool part, so a tool literally named `read_resource` is another identity.
 */
function encode(id: Identity, round: number): Uint8Array {
  const parts = [DOMAIN, id.kind, id.server, id.kind === 'tool' ? id.tool : ''];
  if (round > 0) parts.push(String(round));
  const bufs: Buffer[] = [];
  for (const p of parts) {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(p.length);
    bufs.push(len, Buffer.from(p, 'utf16le'));
  }
  return Buffer.concat(bufs);
}

/** The first 50 bits of the digest, as 10 lowercase base32 characters. */
function hashOf(id: Identity, round: number, digest: Digest): string {
  const d = digest(encode(id, round));
  if (d.length < 7) throw new RangeError('the digest must return at least 7 bytes');
  let bits = 0;
  let acc = 0;
  let out = '';
  for (let i = 0; out.length < HASH_CHARS;) {
    if (bits < 5) {
      acc = ((acc << 8) | d[i++]!) & 0xffff;
      bits += 8;
    }
    out += BASE32[(acc >> (bits - 5)) & 31];
    bits -= 5;
  }
  return out;
}

/**
 * Builds `mcp_<server>_<operation>_<suffix>` within 64 characters. The two
 * segments share what is left fairly: a segment shorter than its half keeps
 * all of it and lends the rest to the other; when both are long, each gets
 * half (the operation the odd character), so a long server name never eats
 * the operation.
 */
function compose(id: Identity, suffix: string): string {
  const budget = MAX_NAME_LENGTH - PREFIX.length - 2 - suffix.length;
  let s = sanitise(id.server, budget);
  let o = id.kind === 'tool' ? sanitise(id.tool, budget) : id.kind;
  if (s.length + o.length > budget) {
    const half = Math.floor(budget / 2);
    if (s.length <= half) o = o.slice(0, budget - s.length);
    else if (o.length <= budget - half) s = s.slice(0, budget - o.length);
    else {
      s = s.slice(0, half);
      o = o.slice(0, budget - half);
    }
    s = s.replace(/_+$/, '');
    o = o.replace(/_+$/, '');
  }
  return `${PREFIX}${s}_${o}_${suffix}`;
}

/** The identity's name in rehash round `round` (0 is its name everywhere unless a collision is being resolved). */
function nameAt(id: Identity, round: number, digest: Digest): string {
  return compose(id, hashOf(id, round, digest));
}

/** The model-facing name of an identity (its name in any catalogue, barring a collision; see assignNames). */
export function nameOf(id: Identity, digest: Digest = sha256): string {
  return nameAt(id, 0, digest);
}

/** The name of a server's tool, from its raw server and tool names. */
export function toolName(server: string, tool: string, digest: Digest = sha256): string {
  return nameOf({ server, kind: 'tool', tool }, digest);
}

/** The name of a server's read_resource or get_prompt pseudo-operation. */
export function pseudoName(server: string, op: PseudoOperation, digest: Digest = sha256): string {
  return nameOf({ server, kind: op }, digest);
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The order that decides a collision: by server, then kind (`get_prompt`, `read_resource`, `tool`),
 * then tool name, in UTF-16 code-unit order.
 */
export function compareIdentities(a: Identity, b: Identity): number {
  return cmp(a.server, b.server) || cmp(a.kind, b.kind) || cmp(a.kind === 'tool' ? a.tool : '', b.kind === 'tool' ? b.tool : '');
}

export interface AssignOptions {
  digest?: Digest;
}

/**
 * Names for every identity of one catalogue (all servers of a session), as
 * a map from identityKey to name, with no two identities sharing a name.
 * Every identity gets nameOf(id) unless another identity present has the very
 * same name (a 50-bit hash collision with equal segments: practically never).
 * Then the identity that sorts first (compareIdentities) keeps it,
 * and the others are rehashed (the round number joins the hashed encoding),
 * round by round: all of a round's names are claimed before the next round
 * runs, so a rehashed name never takes a name some identity holds in an
 * earlier round. After REHASH_ROUNDS, a counter is appended (`_2`, `_3`, …),
 * which always terminates, even with a digest that returns a constant.
 * Duplicate identities are named once. Deterministic: the same set gives the same names.
 */
export function assignNames(ids: Iterable<Identity>, opts: AssignOptions = {}): Map<string, string> {
  const digest = opts.digest ?? sha256;
  const byKey = new Map<string, Identity>();
  for (const id of ids) byKey.set(identityKey(id), id);
  let pending = [...byKey.keys()].sort((a, b) => compareIdentities(byKey.get(a)!, byKey.get(b)!));
  const taken = new Set<string>();
  const names = new Map<string, string>();
  const claim = (key: string, name: string): boolean => {
    if (taken.has(name)) return false;
    taken.add(name);
    names.set(key, name);
    return true;
  };
  for (let round = 0; round < REHASH_ROUNDS && pending.length; round++) {
    pending = pending.filter((key) => !claim(key, nameAt(byKey.get(key)!, round, digest)));
  }
  for (const key of pending) {
    const id = byKey.get(key)!;
    const hash = hashOf(id, 0, digest);
    for (let n = 2; !claim(key, compose(id, `${hash}_${n}`)); n++);
  }
  return names;
}

/** True when `name` satisfies the portable rule. */
export function isValidName(name: string): boolean {
  return NAME_RULE.test(name);
}
