/**
 * One connection's request params for its era. Legacy requests carry their
 * params as given; a modern one adds the `_meta` every 2026-07-28 request
 * carries (protocol version, client info, client capabilities), which is the
 * same for the connection's whole life: it is built once, not per request
 * (nothing changes a message once it is sent, so every request may share it).
 */
import { modernParams } from '../../protocol/rev2026-07-28/index.ts';
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
    if (era !== 'modern') return legacyParams(params);
    this.#meta ??= this.#envelope();
    // A request's own _meta (a progress token) is merged into a fresh one, the envelope's keys winning, as modernParams does.
    if (params?._meta !== undefined) return { ...params, _meta: { ...(params._meta as Record<string, unknown>), ...this.#meta } };
    if (params === undefined) return (this.#empty ??= { _meta: this.#meta });
    return { ...params, _meta: this.#meta };
  }

  #envelope(): Record<string, unknown> {
    const meta = modernParams(undefined, this.#clientInfo, this.#capabilities)._meta as Record<string, unknown>;
    return this.#level === undefined ? meta : { ...meta, [META_LOG_LEVEL]: this.#level };
  }
}
