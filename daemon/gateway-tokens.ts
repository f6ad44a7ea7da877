/**
 * The gateways' own bearer tokens (`$ALBEDO_HOME/gateway-tokens.json`): a
 * token opens its one gateway (daemon/guard.ts asks `verify` on every
 * request to `/mcp/gateways/{name}`) and nothing else, so a client given a
 * gateway never holds the daemon's token.
 *
 * A token is `albgw_` and 32 random bytes in base64url; only its SHA-256 is
 * stored, compared in constant time. The token itself exists once, in the
 * answer to `mint`: never in the file, a log, an error or an event. Each
 * has a short random id to revoke it by.
 *
 * The file is read once, at start, and kept in memory; it is written whole
 * (platform/atomic-file.ts, 0600) on every change. One daemon runs per home
 * and is its only writer; the file is read again only when its size or
 * mtime moved (someone edited or removed it by hand: removed, no token
 * opens anything). A file that cannot be read as tokens is refused — at
 * start the daemon does not start (it says what to do), and later every
 * token is refused and nothing is written over it — rather than taken as
 * "no tokens", which would silently drop them and let a write replace them.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../platform/atomic-file.ts';
import { AlbedoError } from '../protocol/errors.ts';
import type { SettingsView } from '../protocol/services/settings.ts';

export const TOKENS_FILE = 'gateway-tokens.json';
export const TOKEN_PREFIX = 'albgw_';

export interface TokenInfo {
  id: string;
  gateway: string;
  /** When it was minted (ms since the epoch). */
  created: number;
}

interface Stored extends TokenInfo {
  /** Hex SHA-256 of the token. */
  sha256: string;
}

const digest = (token: string): Buffer => createHash('sha256').update(token).digest();

function isStored(v: unknown): v is Stored {
  const r = v as Stored;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof r.id === 'string' &&
    /^[0-9a-f]{4,32}$/.test(r.id) &&
    typeof r.gateway === 'string' &&
    typeof r.created === 'number' &&
    typeof r.sha256 === 'string' &&
    /^[0-9a-f]{64}$/.test(r.sha256)
  );
}

export class GatewayTokens {
  readonly file: string;
  #tokens: Stored[] = [];
  /** What the file was when last read or written (size and mtime): another means a hand edit. */
  #seen = '';
  /** Why the file on disk cannot be read now (after start): every token is refused and nothing is written until it is fixed. */
  #broken: string | null = null;

  /** `at`: the home, as the daemon holds it. Throws ALBEDO_INVALID_CONFIG when the file is there but not valid. */
  constructor(at: string) {
    this.file = path.join(at, TOKENS_FILE);
    this.#seen = this.#stamp();
    const why = this.#load();
    if (why) {
      throw new AlbedoError(
        'ALBEDO_INVALID_CONFIG',
        `${TOKENS_FILE} in the home is not valid (${why}); the daemon does not start over it, so no gateway token is lost: ` +
          `move it aside (every gateway token in it stops working; mint new ones with albedo gateway token NAME) and start again`,
        { outcome: 'not_run' },
      );
    }
  }

  #stamp(): string {
    try {
      const st = statSync(this.file);
      return `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return 'absent';
    }
  }

  /** Reads the file into memory; the reason it cannot, or null. Absent: no tokens. */
  #load(): string | null {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return `cannot read it: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`;
      this.#tokens = [];
      return null;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      return 'not JSON';
    }
    const list = (doc as { tokens?: unknown })?.tokens;
    if (!Array.isArray(list) || !list.every(isStored)) return 'expected { "tokens": [{ id, gateway, created, sha256 }] }';
    this.#tokens = list.map(({ id, gateway, created, sha256 }) => ({ id, gateway, created, sha256 }));
    return null;
  }

  /** The tokens as the file holds them now: read again when it changed on disk since. */
  #current(): Stored[] {
    const stamp = this.#stamp();
    if (stamp !== this.#seen) {
      // Taken before the read: a change while it reads is seen at the next call.
      this.#seen = stamp;
      this.#broken = this.#load();
    }
    return this.#broken ? [] : this.#tokens;
  }

  /**
   * Throws ALBEDO_INVALID_CONFIG while the file on disk cannot be read as tokens. A change (a mint, a revoke) is refused
   * then: a revoke that answered "none" would leave the tokens in the file, to open their gateway once it is put back.
   */
  usable(): void {
    this.#current();
    if (this.#broken) {
      throw new AlbedoError('ALBEDO_INVALID_CONFIG', `${TOKENS_FILE} in the home was made invalid (${this.#broken}); fix or remove it`, {
        outcome: 'not_run',
      });
    }
  }

  #save(next: Stored[]): void {
    this.usable();
    writeFileAtomic(this.file, `${JSON.stringify({ tokens: next }, null, 2)}\n`, { mode: 0o600 });
    this.#tokens = next;
    this.#seen = this.#stamp();
  }

  /** A new token for `gateway`: the answer is the only place the token ever appears. */
  mint(gateway: string): { id: string; token: string; created: number } {
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const cur = this.#current();
    let id: string;
    do id = randomBytes(4).toString('hex');
    while (cur.some((s) => s.id === id));
    const created = Date.now();
    this.#save([...cur, { id, gateway, created, sha256: digest(token).toString('hex') }]);
    return { id, token, created };
  }

  /** Revokes `gateway`'s token `id`, or (no id) every token of it; how many went. Throws while the file is broken (usable). */
  revoke(gateway: string, id?: string): number {
    this.usable();
    const cur = this.#current();
    const next = cur.filter((s) => s.gateway !== gateway || (id !== undefined && s.id !== id));
    if (next.length !== cur.length) {
      this.#save(next);
      this.onRevoked?.(gateway);
    }
    return cur.length - next.length;
  }

  /**
   * Told after a token of `gateway` was revoked: the daemon ends that gateway's open connections (an HTTP stream, a
   * stdio socket), since the guard checks a token per request and a connection opened with it would outlive it.
   */
  onRevoked: ((gateway: string) => void) | undefined;

  /** The tokens (of `gateway`, or all), never the token itself nor its digest. */
  list(gateway?: string): TokenInfo[] {
    return this.#current()
      .filter((s) => gateway === undefined || s.gateway === gateway)
      .map(({ id, gateway: g, created }) => ({ id, gateway: g, created }));
  }

  /** Whether `token` is one of `gateway`'s: every one of its tokens compared, each in constant time. */
  verify(gateway: string, token: string): boolean {
    if (!token.startsWith(TOKEN_PREFIX)) return false;
    const given = digest(token);
    let ok = false;
    for (const s of this.#current()) {
      if (s.gateway !== gateway) continue;
      if (timingSafeEqual(given, Buffer.from(s.sha256, 'hex'))) ok = true;
    }
    return ok;
  }
}

/**
 * Revokes the tokens of every gateway `view` (the settings in force) does not define: a gateway removed by hand, or
 * while the daemon was down, takes its tokens with it, since one of the same name later is another gateway. Nothing
 * while the settings file is broken: its gateways are then unknown (at start, none are in force at all), and taking
 * that for "every gateway removed" would revoke every token over a typo. Answers the gateways whose tokens went.
 */
export function pruneTokens(tokens: Pick<GatewayTokens, 'list' | 'revoke'>, view: Pick<SettingsView, 'gateways' | 'invalid'>): string[] {
  if (view.invalid) return [];
  const gone = [...new Set(tokens.list().map((x) => x.gateway))].filter((name) => !Object.hasOwn(view.gateways, name));
  for (const name of gone) tokens.revoke(name);
  return gone;
}
