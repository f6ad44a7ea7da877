/**
 * The adapter's calls to the daemon (docs/api.md "ACP sessions"): found or
 * started lazily, as every command finds it (client/client.ts), at the first
 * session request — never for initialize. The attachment token travels in its
 * own header; the daemon's bearer is the Client's.
 *
 * The adapter outlives daemons: a Client finds (or starts) the daemon once and,
 * after one restart, no more (a command's life). A daemon that does not answer
 * therefore drops the Client, and the next call finds the home's daemon afresh.
 */
import { Client } from '../client/client.ts';
import { CliError } from '../client/errors.ts';
import { seg, type Reply, type RequestOptions } from '../client/http.ts';

/** What the daemon answers for a new or re-attached ACP session. */
export interface Attachment {
  id: string;
  token: string;
  leaseMs: number;
  renewMs: number;
  state: string;
  overlay: { servers: string[] };
  gateway: Record<string, unknown>;
  created?: boolean;
}

export interface AttachBody {
  cwd: string;
  mcpServers: unknown[];
  agent: { command: string; args: string[] };
  http?: boolean;
}

export interface LeaseReply {
  leaseMs: number;
  renewMs: number;
  state: string;
}

const TOKEN_HEADER = 'Albedo-Attachment-Token';
/** Lease and release calls give up after this long: a daemon that does not answer must not hold the adapter. */
const SHORT_MS = 15_000;

export class DaemonLink {
  #client: Client | null = null;

  async #call<T = any>(method: string, path: string, o?: RequestOptions): Promise<Reply<T>> {
    const client = (this.#client ??= new Client());
    try {
      return await client.call<T>(method, path, o);
    } catch (err) {
      if (err instanceof CliError && err.code === 'ALBEDO_DAEMON_UNREACHABLE' && this.#client === client) this.#client = null;
      throw err;
    }
  }

  async create(body: AttachBody): Promise<Attachment> {
    return (await this.#call<Attachment>('POST', '/v1/acp/sessions', { body })).body;
  }

  async attach(acpSessionId: string, body: AttachBody): Promise<Attachment> {
    return (await this.#call<Attachment>('POST', '/v1/acp/attach', { body: { acpSessionId, ...body } })).body;
  }

  async bind(a: { id: string; token: string }, acpSessionId: string): Promise<void> {
    await this.#call('PATCH', `/v1/acp/sessions/${seg(a.id)}`, { body: { acpSessionId }, headers: { [TOKEN_HEADER]: a.token } });
  }

  async renew(a: { id: string; token: string }): Promise<LeaseReply> {
    const path = `/v1/acp/sessions/${seg(a.id)}/lease`;
    return (await this.#call<LeaseReply>('POST', path, { headers: { [TOKEN_HEADER]: a.token }, timeoutMs: SHORT_MS })).body;
  }

  async republish(a: { id: string; token: string }, cwd: string, mcpServers: unknown[]): Promise<{ state: string }> {
    const path = `/v1/acp/sessions/${seg(a.id)}/overlay`;
    return (await this.#call('PUT', path, { body: { cwd, mcpServers }, headers: { [TOKEN_HEADER]: a.token } })).body;
  }

  async release(a: { id: string; token: string }): Promise<void> {
    const path = `/v1/acp/sessions/${seg(a.id)}/attachment`;
    await this.#call('DELETE', path, { headers: { [TOKEN_HEADER]: a.token }, timeoutMs: SHORT_MS });
  }

  /** Closes the Albedo session (a session/new the agent refused). */
  async close(id: string): Promise<void> {
    await this.#call('DELETE', `/v1/sessions/${seg(id)}`, { timeoutMs: SHORT_MS, accept: [404] });
  }

  async activity(id: string, kind: 'submit' | 'turn_end'): Promise<void> {
    await this.#call('POST', `/v1/sessions/${seg(id)}/activity`, { body: { kind }, timeoutMs: SHORT_MS });
  }
}
