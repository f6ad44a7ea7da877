/**
 * Who holds an ACP session now: one attachment per session (an `albedo acp`
 * adapter), proved by a token the daemon hands out once and keeps only as a
 * SHA-256 digest, compared in constant time. The attachment lives as long as
 * its lease: renewed every `renewMs`, gone `leaseMs` after the last renewal
 * (an adapter killed without a word frees its sessions). An expired lease
 * still renews while nobody took the session meanwhile; once another attach
 * took it, the old token is refused (ALBEDO_ATTACHMENT_LOST). Everything here
 * is memory only: a daemon restart forgets every attachment.
 *
 * The session gateway's tokens (`/mcp/sessions/{id}` for an agent that speaks
 * MCP over HTTP) are kept the same way, each with the attachment it was handed
 * out with: they hold across that attachment's renewals and go with it — when
 * it is released or freed, when another attach replaces it (a takeover), when
 * the session closes. A former agent's token, in its logs say, opens nothing.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { AlbedoError } from '../../protocol/errors.ts';

/** The lease of an attachment: 20 s after the last renewal. */
export const LEASE_MS = 20_000;
/** The shortest lease `ALBEDO_ACP_LEASE_MS` may set (tests): a renewal every 50 ms. */
const MIN_LEASE_MS = 200;

/** `ALBEDO_ACP_LEASE_MS` (200 ms to 20 s; anything else is ignored), for tests; renewals at a quarter of it. */
export function leaseTimes(env: NodeJS.ProcessEnv = process.env): { leaseMs: number; renewMs: number } {
  const v = Number(env.ALBEDO_ACP_LEASE_MS);
  const leaseMs = Number.isInteger(v) && v >= MIN_LEASE_MS && v <= LEASE_MS ? v : LEASE_MS;
  return { leaseMs, renewMs: Math.floor(leaseMs / 4) };
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** A fresh attachment token: `albatt_` and 32 random bytes, base64url. */
export const newAttachmentToken = (): string => `albatt_${randomBytes(32).toString('base64url')}`;
/** A fresh session gateway token. */
export const newGatewayToken = (): string => `albsgw_${randomBytes(32).toString('base64url')}`;

/** Whether `given` hashes to `kept`, in time that does not depend on where they differ. */
export function digestMatches(given: string, kept: Buffer): boolean {
  return timingSafeEqual(digest(given), kept);
}

const lost = (): AlbedoError =>
  new AlbedoError(
    'ALBEDO_ATTACHMENT_LOST',
    'this attachment is no longer the session’s (its lease expired and it was taken, or released)',
    {
      outcome: 'not_run',
    },
  );

interface Held {
  digest: Buffer;
  expires: number;
  /** The session gateway's tokens handed out with this attachment (digests). */
  gateway: Buffer[];
}

export class Attachments {
  readonly leaseMs: number;
  readonly renewMs: number;
  #now: () => number;
  #held = new Map<string, Held>();

  constructor(o: { leaseMs: number; renewMs: number; now?: () => number }) {
    this.leaseMs = o.leaseMs;
    this.renewMs = o.renewMs;
    this.#now = o.now ?? Date.now;
  }

  /** Whether session `id` has a live attachment now. */
  attached(id: string): boolean {
    const h = this.#held.get(id);
    return !!h && h.expires > this.#now();
  }

  /**
   * Takes session `id` for a new attachment: its token. ALBEDO_ATTACHMENT_HELD while another's lease is live. An expired
   * attachment it replaces goes, with its gateway tokens.
   */
  attach(id: string): string {
    if (this.attached(id)) {
      throw new AlbedoError('ALBEDO_ATTACHMENT_HELD', 'another adapter is attached to this session (its lease is live)', {
        outcome: 'not_run',
      });
    }
    const token = newAttachmentToken();
    this.#held.set(id, { digest: digest(token), expires: this.#now() + this.leaseMs, gateway: [] });
    return token;
  }

  /** Checks that `token` is session `id`'s attachment (ALBEDO_ATTACHMENT_LOST otherwise). */
  check(id: string, token: string | undefined): void {
    const h = this.#held.get(id);
    if (!h || token === undefined || !digestMatches(token, h.digest)) throw lost();
  }

  /** Renews the lease of `token` on session `id`. */
  renew(id: string, token: string | undefined): void {
    this.check(id, token);
    this.#held.get(id)!.expires = this.#now() + this.leaseMs;
  }

  /** Releases the attachment `token` holds, its gateway tokens with it (the session stays, detached). */
  release(id: string, token: string | undefined): void {
    this.check(id, token);
    this.#held.delete(id);
  }

  /** Releases the attachment `token` holds, if it still holds session `id` (an attach whose publication failed). */
  free(id: string, token: string): void {
    const h = this.#held.get(id);
    if (h && digestMatches(token, h.digest)) this.#held.delete(id);
  }

  /** A new gateway token for session `id`, valid while the attachment `token` holds it (each agent gets its own). */
  gatewayToken(id: string, token: string): string {
    this.check(id, token);
    const list = this.#held.get(id)!.gateway;
    const gw = newGatewayToken();
    list.push(digest(gw));
    // A bound on what a long-held attachment keeps: the oldest agents' tokens go first.
    if (list.length > 32) list.shift();
    return gw;
  }

  /** Whether `token` is one of the gateway tokens of session `id`'s current attachment. */
  gatewayMatches(id: string, token: string): boolean {
    const list = this.#held.get(id)?.gateway;
    if (!list) return false;
    let ok = false;
    for (const d of list) ok = digestMatches(token, d) || ok;
    return ok;
  }

  /** Session `id` closed: its attachment and gateway tokens with it. */
  drop(id: string): void {
    this.#held.delete(id);
  }
}
