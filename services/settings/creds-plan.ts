/**
 * What a server write does to its creds.json entry: the stored secrets a
 * patch makes of the current ones (checked against the entry), and the
 * change that is then written — or none, when nothing changes. No I/O here.
 */
import type { SecretsPatch, SettingsServer, StoredSecrets } from '../../protocol/settings.ts';
import { secretsDigest, type CredsExpectation } from './journal.ts';
import { applySecretsPatch, invalidConfig, sameSecrets, secretsConflicts } from './writes.ts';

/** What a server write does to its creds.json entry, given the stored secrets (read under the record's lock). */
export type CredsPlan = (cur: StoredSecrets | undefined) => { secrets: StoredSecrets | null; signOut: boolean } | { entry: null };

interface CredsChange {
  next: StoredSecrets | null | { entry: null };
  signOut: boolean;
}

/** The secrets stored once `patch` is applied to `cur`, refused (ALBEDO_INVALID_CONFIG) when they do not fit `entry`. */
export function nextSecrets(
  name: string,
  entry: SettingsServer,
  cur: StoredSecrets | undefined,
  patch: SecretsPatch | undefined,
): StoredSecrets | null {
  const next = applySecretsPatch(name, entry, cur, patch);
  const conflicts = secretsConflicts(name, entry, next);
  if (conflicts.length) throw invalidConfig(conflicts);
  return next;
}

/** The plan of a write of `entry` with the secrets patch `patch` (`oauth: null` signs out). */
export function credsPlanOf(name: string, entry: SettingsServer, patch: SecretsPatch | undefined): CredsPlan {
  return (cur) => ({ secrets: nextSecrets(name, entry, cur, patch), signOut: patch?.oauth === null });
}

/**
 * The creds.json change a plan makes (null: none, creds.json is not
 * written) and, when there is one, what the entry looks like once it is
 * written (for the journal): always different from what it is now.
 */
export function credsChangeOf(
  plan: ReturnType<CredsPlan>,
  cur: StoredSecrets | undefined,
  signedIn: boolean,
): { change: CredsChange | null; expect: CredsExpectation | null } {
  if ('entry' in plan) return { change: { next: plan, signOut: false }, expect: { removed: true } };
  const secretsChange = !sameSecrets(cur, plan.secrets);
  const signOut = plan.signOut && signedIn;
  if (!secretsChange && !signOut) return { change: null, expect: null };
  // A sign-out alone writes the secrets as they are (the same content).
  const next = secretsChange ? plan.secrets : (cur ?? null);
  return { change: { next, signOut }, expect: { removed: false, secrets: secretsDigest(next), signedOut: signOut } };
}

/** The stored secrets, or none when the record cannot be read: a write then replaces it. */
export function safeCurrent(read: () => StoredSecrets | undefined): StoredSecrets | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}
