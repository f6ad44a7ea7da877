/**
 * One connection's request params for its era. Legacy requests carry their
 * params as given; a modern one adds the `_meta` every 2026-07-28 request
 * carries (protocol version, client info, client capabilities), which is the
 * same for the connection's whole life: it is built once, not per request
 * (nothing changes a message once it is sent, so every request may share it).
 */
import { META_CLIENT_CAPABILITIES, modernParams } from '../../protocol/rev2026-07-28/index.ts';
import { legacyParams } from '../../protocol/rev2025-11-25/index.ts';
import type { Implementation } from '../../protocol/mcp.ts';
import type { LoggingLevel } from '../../protocol/services/transport.ts';

/** The envelope key of the log level a modern request asks for (2026-07-28 has no logging/setLevel). */
export const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel';

export class EraParams {
  #clientInfo: Implementation;
  #capabilities: Record<string, unknown>;
  #meta: Record<string, unknown> | undefined;
  /** The params of a modern request that has none of its own. */
  #empty: Record<string, unknown> | undefined;

  constructor(clientInfo: Implementation, capabilities: Record<string, unknown>) {
    this.#clientInfo = clientInfo;
    this.#capabilities = capabilities;
  }

  /**
   * A modern connection's `logging/setLevel`: every later request's envelope asks for `level`, so a
   * server logs (within that request) at it and above.
   */
  set logLevel(level: LoggingLevel) {
    this.#level = level;
    this.#meta = undefined;
    this.#empty = undefined;
  }
  #level: LoggingLevel | undefined;

  /** What modernParams or legacyParams would return for `params` (with the log level asked for, if any). */
  of(era: 'modern' | 'legacy', params: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
    const own = params?._meta as Record<string, unknown> | undefined;
    if (era !== 'modern') {
      // A request's own capabilities are a 2026-07-28 envelope key: a 2025-era server is not sent it.
      if (own === undefined || !Object.hasOwn(own, META_CLIENT_CAPABILITIES)) return legacyParams(params);
      const { [META_CLIENT_CAPABILITIES]: _caps, ...rest } = own;
      return legacyParams(Object.keys(rest).length ? { ...params, _meta: rest } : { ...params, _meta: undefined });
    }
    this.#meta ??= this.#envelope();
    // A request's own _meta (a progress token) is merged into a fresh one, the envelope's keys winning, as modernParams
    // does — but for the request's own capabilities, which may only narrow the connection's.
    if (own !== undefined) {
      const merged = { ...own, ...this.#meta };
      if (Object.hasOwn(own, META_CLIENT_CAPABILITIES)) merged[META_CLIENT_CAPABILITIES] = this.narrowed(own[META_CLIENT_CAPABILITIES]);
      return { ...params, _meta: merged };
    }
    if (params === undefined) return (this.#empty ??= { _meta: this.#meta });
    return { ...params, _meta: this.#meta };
  }

  /** `caps` kept to what the connection declared (a request never claims more than its connection can answer). */
  narrowed(caps: unknown): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    if (caps && typeof caps === 'object') for (const [k, v] of Object.entries(caps)) if (Object.hasOwn(this.#capabilities, k)) out[k] = v;
    return out;
  }

  #envelope(): Record<string, unknown> {
    const meta = modernParams(undefined, this.#clientInfo, this.#capabilities)._meta as Record<string, unknown>;
    return this.#level === undefined ? meta : { ...meta, [META_LOG_LEVEL]: this.#level };
  }
}
