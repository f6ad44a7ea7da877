/**
 * What the `/mcp` screen asks the daemon, through the CLI's own client
 * (bin/client/client.ts: it finds the daemon of $ALBEDO_HOME, has it prove
 * it holds daemon.json's token, and starts one when none runs). The screen
 * is a client of the HTTP API and nothing else (docs/api.md "HTTP API
 * (daemon)"): every change is a request, and the daemon's strict save tries
 * a server before it is saved.
 */
import { Client } from '../client/client.ts';
import { CliError } from '../client/errors.ts';
import { seg } from '../client/http.ts';

/** A configured server as `GET /v1/mcp/servers` reports it (the fields the screen reads). */
export interface Server {
  name: string;
  enabled: boolean;
  config: Record<string, any>;
  secrets: { bearer: boolean; header: string | null; env: string[]; oauth_client: boolean };
  tools: number | null;
  description: string;
  lastError: { code: string; message: string; path?: Array<string | number>; reason?: string } | null;
  /** What its entry exposes of $ALBEDO_HOME (a working directory or argument there); absent from an older daemon. */
  warnings?: Array<{ path: Array<string | number>; message: string }>;
  state: string;
  auth: { state: string; account?: string; reason?: string } | null;
}

/** One tool of a saved catalogue (`GET /v1/mcp/servers/{name}/tools`): the server's own words, shown escaped. */
export interface Tool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, any>;
  /** False when the entry's enabledTools / disabledTools keep it from the model. */
  enabled: boolean;
}

/** A server's saved catalogue as the screen lists it; `tools` (and the rest) null when none is saved for it as configured now. */
export interface ServerTools {
  server: string;
  tools: Tool[] | null;
  resources: number | null;
  resourceTemplates: number | null;
  prompts: number | null;
  instructions: string | null;
  serverInfo: { name: string; version: string; title?: string; description?: string } | null;
  discoveredAt: string | null;
}

/** One client of a gateway now (`GET /v1/gateways`): its own name as it declared it, shown escaped. */
export interface GatewayClient {
  id: string;
  name: string | null;
  era: string;
  transport: string;
  /** When it connected: ISO text (or ms since the epoch, from an older daemon). */
  since: string | number;
  calls: number;
}

/** A gateway as `GET /v1/gateways` reports it (the fields the screen reads). */
export interface Gateway {
  name: string;
  definition: { server?: string; servers?: { include?: string[]; exclude?: string[] }; enabled?: boolean; [k: string]: unknown };
  kind: 'pass-through' | 'composed';
  problems: Array<{ code: string; message: string }>;
  tokens: Array<{ id: string; created: number | string }>;
  clients: GatewayClient[];
}

/** The extensions' defaults for every session (`GET /v1/mcp`, `enabled`). */
export interface ExtensionDefaults {
  mcp: boolean;
  'editor-mcp': boolean;
}

/** One extension of a session: its own choice (null: the default decides) and whether it is in force. */
export interface SessionExtension {
  chosen: boolean | null;
  effective: boolean;
}

/** A session as `GET /v1/sessions` lists it (the fields the screen reads). */
export interface SessionInfo {
  id: string;
  profile: string;
  label?: string;
  tools: number;
  extensions?: { mcp: SessionExtension; 'editor-mcp': SessionExtension };
}

/** An ACP session (`GET /v1/acp/sessions`): names, commands and states only, never an env value or a token. */
export interface AcpSession {
  id: string;
  acpSessionId?: string;
  cwd: string;
  agent: { command: string; args: string[] };
  attached: boolean;
  state: string;
  editorMcp: boolean;
  overlay: { servers: Array<{ name: string; state: string }> };
}

export type ExtensionName = 'mcp' | 'editor-mcp';

/** The answer of a write: `{ saved, created, check, server }`. */
export interface SaveResult {
  saved: boolean;
  created: boolean;
  check: { tried: true; result: 'connected' | 'needs_sign_in' } | { tried: false; reason: string };
  server: Server;
}

/** A sign-in as `GET /v1/auth/logins/mcp:{name}` reports it. */
export interface Login {
  login: string;
  server: string;
  state: 'pending' | 'completed' | 'failed';
  authorizationUrl: string | null;
  auth: { state?: string; account?: string } | null;
  error: { code: string; message: string; reason?: string } | null;
}

/** A refusal as the screen shows it: the API's stable code, its message, the field it names. */
export interface Problem {
  code: string;
  message: string;
  path?: Array<string | number>;
}

/** Any error as a Problem: the API's (a CliError), else a defect's message (never a stack). */
export function problemOf(err: unknown): Problem {
  if (err instanceof CliError) return { code: err.code, message: err.message, ...(err.path ? { path: err.path } : {}) };
  return { code: 'ALBEDO_INTERNAL', message: err instanceof Error ? err.message : String(err) };
}

const srv = (name: string, suffix = ''): string => `/v1/mcp/servers/${seg(name)}${suffix}`;
const login = (name: string, suffix = ''): string => `/v1/auth/logins/mcp:${seg(name)}${suffix}`;
const MERGE = { 'content-type': 'application/merge-patch+json' };

/** The daemon's settings and sign-in routes, as the screen uses them. Every method throws a CliError when refused. */
export class ScreenApi {
  #client: Client;

  /** `say`: where the client's news goes (a daemon it started) — the screen's status line, not stderr under Ink. */
  constructor(say: (line: string) => void) {
    this.#client = new Client({ say });
  }

  /** The daemon's home (`$ALBEDO_HOME`): where the browser's redirect pages go (bin/client/browser.ts). */
  get home(): string {
    return this.#client.home;
  }

  /** Every configured server, in file order; `broken` when extensions.json does not parse (the servers are the last valid ones). */
  async servers(): Promise<{ servers: Server[]; broken: boolean }> {
    const { body } = await this.#client.call('GET', '/v1/mcp/servers');
    return { servers: body.servers, broken: Array.isArray(body.invalid) && body.invalid.length > 0 };
  }

  /** Every gateway, in file order; `broken` as for servers. Read only: the screen changes no gateway. */
  async gateways(): Promise<{ gateways: Gateway[]; broken: boolean }> {
    const { body } = await this.#client.call('GET', '/v1/gateways');
    return { gateways: body.gateways, broken: Array.isArray(body.invalid) && body.invalid.length > 0 };
  }

  /** The extensions' defaults for every session, and whether extensions.json is broken (the defaults shown the last valid). */
  async extensionDefaults(): Promise<{ enabled: ExtensionDefaults; broken: boolean }> {
    const { body } = await this.#client.call('GET', '/v1/mcp');
    return { enabled: body.enabled, broken: Array.isArray(body.invalid) && body.invalid.length > 0 };
  }

  /** Sets an extension's default for every session; null: back to the built-in default (on). */
  async setDefault(name: ExtensionName, on: boolean | null): Promise<ExtensionDefaults> {
    const { body } = await this.#client.call('PATCH', '/v1/mcp', { body: { enabled: { [name]: on } }, headers: MERGE });
    return body.enabled;
  }

  /** The daemon's sessions. */
  async sessions(): Promise<SessionInfo[]> {
    return (await this.#client.call('GET', '/v1/sessions')).body.sessions;
  }

  /** Sets a session's own choice of an extension; null: the default decides again. Answers the session. */
  async setSessionExtension(id: string, name: ExtensionName, on: boolean | null): Promise<SessionInfo> {
    return (await this.#client.call<SessionInfo>('PATCH', `/v1/sessions/${seg(id)}`, { body: { extensions: { [name]: on } } })).body;
  }

  /** The ACP sessions; null from a daemon without them (404). */
  async acpSessions(): Promise<AcpSession[] | null> {
    const r = await this.#client.call('GET', '/v1/acp/sessions', { accept: [404] });
    return r.status === 404 ? null : r.body.sessions;
  }

  /** The daemon's port, once a request found it (a gateway's HTTP address is on it). */
  get port(): number | null {
    return this.#client.info?.port ?? null;
  }

  /** One server and the ETag of what was read (for the edit's `If-Match`). */
  async server(name: string): Promise<{ server: Server; etag: string | null }> {
    const r = await this.#client.call<Server>('GET', srv(name));
    return { server: r.body, etag: typeof r.headers.etag === 'string' ? r.headers.etag : null };
  }

  /** The server's tools from its saved catalogue: no session is opened, the server is not started. */
  async tools(name: string): Promise<ServerTools> {
    return (await this.#client.call<ServerTools>('GET', srv(name, '/tools'))).body;
  }

  /** A new server: `PUT` with `If-None-Match: *` (an existing name is a 412), the entry and its secrets together; strict save. */
  async create(name: string, body: Record<string, unknown>): Promise<SaveResult> {
    return (await this.#client.call<SaveResult>('PUT', srv(name), { body, headers: { 'if-none-match': '*' } })).body;
  }

  /** A change: a JSON merge patch of the entry plus secrets, `If-Match` of the version the form was filled from; strict save. */
  async patch(name: string, body: Record<string, unknown>, etag: string | null): Promise<SaveResult> {
    const headers: Record<string, string> = { ...MERGE, ...(etag ? { 'if-match': etag } : {}) };
    return (await this.#client.call<SaveResult>('PATCH', srv(name), { body, headers })).body;
  }

  /** The server and everything stored for it (typed secrets, sign-in, saved catalogue). */
  async remove(name: string): Promise<void> {
    await this.#client.call('DELETE', srv(name));
  }

  /** `enable` (tried first: strict save) or `disable` (not tried). */
  async toggle(name: string, on: boolean): Promise<SaveResult> {
    return (await this.#client.call<SaveResult>('POST', srv(name, on ? '/enable' : '/disable'))).body;
  }

  /** Starts a sign-in (or answers the one pending). */
  async signIn(name: string): Promise<Login> {
    return (await this.#client.call<Login>('PUT', login(name))).body;
  }

  /** The sign-in's progress; null when the daemon knows none (cancelled, forgotten). */
  async login(name: string): Promise<Login | null> {
    const r = await this.#client.call<Login>('GET', login(name), { accept: [404] });
    return r.status === 404 ? null : r.body;
  }

  /** A callback URL pasted by the user; answers the completed sign-in (400 when it is not this sign-in's redirect). */
  async paste(name: string, url: string): Promise<Login> {
    return (await this.#client.call<Login>('POST', login(name, '/callback'), { body: { url } })).body;
  }

  /** Cancels a pending sign-in (its callback listener closes); nothing pending is not an error. */
  async cancel(name: string): Promise<void> {
    await this.#client.call('DELETE', login(name), { accept: [404] });
  }

  /** Forgets the server's OAuth tokens (`secrets: { oauth: null }`); the client registration stays. */
  async signOut(name: string): Promise<SaveResult> {
    return (await this.#client.call<SaveResult>('PATCH', srv(name), { body: { secrets: { oauth: null } }, headers: MERGE })).body;
  }
}
