/**
 * What the session composer needs from the rest of Albedo, as explicit
 * ports: the core never imports a service, the kernel or the API. A worker
 * service (later) or a test wires them to the settings service, the
 * catalogue store, the transport and a clock with thin adapters.
 */
import type { AlbedoError } from '../../protocol/errors.ts';
import type { ResolvedServer } from '../../protocol/config.ts';
import type { AsyncNormalise, NormaliseResult, ToolFilters } from '../../protocol/catalogue.ts';
import type { Catalogue } from '../../protocol/mcp.ts';
import type { ClientOp, OpenResult } from '../../protocol/services/transport.ts';
import type { SavedCatalogue } from '../catalogue/store.ts';

type MaybePromise<T> = T | Promise<T>;

/** One enabled server, resolved: the transport's form, the fingerprint of its config and credentials, the host's fields. */
export interface ComposerServer {
  name: string;
  /** Digest of the resolved config and of its credentials' values: a changed secret or a new sign-in changes it. */
  fingerprint: string;
  server: ResolvedServer;
  filters: ToolFilters;
  /** Advertised from the start in a deferred session: every tool (true), these raw names, or none. */
  alwaysLoad?: boolean | string[];
  /** The server's result budget in estimated tokens; absent or null: the session's. */
  resultBudget?: number | null;
  isolate: boolean;
  /** One connection for every session composing it under the same fingerprint (shared-port.ts); absent: its own. */
  share?: boolean | 'auto';
  startupTimeoutMs: number;
  callTimeoutMs: number;
  /** What its entry exposes of $ALBEDO_HOME (a working directory or argument there): the session's warnings. */
  warnings?: string[];
  /** A server of the session's overlay (the editor's): its catalogue is never saved nor looked up, it is not in the settings. */
  overlay?: boolean;
}

/** The session's own choice of servers, passed to the settings port (which resolves only what is chosen). */
export interface ServerChoice {
  include?: readonly string[];
  exclude?: readonly string[];
}

export interface ResolvedServers {
  /** The enabled servers the choice selects, in config order. */
  servers: ComposerServer[];
  /** `mcp.retryMs`: the first come-back probe is this long after preparation. */
  retryMs: number;
  /** Servers the choice names that are switched off: shown as `disabled`, never tried. */
  disabled?: string[];
  /** The `mcp` extension's default when the session does not choose (absent: on). */
  mcpEnabled?: boolean;
  /** The `editor-mcp` extension's default (the session's overlay shown) when the session does not choose (absent: on). */
  editorMcpEnabled?: boolean;
}

export interface SettingsPort {
  /**
   * The enabled servers resolved for a preparation. Bad configuration (an
   * invalid name, a missing variable or credential file) throws
   * ALBEDO_INVALID_CONFIG, which fails the whole preparation; an `include`
   * naming no configured server throws ALBEDO_NOT_FOUND.
   */
  servers(choice: ServerChoice): Promise<ResolvedServers>;
  /**
   * Every configured server's name, enabled or not, whatever a session chose (an overlay server may take none of
   * them). Absent: the names `servers({})` answers, with the switched-off ones.
   */
  names?(): Promise<string[]>;
}

/** The saved catalogues (services/catalogue/store.ts `CatalogueStore`, or the catalogue service behind an adapter). */
export interface CataloguePort {
  /** The row of `server` when it was saved under `fingerprint`; else undefined. */
  current(server: string, fingerprint: string): MaybePromise<SavedCatalogue | undefined>;
  /** Saves a discovery; true when the row changed, false when the same discovery was already saved. */
  put(row: SavedCatalogue): MaybePromise<boolean>;
}

/** What the transport tells about connections it holds (by connection id). */
export type TransportEvent =
  /** The server went away by itself; the connection is dialled again by the next call. */
  | { type: 'dropped'; id: string; error: AlbedoError }
  /** A list_changed led to a catalogue that differs from the connection's last one. */
  | { type: 'catalogue-changed'; id: string; catalogue: Catalogue }
  | { type: 'warned'; id: string; message: string; code?: string }
  /** The worker holding these connections was lost: their actors are gone, the next call opens them again. */
  | { type: 'lost'; ids: string[]; error: AlbedoError };

export interface TransportOpenOptions {
  /** The server's name, for its errors and warnings. */
  name: string;
  /** A worker of its own. */
  isolate: boolean;
  /** The client capabilities this connection declares (the session's own; undefined: the composer's). */
  capabilities?: Record<string, unknown>;
}

export interface TransportRequestOptions {
  /** The MCP request's own timeout. */
  timeoutMs: number;
  /** The server's startupTimeoutMs: a transport that dials again inside a request may need it on top. */
  startupTimeoutMs: number;
  signal?: AbortSignal;
}

/**
 * Connections by id (the transport service's connection actors). `open`
 * spawns or dials, negotiates and discovers; a failed open leaves nothing
 * behind. `close` resolves once the server is reaped (for stdio, the
 * launcher has killed its whole process group).
 */
export interface TransportPort {
  open(id: string, server: ResolvedServer, opts: TransportOpenOptions): Promise<OpenResult>;
  request(id: string, op: ClientOp, opts: TransportRequestOptions): Promise<unknown>;
  /** An open connection's open result with its catalogue now (null: no such open actor): a restarted composer resumes with it. */
  info?(id: string): Promise<OpenResult | null>;
  close(id: string): Promise<void>;
  /** Resolves once no call the owner's thread sent straight to this connection is in flight (before it is closed). */
  drain?(id: string): Promise<void>;
  subscribe(listener: (event: TransportEvent) => void): () => void;
}

/** Time for the come-back schedule: injected, so tests assert the schedule without sleeping. Epoch ms in production. */
export interface Clock {
  now(): number;
}

export interface ComposerPorts {
  settings: SettingsPort;
  catalogues: CataloguePort;
  transport: TransportPort;
  /**
   * The schema normaliser (services/catalogue/schema/normalise.ts), per
   * provider profile; synchronous or not. Its answers are kept per schema and
   * profile (services/catalogue/schema-cache.ts), so each schema is
   * normalised once per composer.
   */
  normalise: AsyncNormalise;
  /** The same in batches (the catalogue service): when given, a pass over many schemas makes one call. */
  normaliseMany?: (schemas: unknown[], profile: string) => Promise<NormaliseResult[]>;
  clock: Clock;
  /** The provider profiles a session may ask for; when given, any other is refused with ALBEDO_INVALID_ARGUMENT. */
  profiles?: readonly string[];
  /** How the user signs in to a server, for the MCP context line (default: the `/mcp` screen). */
  signInHint?: (server: string) => string;
  /** New connection ids (default: crypto.randomUUID). */
  newId?: () => string;
}
