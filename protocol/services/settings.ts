/**
 * The settings service's message map: extensions.json and the typed secrets
 * in creds.json, resolved into what the transport takes, with fingerprints.
 *
 * Results of `settings/resolve*` carry secret values (a resolved server's
 * headers and env are what the transport sends and spawns with): they are
 * for other services, never for an API response or a log. Everything else
 * here — `settings/get`, the events, every error — carries no value.
 */
import type { ResolvedServer } from '../config.ts';
import type {
  ExtensionsEnabled,
  ResolveProblem,
  SecretsPatch,
  SectionsPatch,
  SecretsSummary,
  SettingsIssue,
  SettingsServer,
  SettingsServerInput,
} from '../settings.ts';

/** A server ready for the composer: the transport's form, its fingerprint, and the host's fields. */
export interface ResolvedSettingsServer {
  name: string;
  server: ResolvedServer;
  /** Hex SHA-256 of the resolved config and its credentials' values (services/settings/fingerprint.ts). */
  fingerprint: string;
  enabled: boolean;
  isolate: boolean;
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
  /** When the file on disk is broken: its issues (the settings above are the last valid ones). */
  invalid: SettingsIssue[] | null;
  /**
   * SHA-256 (hex) of the extensions.json bytes last read or written (null:
   * no file): a writer that reads the file itself can tell that what it
   * read is what these settings came from (daemon/writes.ts).
   */
  digest?: string | null;
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
  /** Resolves an entry that is not saved (strict save: try it first). Writes nothing. */
  'settings/resolve-draft': {
    params: { name: string; entry: SettingsServerInput; secrets?: SecretsPatch };
    result: ResolvedSettingsServer;
  };
  /**
   * Adds or replaces a server and its typed secrets, together or not at all. Bad input: ALBEDO_INVALID_CONFIG with `data.issues`.
   * `expect`: the entry as extensions.json held it when the write was planned (null: none); when the file holds another now
   * (compared as JSON values), nothing is written: ALBEDO_EDIT_CONFLICT.
   */
  'settings/put-server': {
    params: { name: string; entry: SettingsServerInput; secrets?: SecretsPatch; expect?: { entry: Record<string, unknown> | null } };
    result: ServerChange;
  };
  /**
   * Changes `mcp.retryMs` and the extensions' defaults (`enabled.mcp`, `enabled['editor-mcp']`) by a merge patch
   * (protocol/settings.ts sectionsPatchSchema), keeping every other key and section; written atomically. Bad input:
   * ALBEDO_INVALID_CONFIG with `data.issues` (paths into the patch); a broken file on disk: ALBEDO_INVALID_CONFIG.
   */
  'settings/put-section': { params: SectionsPatch; result: { generation: number; retryMs: number; enabled: ExtensionsEnabled } };
  /** Removes a server and everything creds.json holds for it (secrets and OAuth record). */
  'settings/remove-server': { params: { name: string }; result: ServerChange };
  /** Re-reads the files now (as the watcher does). */
  'settings/reload': { params: Record<string, never>; result: { generation: number; invalid: SettingsIssue[] | null } };
}

export interface SettingsChangedEvent {
  generation: number;
  /** What caused it: a hand edit of extensions.json, a write through this service, or creds.json changing (a sign-in). */
  cause: 'file' | 'write' | 'credentials';
  servers: ServerChange[];
  retryMs: number;
  enabled: ExtensionsEnabled;
}

export interface SettingsEvents {
  /** The settings in force changed. */
  'settings/changed': SettingsChangedEvent;
  /** extensions.json was edited into something invalid; the previous settings stay in force. */
  'settings/invalid': { path: string; issues: SettingsIssue[] };
}
