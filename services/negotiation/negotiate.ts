/**
 * Era detection over stdio, as docs/design.md ("Protocol eras") and the
 * 2026-07-28 backward compatibility rules (basic/versioning,
 * basic/transports/stdio) say:
 *
 *  1. Send `server/discover` as 2026-07-28. A DiscoverResult naming it, or a
 *     -32022 whose `supported` names it, makes the server modern. A modern
 *     server naming only versions Albedo opens with `initialize` gets
 *     `initialize`; one naming neither is refused, listing both sides.
 *  2. Any other answer means legacy: `initialize` offering 2025-11-25,
 *     accepting the four legacy versions, then `notifications/initialized`.
 *  3. A server that ignores the unknown method gets `initialize` after one
 *     second without an answer; the probe stays open and whichever request is
 *     answered first as its era expects decides.
 *
 * A cached legacy verdict shortens this: `initialize` goes first, with no
 * `server/discover` and no one-second wait; when that assumption fails (an
 * error, a version no longer accepted), the full probe runs. A cached modern
 * verdict changes nothing on the wire — `server/discover` is needed anyway —
 * so a server that went back to legacy is still found by the fallback.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import { ErrorCode } from '../../protocol/jsonrpc.ts';
import { MODERN_VERSION, MODERN_VERSIONS, LEGACY_ACCEPTED, LEGACY_OFFERED, isLegacyVersion, type Era } from '../../protocol/versions.ts';
import {
  discoverResultSchema,
  modernParams,
  serverInfoOf,
  unsupportedVersionDataSchema,
  DISCOVER_METHOD,
} from '../../protocol/rev2026-07-28/index.ts';
import { initializeParams, initializeResultSchema, INITIALIZED_NOTIFICATION } from '../../protocol/rev2025-11-25/index.ts';
import type { Implementation } from '../../protocol/mcp.ts';
import type { ConnectionInfo } from '../../protocol/services/transport.ts';
import { wireCodeOf, type Requester } from '../../protocol/requester.ts';
import { describeZodError } from '../../protocol/config.ts';
import { redactThenCut, type Secrets } from '../../protocol/redact.ts';

export interface NegotiateOptions {
  clientInfo: Implementation;
  /** Overall budget for the handshake. */
  timeoutMs: number;
  /** How long a silent server gets before `initialize` follows (1 s). */
  silentMs?: number;
  cached?: { era: Era; protocolVersion: string } | null;
  /** Called with a description of why no answer came, for the timeout error. */
  explainSilence?: () => string;
  /** The client capabilities to declare (from the embedder's handlers); none by default. */
  capabilities?: Record<string, unknown>;
  /** Told the legacy version the server chose, before `notifications/initialized` is sent (HTTP sends it as a header). */
  onLegacyVersion?: (version: string) => void;
  /** Sends `notifications/initialized` and waits until the server accepted it (HTTP); default: fire and forget. */
  sendInitialized?: () => Promise<void>;
  /** The connection's secrets: cut out of the server's versions before they are cut short into a message. */
  redactor?: Secrets;
}

/** At most this many of the server's versions are named in a message, each at most VERSION_CHARS long. */
const MAX_VERSIONS = 20;
const VERSION_CHARS = 40;
/** HTTP statuses by which a server says "not now" rather than anything about the method it was asked. */
const NOT_NOW = new Set([408, 429, 502, 503, 504]);

/** The server's versions for a message and its data: a few, each redacted, then cut (protocol/redact.ts). */
function versionsOf(named: readonly unknown[], redactor: Secrets | undefined): string[] {
  return named.slice(0, MAX_VERSIONS).map((v) => redactThenCut(String(v), redactor ?? [], { keep: 'head', max: VERSION_CHARS }));
}

/** Negotiates the era on `peer`. Rejects with ALBEDO_ERA_REFUSED, ALBEDO_HANDSHAKE_FAILED or ALBEDO_TIMEOUT. */
export async function negotiate(peer: Requester, opts: NegotiateOptions): Promise<ConnectionInfo> {
  if (opts.cached?.era === 'legacy') {
    try {
      return { ...(await initialize(peer, opts, opts.timeoutMs)), detection: 'cached' };
    } catch (err) {
      if (AlbedoError.is(err) && err.code === 'ALBEDO_SERVER_EXITED') throw err;
      // The cached assumption failed: probe afresh.
    }
  }
  const info = await probe(peer, opts);
  return { ...info, detection: opts.cached?.era === 'modern' && info.era === 'modern' ? 'cached' : 'probe' };
}

type Verdict = Omit<ConnectionInfo, 'detection'>;

function probe(peer: Requester, opts: NegotiateOptions): Promise<Verdict> {
  const silentMs = opts.silentMs ?? 1_000;
  return new Promise<Verdict>((resolve, reject) => {
    let settled = false;
    let initStarted = false;
    let discoverFailure: AlbedoError | undefined;
    let initFailure: AlbedoError | undefined;
    const ac = new AbortController();

    const done = (err: unknown, value?: Verdict): void => {
      if (settled) return;
      settled = true;
      clearTimeout(silence);
      clearTimeout(overall);
      ac.abort();
      if (err) reject(err);
      else resolve(value!);
    };
    const bothFailed = (): void => {
      if (discoverFailure && initStarted && initFailure) {
        const why = `the server answered neither ${DISCOVER_METHOD} (${discoverFailure.message}) nor initialize (${initFailure.message})`;
        done(
          initFailure.code === 'ALBEDO_ERA_REFUSED' ? initFailure : new AlbedoError('ALBEDO_HANDSHAKE_FAILED', why, { outcome: 'not_run' }),
        );
      }
    };
    const startInit = (): void => {
      if (initStarted || settled) return;
      initStarted = true;
      initialize(peer, opts, opts.timeoutMs, ac.signal).then(
        (v) => done(null, v),
        (err) => {
          initFailure = toAlbedo(err);
          if (initFailure.code === 'ALBEDO_SERVER_EXITED' || initFailure.code === 'ALBEDO_FRAME_TOO_LARGE') return done(initFailure);
          bothFailed();
        },
      );
    };

    const silence = setTimeout(startInit, silentMs);
    const overall = setTimeout(() => {
      const hint = opts.explainSilence?.() ?? '';
      const why = `the server answered neither ${DISCOVER_METHOD} nor initialize within ${opts.timeoutMs} ms${hint ? `; ${hint}` : ''}`;
      done(new AlbedoError('ALBEDO_TIMEOUT', why, { outcome: 'not_run', data: { timeoutMs: opts.timeoutMs } }));
    }, opts.timeoutMs);

    peer
      .request(DISCOVER_METHOD, modernParams(undefined, opts.clientInfo, opts.capabilities), {
        timeoutMs: opts.timeoutMs,
        signal: ac.signal,
        cancelOnTimeout: false,
      })
      .then(
        (raw) => {
          if (settled) return;
          const parsed = discoverResultSchema.safeParse(raw);
          if (!parsed.success) {
            discoverFailure = new AlbedoError(
              'ALBEDO_INVALID_RESPONSE',
              `${DISCOVER_METHOD} returned a malformed result: ${describeZodError(parsed.error)}`,
            );
            startInit();
            return;
          }
          const r = parsed.data;
          if (r.supportedVersions.includes(MODERN_VERSION)) {
            return done(null, {
              era: 'modern',
              protocolVersion: MODERN_VERSION,
              serverInfo: serverInfoOf(r) ?? null,
              capabilities: r.capabilities,
              instructions: r.instructions ?? null,
            });
          }
          decideBySupported(r.supportedVersions);
        },
        (err) => {
          if (settled) return;
          const e = toAlbedo(err);
          if (e.code === 'ALBEDO_SERVER_EXITED' || e.code === 'ALBEDO_FRAME_TOO_LARGE') return done(e);
          if (wireCodeOf(e) === ErrorCode.UnsupportedProtocolVersion) {
            const data = unsupportedVersionDataSchema.safeParse((e.data as { data?: unknown }).data);
            if (data.success) {
              if (data.data.supported.includes(MODERN_VERSION)) {
                // Modern by the rule (docs/design.md, "Protocol eras"), though it refused this request:
                // ask once more for its DiscoverResult.
                peer
                  .request(DISCOVER_METHOD, modernParams(undefined, opts.clientInfo, opts.capabilities), {
                    timeoutMs: opts.timeoutMs,
                    signal: ac.signal,
                    cancelOnTimeout: false,
                  })
                  .then(
                    (again) => {
                      const r = discoverResultSchema.safeParse(again);
                      if (r.success && r.data.supportedVersions.includes(MODERN_VERSION)) {
                        done(null, {
                          era: 'modern',
                          protocolVersion: MODERN_VERSION,
                          serverInfo: serverInfoOf(r.data) ?? null,
                          capabilities: r.data.capabilities,
                          instructions: r.data.instructions ?? null,
                        });
                      } else {
                        const why = `the server lists ${MODERN_VERSION} as supported but did not answer ${DISCOVER_METHOD} with it`;
                        done(new AlbedoError('ALBEDO_HANDSHAKE_FAILED', why, { outcome: 'not_run' }));
                      }
                    },
                    (again) =>
                      done(
                        new AlbedoError(
                          'ALBEDO_HANDSHAKE_FAILED',
                          `the server lists ${MODERN_VERSION} as supported but refused ${DISCOVER_METHOD}: ${toAlbedo(again).message}`,
                          { outcome: 'not_run' },
                        ),
                      ),
                  );
                return;
              }
              return decideBySupported(data.data.supported);
            }
          }
          discoverFailure = e;
          startInit();
          bothFailed();
        },
      );

    /** A modern server that named versions: initialize if one is legacy, else refuse. */
    function decideBySupported(supported: string[]): void {
      if (supported.some((v) => LEGACY_ACCEPTED.includes(v))) {
        const more = supported.length > MAX_VERSIONS ? ', …' : '';
        discoverFailure = new AlbedoError(
          'ALBEDO_HANDSHAKE_FAILED',
          `the server supports only ${versionsOf(supported, opts.redactor).join(', ')}${more}`,
        );
        startInit();
        return;
      }
      done(refused(supported, opts.redactor));
    }
  });
}

function refused(named: string[], redactor: Secrets | undefined): AlbedoError {
  // The server's list is its data: a few short entries are enough to say what it speaks.
  const serverVersions = versionsOf(named, redactor);
  const ours = [...MODERN_VERSIONS, ...LEGACY_ACCEPTED];
  const why =
    `no protocol version in common: the server supports ${serverVersions.join(', ') || '(none)'}; ` + `Albedo supports ${ours.join(', ')}`;
  return new AlbedoError('ALBEDO_ERA_REFUSED', why, { outcome: 'not_run', data: { server: serverVersions, albedo: ours } });
}

async function initialize(peer: Requester, opts: NegotiateOptions, timeoutMs: number, signal?: AbortSignal): Promise<Verdict> {
  const raw = await peer.request('initialize', initializeParams(opts.clientInfo, opts.capabilities), {
    timeoutMs,
    signal,
    cancelOnTimeout: false,
  });
  const parsed = initializeResultSchema.safeParse(raw);
  if (!parsed.success) {
    throw new AlbedoError('ALBEDO_INVALID_RESPONSE', `initialize returned a malformed result: ${describeZodError(parsed.error)}`, {
      outcome: 'not_run',
    });
  }
  const r = parsed.data;
  if (!isLegacyVersion(r.protocolVersion)) throw refused([r.protocolVersion], opts.redactor);
  opts.onLegacyVersion?.(r.protocolVersion);
  if (opts.sendInitialized) {
    try {
      await opts.sendInitialized();
    } catch (err) {
      const why = `initialize succeeded but ${INITIALIZED_NOTIFICATION} was not accepted: ${toAlbedo(err).message}`;
      throw new AlbedoError('ALBEDO_HANDSHAKE_FAILED', why, { outcome: 'not_run', data: toAlbedo(err).data });
    }
  } else peer.notify(INITIALIZED_NOTIFICATION);
  return {
    era: 'legacy',
    protocolVersion: r.protocolVersion,
    serverInfo: r.serverInfo,
    capabilities: r.capabilities,
    instructions: r.instructions ?? null,
  };
}

/** What HTTP negotiation needs of the link: which headers to send. */
export interface EraHeaders {
  setEra(era: Era, protocolVersion?: string): void;
  setProtocolVersion(v: string): void;
  notifyAccepted(method: string): Promise<void>;
}

/**
 * Era detection over Streamable HTTP (docs/design.md, "Protocol eras"): a
 * modern first request (`server/discover` with the 2026-07-28 headers). A
 * DiscoverResult naming 2026-07-28 makes the server modern. A -32022 or a
 * DiscoverResult naming only legacy versions we share goes to `initialize`;
 * naming none we share is refused. Any non-2xx without a modern error in its
 * body, or a JSON-RPC error other than -32020/-32021/-32022, means legacy.
 * HTTP always answers, so there is no silent wait. A cached legacy verdict
 * starts with `initialize` and probes afresh when that fails.
 */
export async function negotiateHttp(peer: Requester, link: EraHeaders, opts: NegotiateOptions): Promise<ConnectionInfo> {
  // The legacy handshake over HTTP: the negotiated version goes on every later request,
  // and notifications/initialized must be accepted before any.
  const legacy = async (detection: 'cached' | 'probe' = 'probe'): Promise<ConnectionInfo> => {
    link.setEra('legacy');
    const info = await initialize(
      peer,
      {
        ...opts,
        onLegacyVersion: (v) => link.setProtocolVersion(v),
        sendInitialized: () => link.notifyAccepted(INITIALIZED_NOTIFICATION),
      },
      opts.timeoutMs,
    );
    return { ...info, detection };
  };
  if (opts.cached?.era === 'legacy') {
    try {
      return await legacy('cached');
    } catch (err) {
      if (!legacyMeansProbe(err)) throw err;
    }
  }
  link.setEra('modern');
  const detection = opts.cached?.era === 'modern' ? 'cached' : 'probe';
  let raw: Record<string, unknown>;
  try {
    raw = await peer.request(DISCOVER_METHOD, modernParams(undefined, opts.clientInfo, opts.capabilities), {
      timeoutMs: opts.timeoutMs,
      cancelOnTimeout: true,
    });
  } catch (err) {
    const e = toAlbedo(err);
    const code = wireCodeOf(e);
    if (code === ErrorCode.UnsupportedProtocolVersion) {
      const data = unsupportedVersionDataSchema.safeParse((e.data as { data?: unknown }).data);
      if (!data.success) {
        const why = `the server refused protocol version ${MODERN_VERSION} without saying which versions it supports`;
        throw new AlbedoError('ALBEDO_HANDSHAKE_FAILED', why, { outcome: 'not_run' });
      }
      if (data.data.supported.includes(MODERN_VERSION)) {
        // Modern by the rule (docs/design.md, "Protocol eras"), though it refused this request: ask once more, on a new id.
        return discoverAgain(peer, opts, detection);
      }
      if (data.data.supported.some((v) => LEGACY_ACCEPTED.includes(v))) return legacy();
      throw refused(data.data.supported, opts.redactor);
    }
    if (code === ErrorCode.HeaderMismatch || code === ErrorCode.MissingRequiredClientCapability) {
      const why = `the server speaks ${MODERN_VERSION} but refused ${DISCOVER_METHOD}: ${e.message}`;
      throw new AlbedoError('ALBEDO_HANDSHAKE_FAILED', why, { outcome: 'not_run', data: e.data });
    }
    // A server that says "not now" (408, 429, 502, 503, 504) has said nothing of its era: the failure is the
    // attempt's, for the connect retry to try again, not a legacy verdict (which would then be cached). A 500 and
    // the like stay legacy: an older server may well fail on a method it does not know.
    if (e.code === 'ALBEDO_HTTP_ERROR' && NOT_NOW.has((e.data as { status?: unknown } | undefined)?.status as number)) throw e;
    // Any other JSON-RPC error, or an HTTP error without one, is a legacy server.
    if (code !== undefined || e.code === 'ALBEDO_HTTP_ERROR') return legacy();
    throw e;
  }
  const parsed = discoverResultSchema.safeParse(raw);
  // Not a DiscoverResult (a legacy server that answers every method with {}, say): any other answer means legacy.
  if (!parsed.success) return legacy();
  const r = parsed.data;
  if (r.supportedVersions.includes(MODERN_VERSION)) {
    return {
      era: 'modern',
      protocolVersion: MODERN_VERSION,
      serverInfo: serverInfoOf(r) ?? null,
      capabilities: r.capabilities,
      instructions: r.instructions ?? null,
      detection,
    };
  }
  if (r.supportedVersions.some((v) => LEGACY_ACCEPTED.includes(v))) return legacy();
  throw refused(r.supportedVersions, opts.redactor);
}

async function discoverAgain(peer: Requester, opts: NegotiateOptions, detection: ConnectionInfo['detection']): Promise<ConnectionInfo> {
  let again: Record<string, unknown>;
  try {
    again = await peer.request(DISCOVER_METHOD, modernParams(undefined, opts.clientInfo, opts.capabilities), {
      timeoutMs: opts.timeoutMs,
      cancelOnTimeout: true,
    });
  } catch (err) {
    const why = `the server lists ${MODERN_VERSION} as supported but refused ${DISCOVER_METHOD}: ${toAlbedo(err).message}`;
    throw new AlbedoError('ALBEDO_HANDSHAKE_FAILED', why, { outcome: 'not_run' });
  }
  const r = discoverResultSchema.safeParse(again);
  if (!r.success || !r.data.supportedVersions.includes(MODERN_VERSION)) {
    const why = `the server lists ${MODERN_VERSION} as supported but did not answer ${DISCOVER_METHOD} with it`;
    throw new AlbedoError('ALBEDO_HANDSHAKE_FAILED', why, { outcome: 'not_run' });
  }
  return {
    era: 'modern',
    protocolVersion: MODERN_VERSION,
    serverInfo: serverInfoOf(r.data) ?? null,
    capabilities: r.data.capabilities,
    instructions: r.data.instructions ?? null,
    detection,
  };
}

/** A cached legacy verdict that failed: probe afresh unless the server cannot be reached at all. */
function legacyMeansProbe(err: unknown): boolean {
  const e = toAlbedo(err);
  return !(e.code === 'ALBEDO_CONNECTION_CLOSED' && e.outcome === 'not_run');
}

function toAlbedo(err: unknown): AlbedoError {
  return AlbedoError.is(err) ? err : new AlbedoError('ALBEDO_INTERNAL', String((err as Error)?.message ?? err));
}

export { LEGACY_OFFERED };
