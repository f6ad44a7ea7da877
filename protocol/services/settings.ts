/**
 * The settings service's message map: extensions.json and the typed secrets
 * in creds.json, resolved into what the transport takes, with fingerprints;
 * and a save, one transaction (`settings/apply`).
 *
 * Results of `settings/resolve*` carry secret values (a resolved server's
 * headers and env are what the transport sends and spawns with): they are
 * for other services, never for an API response or a log; so does
 * `save/try`'s `server`. Everything else here — `settings/get`,
 * `settings/apply`'s result, the events, every error — carries no value.
 */
import type { ResolvedServer } from '../config.ts';
import type { Gateway } from '../gateway.ts';
import type { SerializedError } from '../errors.ts';
import type {
  ExtensionsEnabled,
  ResolveProblem,
  SecretsPatch,
  SectionsPatch,
  SecretsSummary,
  SettingsIssue,
  SettingsServer,
} from '../settings.ts';

/** A server ready for the composer: the transport's form, its fingerprint, and the host's fields. */
export interface ResolvedSettingsServer {
  name: string;
  server: ResolvedServer;
  /** Hex SHA-256 of the resolved config and its credentials' values (services/settings/fingerprint.ts). */
  fingerprint: string;
  enabled: boolean;
  isolate: boolean;
  /** One connection for every session composing it (the entry's `share`; absent: HTTP `auto`, stdio no). */
  share: boolean | 'auto';
  /** null: every tool. */
  enabledTools: string[] | null;
  disabledTools: string[];
  /** Advertised from the start in a deferred session: every tool (true), these raw names, or none (false). */
  alwaysLoad: boolean | string[];
  /** The server's result budget in estimated tokens; null: the session's. */
  resultBudget: number | null;
  /** What its entry exposes (a working directory or argument in or above $ALBEDO_HOME): kept, said to the user. */
  warnings?: Array<{ path: Array<string | number>; message: string }>;
}

/** One server whose settings changed, with what it resolves to now. */
export interface ServerChange {
  name: string;
  change: 'added' | 'removed' | 'updated';
  /** false when removed. */
  enabled: boolean;
  /** null when removed or when it cannot be resolved now (`problem` says why). */
  fingerprint: string | null;
  problem?: ResolveProblem;
}

export interface SettingsView {
  /** Increments with every change of the settings in force. */
  generation: number;
  /** Absolute path of extensions.json (null: no home, nothing on disk). */
  path: string | null;
  servers: Record<string, SettingsServer & { secrets: SecretsSummary }>;
  retryMs: number;
  enabled: ExtensionsEnabled;
  /** The gateways in force, in file order (no prototype); a server one names may not be configured (not a file error). */
  gateways: Record<string, Gateway>;
  /** When the file on disk is broken: its issues (the settings above are the last valid ones). */
  invalid: SettingsIssue[] | null;
}

export interface ResolveAllResult {
  generation: number;
  retryMs: number;
  /** The extensions' defaults; a session may override them. resolve-all does not apply them. */
  enabled: ExtensionsEnabled;
  /** Enabled servers (filtered by include/exclude), in file order. */
  servers: ResolvedSettingsServer[];
  /** Servers asked for by `include` that are switched off (`enabled: false`): not tried. */
  disabled: string[];
  /** The file on disk is broken; these settings are the last valid ones. */
  invalid: SettingsIssue[] | null;
}

export interface SettingsMethods {
  'settings/get': { params: Record<string, never>; result: SettingsView };
  /** One server (enabled or not). ALBEDO_NOT_FOUND, or ALBEDO_INVALID_CONFIG with `data: { server, path, reason }`. */
  'settings/resolve': { params: { name: string }; result: ResolvedSettingsServer };
  /**
   * Every enabled server, `include` (only these names; an unknown one is ALBEDO_NOT_FOUND) minus `exclude`.
   * Any server failing to resolve fails the whole call: ALBEDO_INVALID_CONFIG with `data.issues: ResolveProblem[]`.
   * Before any valid file was read (a broken file at start), ALBEDO_INVALID_CONFIG with `data.issues: SettingsIssue[]`.
   */
  'settings/resolve-all': { params: { include?: string[]; exclude?: string[] }; result: ResolveAllResult };
  /**
   * A save, one transaction: the file re-read (a hand edit not yet picked up is taken in first), `save/check` asked,
   * the plan applied to the entry as written and validated, an enabled server tried (`save/try`, out of the write queue:
   * other saves go on meanwhile), then the entry and its typed secrets written together or not at all — unless the
   * entry was changed in the file meanwhile (ALBEDO_EDIT_CONFLICT). Errors, nothing written by any of them:
   * - ALBEDO_INVALID_CONFIG `data: { issues, broken: true }`: the file on disk is broken; fix it first.
   * - ALBEDO_NOT_FOUND `data: { server }`: no such server (patch, enable, disable, remove).
   * - ALBEDO_INVALID_CONFIG `data: { issues, entry: true, schema? }`: the entry the plan makes is not valid
   *   (`schema`: the validator's own issues, as a caller validating the same entry would see them).
   * - ALBEDO_INVALID_CONFIG `data: { issues }`: the typed secrets are not valid, or do not fit the entry.
   * - ALBEDO_INVALID_ARGUMENT `data: { server, signOut: true }`: `secrets.oauth: null` for a stdio server.
   * - ALBEDO_INVALID_ARGUMENT `data: { server, keep: 'header' | 'env' | 'oauthClient', key? }`: a secret to keep
   *   (`key`: the env entry's name) that is not stored.
   * - ALBEDO_INVALID_CONFIG `data: { server, path, reason }`: the server cannot be resolved (a variable not set…).
   * - ALBEDO_EDIT_CONFLICT: the entry changed in the file while the server was tried, or the file broke.
   * - ALBEDO_CLOSED `data: { withdrawn: true }`: the call was cancelled before the write.
   * - whatever `save/check` or `save/try` threw, as it threw it.
   */
  'settings/apply': { params: ApplyParams; result: ApplyResult };
}

/** Stored typed secrets a save keeps as they are (a blank in the API): refused when none is stored. */
export interface SecretsKeep {
  /** The custom header of this name. */
  header?: string;
  /** These env entries. */
  env?: string[];
  /** The OAuth client registered beforehand. */
  oauthClient?: boolean;
}

/**
 * What a save does. Entries and patches are as the file has them (defaults
 * stay implicit): `put` writes `entry` as given; `patch` is a JSON merge
 * patch (RFC 7396) of the entry as written; `enable`/`disable` set
 * `enabled` in it (enabling an entry that never said otherwise leaves it as
 * written); `remove` drops the server and everything creds.json holds for
 * it; `sections` changes `mcp.retryMs`, the extensions' defaults and the
 * gateways by a merge patch (protocol/settings.ts sectionsPatchSchema).
 */
export type SettingsPlan =
  | { op: 'put'; name: string; entry: Record<string, unknown>; secrets?: SecretsPatch; keep?: SecretsKeep }
  | { op: 'patch'; name: string; patch: Record<string, unknown>; secrets?: SecretsPatch; keep?: SecretsKeep }
  | { op: 'enable' | 'disable' | 'remove'; name: string }
  | { op: 'sections'; patch: SectionsPatch; expect?: GatewayExpectation };

/**
 * What a `sections` plan that changes a gateway was planned on: its definition in force then (null: none). Another
 * definition in force when the plan is applied refuses it (ALBEDO_EDIT_CONFLICT `data: { gateway }`), nothing written:
 * the caller's If-Match was checked against what it read, and this keeps the check and the write one transaction.
 */
export interface GatewayExpectation {
  gateway: string;
  definition: Gateway | null;
}

export interface ApplyParams {
  plan: SettingsPlan;
  /**
   * The caller's `save` service (on the kernel's thread) and the id it knows
   * this save by: with `check`, `save/check` is given the server (or the
   * section) as it is before anything is planned, in the write queue, and may
   * refuse the save (a stale If-Match); with `try`, `save/try` tries an
   * enabled server before anything is written.
   */
  save?: { id: string; check?: boolean; try?: boolean };
  /** Plan and try; write nothing. */
  dryRun?: boolean;
}

/** What settings/resolve makes of a server, without a secret value: its fingerprint, or why it cannot be resolved. */
export type ServerResolution =
  | {
      ok: true;
      fingerprint: string;
      warnings: Array<{ path: Array<string | number>; message: string }>;
      /** The URL an OAuth sign-in is for (null: stdio, or a fixed Authorization). */
      oauthUrl: string | null;
    }
  /** Only ALBEDO_INVALID_CONFIG (the server as saved cannot be prepared); any other failure fails the call. */
  | { ok: false; error: SerializedError };

/** One server as settings/get shows it, with what it resolves to. */
export interface ServerState {
  server: SettingsView['servers'][string];
  resolution: ServerResolution;
}

/** The mcp section in force (GET /v1/mcp's body). */
export interface SectionView {
  retryMs: number;
  enabled: ExtensionsEnabled;
  path: string | null;
  invalid: SettingsIssue[] | null;
}

export interface ApplyResult {
  /** false: a dry run. */
  saved: boolean;
  /** The server before the save (null: none); absent for `sections`. */
  before?: ServerState | null;
  /** The server in force after it (a dry run: as before it; null: none, as after a removal); absent for `sections`. */
  server?: ServerState | null;
  /** The server's change, as `settings/changed` told it (null: a dry run); absent for `sections`. */
  change?: ServerChange | null;
  /** What `save/try` answered (null: not tried). */
  tried: 'connected' | 'needs_sign_in' | null;
  /** The mcp section in force after the save. */
  section: SectionView;
  /** `sections` only: the gateways in force after the save (a dry run: as before it). */
  gateways?: Record<string, Gateway>;
}

/**
 * The service a saving caller provides on the kernel's thread
 * (`kernel.provide('save', …)`: the daemon, daemon/writes.ts) for
 * `settings/apply` to call back: the precondition, and the strict save's try.
 */
export interface SaveMethods {
  /** Refuses the save (throws) unless its preconditions hold for what is in force now. */
  'save/check': { params: { id: string; server?: ServerState | null; section?: SectionView }; result: Record<string, never> };
  /**
   * Tries the server as it would be saved (`server` holds secret values): connected, or needs a sign-in; throws
   * when it cannot start. `signOut`: the save signs it out, so it is tried without its tokens.
   */
  'save/try': {
    params: { id: string; name: string; server: ResolvedServer; isolate: boolean; fingerprint: string; signOut: boolean };
    result: { result: 'connected' | 'needs_sign_in' };
  };
}

export interface SettingsChangedEvent {
  generation: number;
  /** What caused it: a hand edit of extensions.json, a write through this service, or creds.json changing (a sign-in). */
  cause: 'file' | 'write' | 'credentials';
  servers: ServerChange[];
  retryMs: number;
  enabled: ExtensionsEnabled;
  /** The gateways whose definition changed (added, replaced or removed), by name: look them up in `settings/get`. */
  gateways: string[];
}

export interface SettingsEvents {
  /** The settings in force changed. */
  'settings/changed': SettingsChangedEvent;
  /** extensions.json was edited into something invalid; the previous settings stay in force. */
  'settings/invalid': { path: string; issues: SettingsIssue[] };
}
