/**
 * OAuth on the request path of one HTTP link (in the transport worker):
 * which Authorization (and DPoP proof) each request carries, and what a
 * 401/403 means. Tokens come from creds.json; one near expiry is refreshed
 * first, single-flight across processes (the store's lock on that one
 * record, re-reading the record after taking it and adopting a token another
 * process already rotated; other servers' records stay writable). A refused refresh marks the server needs_sign_in; a 403
 * insufficient_scope keeps the token and records the scope union as a
 * step-up. Non-interactive grants (client credentials, jwt-bearer,
 * enterprise) get a new token here without asking anyone.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import type { ResolvedAuth } from '../../protocol/config.ts';
import { authChallenge, scopeUnion, scopeCovers } from '../../protocol/oauth.ts';
import { credsStore, type CredsStore, type OAuthRecord, type TokenRecord } from './store.ts';
import {
  discover,
  dpopKeyFrom,
  dpopProof,
  isTooLarge,
  nonInteractiveGrant,
  refresh,
  refreshDue,
  newDpopKey,
  wantsDpop,
  signInFailed,
  storedDiscovery,
  type FlowContext,
} from './flow.ts';

export interface ChallengeInput {
  status: number;
  wwwAuthenticate: string | string[] | undefined;
  dpopNonce: string | undefined;
  /** The access token the refused request carried, if any. */
  sentToken: string | undefined;
  /** This request's own state: set once a challenge renewed (or adopted) its token, so a refused renewal is not renewed again. */
  request: { renewed: boolean };
}

export class LinkAuth {
  readonly auth: ResolvedAuth;
  readonly serverUrl: string;
  readonly store: CredsStore;
  #rec: OAuthRecord | undefined;
  #loaded: string | undefined;
  #refreshing: Promise<void> | undefined;
  #acquiring: Promise<void> | undefined;
  /** The resource server's DPoP nonce (RFC 9449 §9). */
  #rsNonce: string | undefined;

  constructor(auth: ResolvedAuth, serverUrl: string) {
    this.auth = auth;
    this.serverUrl = serverUrl;
    this.store = credsStore(auth.credsPath);
  }

  get #ctx(): FlowContext {
    return { auth: this.auth, serverUrl: this.serverUrl, store: this.store };
  }

  get interactive(): boolean {
    return this.auth.oauth.grant === 'authorization_code';
  }

  /** The record, re-read when the store changed since (a sign-in, another process's refresh). */
  async #load(force = false): Promise<OAuthRecord | undefined> {
    const stamp = this.store.stamp();
    if (force || this.#loaded !== stamp) {
      this.#rec = await this.store.get(this.auth.name, this.serverUrl);
      this.#loaded = stamp;
    }
    return this.#rec;
  }

  /**
   * The secrets of the record in use — its access and refresh tokens and its client's secret — for the
   * link's redactor (protocol/redact.ts): a server that echoes one must not put it in a message.
   */
  get secrets(): (string | undefined)[] {
    const r = this.#rec;
    return [r?.tokens?.accessToken, r?.tokens?.refreshToken, r?.client?.clientSecret];
  }

  /** Headers for one request: Authorization (Bearer or DPoP) and a fresh DPoP proof; none without a token. */
  async headers(htm: string, url: URL): Promise<{ headers: Record<string, string>; token: string | undefined }> {
    let rec = await this.#load();
    let t = rec?.tokens;
    if (t && refreshDue(t)) {
      if (t.refreshToken) {
        await this.#refreshOnce(t.accessToken).catch(() => {});
        rec = this.#rec;
        t = rec?.tokens;
      } else if (!this.interactive) {
        await this.#acquireOnce(undefined).catch(() => {});
        rec = this.#rec;
        t = rec?.tokens;
      }
    }
    if (!t) return { headers: {}, token: undefined };
    if (t.tokenType === 'DPoP' && rec?.dpopKey) {
      const key = await dpopKeyFrom(rec.dpopKey);
      const proof = await dpopProof(key, htm, url.toString(), t.accessToken, this.#rsNonce);
      return { headers: { authorization: `DPoP ${t.accessToken}`, dpop: proof }, token: t.accessToken };
    }
    return { headers: { authorization: `Bearer ${t.accessToken}` }, token: t.accessToken };
  }

  /**
   * A 401 or 403 for a request: resolves to retry it (a new nonce, a
   * refreshed or adopted token, a non-interactive grant) or throws
   * ALBEDO_NEEDS_SIGN_IN. `attempt` counts this request's retries so far.
   */
  async onChallenge(c: ChallengeInput, attempt: number): Promise<void> {
    const ch = authChallenge(c.wwwAuthenticate);
    if (c.status === 401 && ch?.error === 'use_dpop_nonce' && c.dpopNonce) {
      this.#rsNonce = c.dpopNonce;
      if (attempt < 2) return;
      throw new AlbedoError(
        'ALBEDO_HTTP_ERROR',
        `${this.auth.name}: the server kept asking for a new DPoP nonce; the request did not run`,
        {
          outcome: 'not_run',
          data: { status: 401 },
        },
      );
    }
    if (c.dpopNonce) this.#rsNonce = c.dpopNonce;
    if (c.status === 403) {
      if (ch?.error !== 'insufficient_scope') throw this.#needs('forbidden', ch, 'the server refused the request with HTTP 403');
      const rec = await this.#load(true);
      // A newer token (a step-up sign-in meanwhile) is tried before asking again.
      if (attempt < 2 && rec?.tokens && rec.tokens.accessToken !== c.sentToken && rec.state === 'signed_in') return;
      const have = rec?.tokens?.scope;
      const stepUp = scopeUnion(have, rec?.stepUp, ch.scope);
      if (!this.interactive && attempt === 0 && !scopeCovers(have, ch.scope)) {
        await this.#acquireOnce(stepUp, ch.resourceMetadata, ch.scheme);
        return;
      }
      await this.store.update(this.auth.name, this.serverUrl, (cur) => ({
        record: {
          ...(cur ?? { url: this.serverUrl, updatedAt: 0 }),
          state: 'needs_sign_in',
          reason: 'insufficient_scope',
          stepUp,
          challenge: { resourceMetadata: ch.resourceMetadata, scope: stepUp, scheme: ch.scheme, at: Date.now() },
        },
        value: undefined,
      }));
      await this.#load(true);
      throw this.#needs(
        'insufficient_scope',
        ch,
        `the server wants the scope ${JSON.stringify(ch.scope ?? '')}, which the token lacks`,
        stepUp,
      );
    }
    // 401.
    const before = c.sentToken;
    const rec = await this.#load(true);
    // Another process (or a sign-in) stored a different token meanwhile: use it.
    if (attempt < 2 && rec?.tokens && rec.tokens.accessToken !== before && rec.state === 'signed_in') {
      c.request.renewed = true;
      return;
    }
    // The token this request already renewed was refused too: renewing again would only burn refresh tokens.
    if (attempt >= 2 || (c.request.renewed && before !== undefined && rec?.tokens?.accessToken === before)) {
      await this.#mark(before, ch, 'token_rejected');
      throw this.#needs('token_rejected', ch, 'the server refused the token again after it was renewed');
    }
    if (before && rec?.tokens?.refreshToken) {
      try {
        await this.#refreshOnce(before);
        if (this.#rec?.tokens && this.#rec.tokens.accessToken !== before) {
          c.request.renewed = true;
          return;
        }
      } catch (err) {
        if (AlbedoError.is(err) && err.code === 'ALBEDO_NEEDS_SIGN_IN') throw err;
        // An oversized answer from the token endpoint: its own code and reason (nothing was stored).
        if (isTooLarge(err)) throw err;
        // Transient (the authorization server unreachable, the lock busy): the request did not run; the token stays.
        const why = AlbedoError.is(err) ? err.message : String(err);
        throw new AlbedoError(
          'ALBEDO_HTTP_ERROR',
          `${this.auth.name}: the server refused the access token and renewing it failed for now (${why}); the request did not run`,
          { outcome: 'not_run', data: { status: 401 } },
        );
      }
    }
    if (!this.interactive) {
      await this.#acquireOnce(ch?.scope, ch?.resourceMetadata, ch?.scheme);
      c.request.renewed = true;
      return;
    }
    const reason = before
      ? rec?.reason === 'refresh_refused'
        ? 'refresh_refused'
        : 'token_rejected'
      : rec?.state === 'signed_out'
        ? 'signed_out'
        : rec?.reason === 'refresh_refused'
          ? 'refresh_refused'
          : 'not_signed_in';
    await this.#mark(before, ch, reason);
    throw this.#needs(
      reason,
      ch,
      before ? 'the server refused the access token and it cannot be refreshed' : 'the server requires OAuth and there is no token for it',
    );
  }

  /** Records that only a sign-in helps: the reason, the challenge for the next sign-in's discovery; a refused token goes. */
  async #mark(refused: string | undefined, ch: ReturnType<typeof authChallenge>, reason: string): Promise<void> {
    await this.store.update(this.auth.name, this.serverUrl, (cur) => ({
      record: {
        ...(cur ?? { url: this.serverUrl, updatedAt: 0 }),
        state: cur?.state === 'signed_out' && !refused ? 'signed_out' : 'needs_sign_in',
        reason,
        challenge: { resourceMetadata: ch?.resourceMetadata, scope: ch?.scope, scheme: ch?.scheme, at: Date.now() },
        tokens: refused && cur?.tokens?.accessToken === refused ? undefined : cur?.tokens,
      },
      value: undefined,
    }));
    await this.#load(true);
  }

  #needs(reason: string, ch: ReturnType<typeof authChallenge>, why: string, stepUp?: string): AlbedoError {
    return new AlbedoError('ALBEDO_NEEDS_SIGN_IN', `${this.auth.name} needs the user to sign in (${why}); the request did not run`, {
      outcome: 'not_run',
      data: { server: this.auth.name, reason, ...(stepUp ? { step_up: stepUp } : {}), ...(ch?.scope ? { scope: ch.scope } : {}) },
    });
  }

  /** Single-flight refresh: in this thread by promise, across processes by the store's lock on this record (re-read inside it). */
  #refreshOnce(staleToken: string): Promise<void> {
    this.#refreshing ??= this.#refresh(staleToken).finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  async #refresh(staleToken: string): Promise<void> {
    const ctx = this.#ctx;
    const outcome = await this.store.update(this.auth.name, this.serverUrl, async (cur) => {
      const t = cur?.tokens;
      // Someone rotated it already (another process, or a sign-in): adopt theirs.
      if (!t || (t.accessToken !== staleToken && !refreshDue(t))) return { record: undefined, value: 'adopted' as const };
      if (!t.refreshToken || !cur.client) return { record: undefined, value: 'none' as const };
      try {
        // The authorization server the sign-in found; an old record without it discovers again.
        const d = storedDiscovery(cur, t.resource) ?? (await discover(ctx, cur.resourceMetadata ?? cur.challenge?.resourceMetadata));
        if (d.issuer !== t.issuer || cur.client.issuer !== d.issuer) {
          // Only the resource's own metadata can say the authorization server moved (SEP-2352); a fallback cannot.
          if (!d.prm)
            throw signInFailed(
              'network',
              `the resource metadata of ${this.serverUrl} could not be found to refresh the token; try again later`,
            );
          // The authorization server moved: these tokens and this client mean nothing there.
          return {
            record: { ...cur, state: 'needs_sign_in' as const, reason: 'authorization_server_changed', tokens: undefined },
            value: 'refused' as const,
          };
        }
        const key = cur.dpopKey ? await dpopKeyFrom(cur.dpopKey) : undefined;
        const tokens: TokenRecord = await refresh(ctx, d, cur.client, t, t.tokenType === 'DPoP' ? key : undefined);
        // A pending step-up still needs its sign-in; the refresh does not change that.
        const pending = cur.stepUp ? { state: cur.state, reason: cur.reason } : { state: 'signed_in' as const, reason: undefined };
        return { record: { ...cur, tokens, ...pending }, value: 'refreshed' as const };
      } catch (err) {
        if (AlbedoError.is(err) && (err.data as { reason?: string } | undefined)?.reason === 'refresh_refused') {
          const record = { ...cur, state: 'needs_sign_in' as const, reason: 'refresh_refused', tokens: { ...t, refreshToken: undefined } };
          return { record, value: 'refused' as const };
        }
        throw err;
      }
    });
    await this.#load(true);
    if (outcome === 'refused')
      throw this.#needs(this.#rec?.reason ?? 'refresh_refused', undefined, 'the authorization server refused to refresh the token');
  }

  #acquireOnce(scope: string | undefined, resourceMetadata?: string, scheme?: string): Promise<void> {
    this.#acquiring ??= this.#acquire(scope, resourceMetadata, scheme).finally(() => {
      this.#acquiring = undefined;
    });
    return this.#acquiring;
  }

  /** A non-interactive grant (no user): client credentials, jwt-bearer, enterprise token exchange. */
  async #acquire(scope: string | undefined, resourceMetadata?: string, scheme?: string): Promise<void> {
    const ctx = this.#ctx;
    const failure = await this.store.update(this.auth.name, this.serverUrl, async (cur) => {
      const base = cur ?? { url: this.serverUrl, updatedAt: 0 };
      const rm = resourceMetadata ?? cur?.resourceMetadata ?? cur?.challenge?.resourceMetadata;
      try {
        // A renewal uses what the last grant found; a challenge (resourceMetadata given) discovers again.
        const stored = resourceMetadata ? undefined : storedDiscovery(cur ?? {}, cur?.tokens?.resource);
        const d = stored ?? (await discover(ctx, rm));
        // Without resource metadata there is no word of a new authorization server: try again later.
        if (!d.prm && !stored && cur?.issuer && cur.issuer !== d.issuer) {
          throw signInFailed('network', `the resource metadata of ${this.serverUrl} could not be found; try again later`);
        }
        // Configured credentials go only to the authorization server they were first used with; a new one needs an explicit sign-in.
        if (cur?.issuer && cur.issuer !== d.issuer) {
          throw signInFailed(
            'unsupported',
            `the resource now names the authorization server ${d.issuer}, not ${cur.issuer}; ` +
              'the configured credentials are not sent there until someone signs in again',
            { authorization_server_changed: true },
          );
        }
        const dpopJwk = wantsDpop(ctx, d, scheme ?? cur?.challenge?.scheme) ? (cur?.dpopKey ?? (await newDpopKey()).jwk) : undefined;
        const key = dpopJwk ? await dpopKeyFrom(dpopJwk) : undefined;
        const { tokens, client } = await nonInteractiveGrant(ctx, d, scope ?? cur?.tokens?.scope ?? this.auth.oauth.scope, key);
        const record = {
          ...base,
          state: 'signed_in' as const,
          reason: undefined,
          stepUp: undefined,
          issuer: d.issuer,
          authServer: d.defaults ? undefined : (d.as as Record<string, unknown>),
          resourceMetadata: d.prmUrl ?? cur?.resourceMetadata,
          client,
          tokens,
          dpopKey: dpopJwk,
          challenge: { resourceMetadata: rm, scheme: scheme ?? cur?.challenge?.scheme, at: Date.now() },
        };
        return { record, value: undefined };
      } catch (err) {
        if (!AlbedoError.is(err)) throw err;
        // Recorded so status tells why; the grant is not retried with anything else.
        const data = err.data as { reason?: string; authorization_server_changed?: boolean } | undefined;
        const reason = data?.authorization_server_changed ? 'authorization_server_changed' : (data?.reason ?? 'token_refused');
        // A transient failure keeps whatever token there is; a refusal drops it.
        // So does an answer too large to read: it says nothing about the credentials.
        if (reason === 'network' || reason === 'response_too_large') return { record: undefined, value: { reason, message: err.message } };
        const record = {
          ...base,
          state: 'needs_sign_in' as const,
          reason,
          tokens: undefined,
          challenge: { resourceMetadata: rm, at: Date.now() },
        };
        return { record, value: { reason, message: err.message } };
      }
    });
    await this.#load(true);
    if (failure?.reason === 'response_too_large')
      throw signInFailed('response_too_large', `${this.auth.name}: ${failure.message}; the request did not run`);
    if (failure?.reason === 'network') {
      throw new AlbedoError(
        'ALBEDO_HTTP_ERROR',
        `${this.auth.name}: getting a token failed for now (${failure.message}); the request did not run`,
        {
          outcome: 'not_run',
        },
      );
    }
    if (failure) {
      throw new AlbedoError(
        'ALBEDO_NEEDS_SIGN_IN',
        `${this.auth.name}: getting a token failed (${failure.message}); the request did not run`,
        {
          outcome: 'not_run',
          data: { server: this.auth.name, reason: failure.reason },
        },
      );
    }
  }
}
