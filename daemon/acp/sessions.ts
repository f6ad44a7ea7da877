/**
 * The daemon's ACP sessions: Albedo sessions opened for an `albedo acp`
 * adapter (label `acp:<uuid>`, with turns), each carrying the editor's MCP
 * servers as its overlay, held by at most one attachment (attachments.ts) and
 * served to the agent as one MCP server, the session gateway
 * (`/mcp/sessions/{id}`, gateway/gateways.ts).
 *
 * What an attach needs to find its session again after a daemon restart —
 * the agent's session id, the workspace and the agent's command — is kept in
 * `acp-sessions.json` in the home (no env value, no token: those are memory
 * only, and so is the overlay, which the restarted daemon's composer reports
 * `lost` until an attach publishes it again). The agent's arguments are kept and
 * shown masked (protocol/redact-argv.ts): an `--api-key=…` never reaches the
 * file or an answer. A file that does not read as such a record is said in the
 * log and moved aside (`acp-sessions.json.corrupt-<time>`, 0600) before it is
 * written again; the sessions it held come back unbound, their workspace unknown.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, readFileSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AlbedoSession } from '../../api/sessions.ts';
import { writeFileAtomic } from '../../platform/atomic-file.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import { maskArgv } from '../../protocol/redact-argv.ts';
import type { SessionOptions } from '../../protocol/composer.ts';
import { Attachments } from './attachments.ts';
import { parseSaved, shadowedOf, type Saved } from './records.ts';
import type { AcpMcpServer, AcpState, AttachBody, CreateBody } from './schemas.ts';

export const ACP_LABEL = 'acp:';
export const ACP_FILE = 'acp-sessions.json';

/** The command the stdio form of the gateway runs: this installation's CLI, under the daemon's own Node. */
const CLI = fileURLToPath(new URL('../../bin/albedo.js', import.meta.url));

/** An editor stdio server as the composer takes it (the session's overlay). */
export interface OverlayServer {
  name: string;
  command: string;
  args: string[];
  env: Array<{ name: string; value: string }>;
}

interface OverlayStatus {
  servers: string[];
  digest: string | null;
  state: 'ready' | 'reload_pending' | 'lost';
  editorMcp: boolean;
}

/** The overlay side of a session (api/session.ts). */
interface OverlayApi {
  setOverlay(cwd: string, servers: OverlayServer[]): Promise<{ servers: string[]; digest: string; changed: boolean; state: string }>;
  readonly overlay?: OverlayStatus;
}
const overlayOf = (s: AlbedoSession): OverlayApi => s as unknown as OverlayApi;

/** The few sessions routes the ACP side uses (daemon/session-registry.ts). */
export interface AcpRegistry {
  open(options: SessionOptions): Promise<{ session: AlbedoSession }>;
  list(): Array<{ session: AlbedoSession }>;
}

/** The agent as it is recorded and shown: its arguments masked. */
const agentOf = (a: { command: string; args: string[] }): AcpRecord['agent'] => ({ command: a.command, args: maskArgv(a.args) });

export interface AcpRecord {
  id: string;
  session: AlbedoSession;
  acpSessionId?: string;
  cwd: string;
  agent: { command: string; args: string[] };
}

type Where = Array<string | number>;

/**
 * A refusal of the ACP side: an AlbedoError that says where in the request (`path`) and, for a publication, which
 * server and why (`fields`: names and reasons only, never an env value). The routes (daemon/acp-routes.ts) answer it.
 */
export class AcpRefusal extends AlbedoError {
  readonly path: Where | undefined;
  readonly fields: Record<string, unknown> | undefined;
  constructor(code: AlbedoError['code'], message: string, o: { path?: Where; fields?: Record<string, unknown> } = {}) {
    super(code, message, { outcome: 'not_run' });
    this.path = o.path;
    this.fields = o.fields;
  }
}

/** The editor's entries as the overlay: stdio ones translated, an HTTP or SSE one refused (the adapter takes stdio only). */
export function toOverlay(servers: AcpMcpServer[], at: Array<string | number>): OverlayServer[] {
  return servers.map((s, i) => {
    if ('type' in s && (s.type === 'http' || s.type === 'sse')) {
      const message = `the editor's server ${JSON.stringify(s.name)} is over ${s.type}: only stdio ones are taken`;
      throw new AcpRefusal('ALBEDO_OVERLAY_FAILED', message, { path: [...at, i], fields: { server: s.name, reason: 'unsupported' } });
    }
    const x = s as { name: string; command: string; args?: string[] | null; env?: Array<{ name: string; value: string }> | null };
    return { name: x.name, command: x.command, args: x.args ?? [], env: (x.env ?? []).map((e) => ({ name: e.name, value: e.value })) };
  });
}

/** A publication's failure as the API answers it: the entry it names, and its reason. */
function overlayError(err: unknown, servers: OverlayServer[], at: Array<string | number>): unknown {
  if (!AlbedoError.is(err) || !err.code.startsWith('ALBEDO_OVERLAY_')) return err;
  const d = (err.data ?? {}) as { server?: unknown; reason?: unknown; code?: unknown };
  const data: Record<string, unknown> = {};
  if (typeof d.server === 'string') data.server = d.server;
  if (typeof d.reason === 'string') data.reason = d.reason;
  if (typeof d.code === 'string') data.code = d.code;
  const i = typeof d.server === 'string' ? servers.findIndex((s) => s.name === d.server) : -1;
  return new AcpRefusal(err.code, err.message, { path: i >= 0 ? [...at, i] : at, fields: data });
}

/** The attachment's token must come with what acts for it: its absence is the request's fault (400 at the header). */
function needToken(token: string | undefined): void {
  if (token !== undefined) return;
  const message = 'albedo-attachment-token: this route acts for the attachment and needs its token';
  throw new AcpRefusal('ALBEDO_INVALID_ARGUMENT', message, { path: ['headers', 'albedo-attachment-token'] });
}

export class AcpSessions {
  readonly attachments: Attachments;
  #registry: AcpRegistry;
  #file: string;
  #home: string;
  #port: () => number;
  #log: (line: string) => void;
  #records = new Map<string, AcpRecord>();
  /** Set when a corrupt file could not be moved aside: it is then left as it is, never overwritten. */
  #keepFile = false;
  #locks = new Map<string, Promise<unknown>>();

  constructor(o: {
    registry: AcpRegistry;
    at: string;
    home: string;
    port: () => number;
    lease: { leaseMs: number; renewMs: number };
    log: (line: string) => void;
  }) {
    this.#registry = o.registry;
    this.#file = path.join(o.at, ACP_FILE);
    this.#home = o.home;
    this.#port = o.port;
    this.#log = o.log;
    this.attachments = new Attachments(o.lease);
  }

  /** Takes in the ACP sessions a previous daemon left (restored by the registry): detached, their overlay lost. */
  restore(): number {
    const saved = this.#read();
    let n = 0;
    for (const { session } of this.#registry.list()) {
      if (!session.label?.startsWith(ACP_LABEL)) continue;
      const s = Object.hasOwn(saved, session.id) ? saved[session.id]! : undefined;
      // Unknown (not in the file, or the file was set aside): unbound, no workspace; it can be looked at and closed.
      this.#add({
        id: session.id,
        session,
        cwd: s?.cwd ?? '',
        agent: s ? agentOf(s.agent) : { command: '', args: [] },
        ...(s?.acpSessionId === undefined ? {} : { acpSessionId: s.acpSessionId }),
      });
      n++;
    }
    this.#save();
    return n;
  }

  /** The records the file holds: none when there is none; a file that is not such a record is logged and moved aside. */
  #read(): Record<string, Saved> {
    let why: string;
    try {
      const saved = parseSaved(readFileSync(this.#file, 'utf8'));
      if (saved) return saved;
      why = 'does not parse as the ACP sessions record';
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return {};
      why = `cannot be read (${code ?? 'error'})`;
    }
    const aside = `${this.#file}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    try {
      renameSync(this.#file, aside);
      chmodSync(aside, 0o600);
      this.#log(`${ACP_FILE} ${why}: moved aside to ${path.basename(aside)}; its ACP sessions come back unbound`);
    } catch (err) {
      this.#keepFile = true;
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      this.#log(`${ACP_FILE} ${why} and cannot be moved aside (${code}): left as it is, not written; its ACP sessions come back unbound`);
    }
    return {};
  }

  #add(r: AcpRecord): void {
    this.#records.set(r.id, r);
    r.session.on((e) => {
      if (e.type !== 'closed' || this.#records.get(r.id) !== r) return;
      this.#records.delete(r.id);
      this.attachments.drop(r.id);
      this.#save();
    });
  }

  #save(): void {
    const sessions: Record<string, unknown> = {};
    for (const r of this.#records.values()) {
      sessions[r.id] = { ...(r.acpSessionId === undefined ? {} : { acpSessionId: r.acpSessionId }), cwd: r.cwd, agent: r.agent };
    }
    // A damaged file that could not be set aside is kept as it is.
    if (this.#keepFile) return;
    try {
      // No ACP session: no file (a home that never saw one gets none).
      if (!this.#records.size) return rmSync(this.#file, { force: true });
      writeFileAtomic(this.#file, `${JSON.stringify({ sessions }, null, 2)}\n`, { mode: 0o600 });
    } catch (err) {
      this.#log(
        `${ACP_FILE} could not be written (${(err as NodeJS.ErrnoException).code ?? 'error'}): a restart may not find its ACP sessions`,
      );
    }
  }

  /** Runs `fn` after every earlier `fn` of `key` settled: one publication (or attach) at a time per session. */
  async #serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.#locks.get(key) ?? Promise.resolve();
    const run = before.then(fn, fn);
    const tail = run.catch(() => {});
    this.#locks.set(key, tail);
    try {
      return await run;
    } finally {
      if (this.#locks.get(key) === tail) this.#locks.delete(key);
    }
  }

  /** The ACP session `id`, or a 404. */
  get(id: string): AcpRecord {
    const r = this.#records.get(id);
    if (!r || r.session.closed) throw new AcpRefusal('ALBEDO_NOT_FOUND', 'no ACP session has this id', { path: ['params', 'id'] });
    return r;
  }

  /** The ACP session `id` if there is one (the session gateway and the guard ask). */
  find(id: string): AcpRecord | undefined {
    const r = this.#records.get(id);
    return r && !r.session.closed ? r : undefined;
  }

  list(): AcpRecord[] {
    return [...this.#records.values()].filter((r) => !r.session.closed);
  }

  state(r: AcpRecord): AcpState {
    const o = overlayOf(r.session).overlay;
    if (!o) return 'ready';
    if (o.state === 'reload_pending') return 'reload_pending';
    if (o.state === 'lost' && o.editorMcp && o.servers.length) return 'reattach_required';
    return 'ready';
  }

  /** Refuses a gateway's tool call while the overlay is not in force (not run). */
  gate(id: string): void {
    const r = this.find(id);
    if (!r) return;
    const state = this.state(r);
    if (state === 'reload_pending') {
      throw new AlbedoError('ALBEDO_OVERLAY_RELOAD_PENDING', "the editor's servers are installed but the session's reload failed", {
        outcome: 'not_run',
      });
    }
    if (state === 'reattach_required') {
      throw new AlbedoError(
        'ALBEDO_OVERLAY_REATTACH_REQUIRED',
        "the editor's servers were lost (a restart): the editor must attach again",
        {
          outcome: 'not_run',
        },
      );
    }
  }

  /** What GET shows: names and states, never a value. */
  info(r: AcpRecord) {
    const o = overlayOf(r.session).overlay;
    const state = this.state(r);
    const status = new Map(r.session.status().map((s) => [s.name, s.state as string]));
    return {
      id: r.id,
      ...(r.acpSessionId === undefined ? {} : { acpSessionId: r.acpSessionId }),
      cwd: r.cwd,
      agent: r.agent,
      attached: this.attachments.attached(r.id),
      state,
      editorMcp: o?.editorMcp ?? true,
      overlay: this.#overlayInfo(r, state, status),
    };
  }

  #overlayInfo(r: AcpRecord, state: AcpState, status = new Map(r.session.status().map((s) => [s.name, s.state as string]))) {
    const o = overlayOf(r.session).overlay;
    const fallback = state === 'reattach_required' ? 'lost' : o?.editorMcp === false ? 'off' : 'unknown';
    const shadowed = shadowedOf(r.session.warnings());
    // A name a configured server took since the overlay was published: the configured one runs, the editor's is left out.
    const of = (name: string): string => (shadowed(name) ? 'shadowed' : (status.get(name) ?? fallback));
    return { servers: (o?.servers ?? []).map((name) => ({ name, state: of(name) })) };
  }

  /** POST /v1/acp/sessions (and an attach that finds no session). */
  async create(b: CreateBody & { acpSessionId?: string }) {
    const servers = toOverlay(b.mcpServers, ['body', 'mcpServers']);
    // The editor's workspace is the session's working directory (read_resource's exports go there).
    const options: SessionOptions = { label: `${ACP_LABEL}${randomUUID()}`, turns: true, cwd: b.cwd };
    if (b.extensions) (options as Record<string, unknown>).extensions = b.extensions;
    const { session } = await this.#registry.open(options);
    try {
      await overlayOf(session).setOverlay(b.cwd, servers);
    } catch (err) {
      await session.close().catch(() => {});
      throw overlayError(err, servers, ['body', 'mcpServers']);
    }
    const r: AcpRecord = {
      id: session.id,
      session,
      cwd: b.cwd,
      agent: agentOf(b.agent),
      ...(b.acpSessionId === undefined ? {} : { acpSessionId: b.acpSessionId }),
    };
    if (session.closed) throw new AlbedoError('ALBEDO_CLOSED', 'the session was closed meanwhile', { outcome: 'not_run' });
    this.#add(r);
    this.#save();
    const token = this.attachments.attach(r.id);
    return this.#attachment(r, token, !!b.http);
  }

  /** POST /v1/acp/attach: the session bound to `acpSessionId`, taken and republished; none: a new one. */
  async attach(b: AttachBody): Promise<{ created: boolean; body: ReturnType<AcpSessions['create']> extends Promise<infer T> ? T : never }> {
    return this.#serial(`acp:${b.acpSessionId}`, async () => {
      const r = this.list().find((x) => x.acpSessionId === b.acpSessionId);
      if (!r) return { created: true, body: { ...(await this.create(b)), created: true } };
      if (!r.cwd) {
        // Its workspace was lost (a damaged record): no workspace is taken on trust for it.
        const why = 'cwd: the workspace of this ACP session is not known, so no attach can be checked against it; close it';
        throw new AcpRefusal('ALBEDO_INVALID_ARGUMENT', why, { path: ['body', 'cwd'], fields: { reason: 'workspace_unknown' } });
      }
      if (r.cwd !== b.cwd) {
        throw new AcpRefusal('ALBEDO_INVALID_ARGUMENT', 'cwd: the ACP session was opened in another workspace', {
          path: ['body', 'cwd'],
        });
      }
      const servers = toOverlay(b.mcpServers, ['body', 'mcpServers']);
      return this.#serial(r.id, async () => {
        const token = this.attachments.attach(r.id);
        try {
          await overlayOf(r.session).setOverlay(b.cwd, servers);
        } catch (err) {
          this.attachments.free(r.id, token);
          throw overlayError(err, servers, ['body', 'mcpServers']);
        }
        // The lease runs from when the token is handed out, not from before a publication that may outlast it.
        this.attachments.renew(r.id, token);
        r.cwd = b.cwd;
        r.agent = agentOf(b.agent);
        this.#save();
        return { created: false, body: { ...this.#attachment(r, token, !!b.http), created: false } };
      });
    });
  }

  /** PATCH /v1/acp/sessions/{id}: binds the agent's session id. */
  bind(id: string, token: string | undefined, acpSessionId: string): void {
    const r = this.get(id);
    needToken(token);
    this.attachments.check(id, token);
    const other = this.list().find((x) => x.acpSessionId === acpSessionId && x.id !== id);
    if (other) {
      throw new AcpRefusal('ALBEDO_INVALID_ARGUMENT', 'acpSessionId: another ACP session is bound to it', {
        path: ['body', 'acpSessionId'],
      });
    }
    r.acpSessionId = acpSessionId;
    this.#save();
  }

  /** POST /v1/acp/sessions/{id}/lease. */
  lease(id: string, token: string | undefined) {
    const r = this.get(id);
    needToken(token);
    this.attachments.renew(id, token);
    return { leaseMs: this.attachments.leaseMs, renewMs: this.attachments.renewMs, state: this.state(r) };
  }

  /** PUT /v1/acp/sessions/{id}/overlay: only the attachment changes the overlay. */
  async overlay(id: string, token: string | undefined, b: { cwd?: string; mcpServers: AcpMcpServer[] }) {
    const r = this.get(id);
    needToken(token);
    this.attachments.check(id, token);
    if (b.cwd !== undefined && r.cwd && b.cwd !== r.cwd) {
      throw new AcpRefusal('ALBEDO_INVALID_ARGUMENT', 'cwd: the ACP session was opened in another workspace', { path: ['body', 'cwd'] });
    }
    const cwd = b.cwd ?? r.cwd;
    if (!cwd) {
      const why = 'cwd: this session’s workspace is not known; give it';
      throw new AcpRefusal('ALBEDO_INVALID_ARGUMENT', why, { path: ['body', 'cwd'] });
    }
    const servers = toOverlay(b.mcpServers, ['body', 'mcpServers']);
    return this.#serial(id, async () => {
      // Checked again: another attach may have taken the session while this waited.
      this.attachments.check(id, token);
      try {
        await overlayOf(r.session).setOverlay(cwd, servers);
      } catch (err) {
        throw overlayError(err, servers, ['body', 'mcpServers']);
      }
      if (!r.cwd) {
        r.cwd = cwd;
        this.#save();
      }
      const state = this.state(r);
      return { state, overlay: this.#overlayInfo(r, state) };
    });
  }

  /** DELETE /v1/acp/sessions/{id}/attachment: released; nothing of the session changes. */
  release(id: string, token: string | undefined): void {
    this.get(id);
    needToken(token);
    this.attachments.release(id, token);
  }

  #attachment(r: AcpRecord, token: string, http: boolean) {
    const gateway = http
      ? {
          type: 'http' as const,
          name: 'albedo' as const,
          url: `http://127.0.0.1:${this.#port()}/mcp/sessions/${r.id}`,
          headers: [{ name: 'Authorization', value: `Bearer ${this.attachments.gatewayToken(r.id, token)}` }],
        }
      : {
          name: 'albedo' as const,
          command: process.execPath,
          args: [CLI, 'gateway', '--session', r.id],
          env: [{ name: 'ALBEDO_HOME', value: this.#home }],
        };
    const o = overlayOf(r.session).overlay;
    return {
      id: r.id,
      token,
      leaseMs: this.attachments.leaseMs,
      renewMs: this.attachments.renewMs,
      state: this.state(r),
      overlay: { servers: o?.servers ?? [] },
      gateway,
    };
  }
}
