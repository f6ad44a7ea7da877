/**
 * Typed secrets in creds.json, under `mcp.<server>.secrets` (beside the
 * OAuth record `mcp.<server>.oauth`). Every read and write goes through
 * services/oauth/store.ts, the one writer of creds.json: a change runs in
 * the store's transaction on the server's entry (its lock held across the
 * caller's whole change) and writes a patch of the `secrets` field alone,
 * applied under the document lock to the entry as re-read then — so the
 * oauth worker's refreshes and sign-ins, in any thread or process, and these
 * writes never lose each other's changes.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import { storedSecretsSchema, type StoredSecrets } from '../../protocol/settings.ts';
import { FileCredsStore, oauthOf, type CredsView, type OAuthRecord } from '../oauth/store.ts';

/** One read of creds.json: every server's typed secrets and OAuth record, or why the file cannot be used. */
export interface CredsSnapshot {
  /** Set when creds.json cannot be read or parsed (never quoting it); every lookup then fails. */
  problem?: string;
  /** The stored secrets of `name` (undefined: none); throws `invalid` for a record that fails its schema. */
  secrets(name: string): StoredSecrets | undefined;
  /** The OAuth record of `name` when it belongs to `url` (as FileCredsStore.get). */
  oauth(name: string, url: string): OAuthRecord | undefined;
}

export class SecretsFile {
  readonly path: string;
  readonly #store: FileCredsStore;

  constructor(credsPath: string) {
    this.path = credsPath;
    this.#store = new FileCredsStore(credsPath);
  }

  /** The file as read now; one whose `mcp` is not an object is as unusable here as one that is not JSON. */
  #view(): CredsView {
    const view = this.#store.view();
    if (!view.wellFormed) {
      throw new AlbedoError('ALBEDO_INVALID_CONFIG', `${this.path} is not a valid credentials file; fix or remove it`, {
        outcome: 'not_run',
      });
    }
    return view;
  }

  snapshot(): CredsSnapshot {
    let view: CredsView;
    try {
      view = this.#view();
    } catch (err) {
      const problem = (err as Error).message;
      const fail = (): never => {
        throw new AlbedoError('ALBEDO_INVALID_CONFIG', problem, { outcome: 'not_run' });
      };
      return { problem, secrets: fail, oauth: fail };
    }
    return {
      secrets: (name) => parseStored(view.entry(name)?.secrets, this.path),
      oauth: (name, url) => oauthOf(view.entry(name), url),
    };
  }

  /** The server's entry in creds.json as stored now, unparsed (undefined: none); throws when the file cannot be used. */
  entry(name: string): Readonly<Record<string, unknown>> | undefined {
    return this.#view().entry(name);
  }

  /**
   * Runs `fn` holding `name`'s entry lock. `fn` gets the record's secrets as
   * read under the lock, whether its OAuth record holds tokens, and a
   * `write` that replaces the secrets (null: removes them; `{ entry: null }`:
   * removes the server's whole entry, OAuth record included) under the
   * document lock — with `signOut`, dropping the OAuth tokens in the same
   * write (the record stays, signed_out). `beforeRename` is fault injection.
   */
  withRecord<T>(name: string, fn: (tx: SecretsTx) => Promise<T>, beforeRename?: () => void): Promise<T> {
    return this.#store.withEntry(name, (tx) =>
      fn({
        current: () => parseStored(this.#view().entry(name)?.secrets, this.path),
        signedIn: () => hasTokens(this.#view().entry(name)?.oauth),
        write: (next, opts = {}) => {
          if (next !== null && 'entry' in next) return tx.write(null, { beforeRename });
          const patch: Record<string, unknown> = { secrets: next === null ? null : { ...next, updatedAt: Date.now() } };
          const rec = tx.read()?.oauth;
          if (opts.signOut && hasTokens(rec)) patch.oauth = signedOutRecord(rec as Record<string, unknown>);
          return tx.write(patch, { beforeRename });
        },
      }),
    );
  }
}

export interface SecretsTx {
  current(): StoredSecrets | undefined;
  /** Whether the OAuth record holds tokens (a sign-out would change it). */
  signedIn(): boolean;
  write(next: StoredSecrets | null | { entry: null }, opts?: { signOut?: boolean }): Promise<void>;
}

function hasTokens(rec: unknown): boolean {
  return typeof rec === 'object' && rec !== null && !!(rec as { tokens?: unknown }).tokens;
}

/** The typed secrets stored for `name`, or none when its record cannot be read. */
export function storedOf(creds: CredsSnapshot, name: string): StoredSecrets | undefined {
  try {
    return creds.secrets(name);
  } catch {
    return undefined;
  }
}

/** `creds` as they will be once a write of `name` stores `next` (and, with `signOut`, signs it out): for resolving a draft. */
export function draftSnapshot(creds: CredsSnapshot, name: string, next: StoredSecrets | null, signOut: boolean): CredsSnapshot {
  return {
    secrets: (n) => (n === name ? (next ?? undefined) : creds.secrets(n)),
    oauth: (n, u) => {
      const rec = creds.oauth(n, u);
      return n === name && signOut && rec ? signedOutRecord(rec) : rec;
    },
  };
}

/**
 * An OAuth record signed out, as services/oauth/sign-in.ts `signOut` makes
 * it: the tokens, DPoP key and account go; the client registrations stay
 * (reusable, no user token in them); the state is signed_out.
 */
export function signedOutRecord<R extends object>(rec: R): R {
  const { tokens: _t, dpopKey: _d, reason: _r, stepUp: _s, account: _a, challenge: _c, ...rest } = rec as Record<string, unknown>;
  return { ...rest, state: 'signed_out', updatedAt: Date.now() } as unknown as R;
}

function parseStored(v: unknown, file: string): StoredSecrets | undefined {
  if (v === undefined) return undefined;
  const r = storedSecretsSchema.safeParse(v);
  if (!r.success) {
    throw new AlbedoError('ALBEDO_INVALID_CONFIG', `${file}: the stored secrets of this server are not valid; save the server again`, {
      outcome: 'not_run',
    });
  }
  return r.data;
}
