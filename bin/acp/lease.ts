/**
 * One ACP session's attachment, kept alive: the lease renewed every `renewMs`
 * (the daemon lets it expire `leaseMs` after the last renewal, so a dead
 * adapter frees the session for the next one). The renewal also says when the
 * daemon lost the editor's servers (its restart): `reattach_required` is
 * answered by publishing them again. A token the daemon no longer knows
 * (ALBEDO_ATTACHMENT_LOST: the daemon restarted, or another adapter took the
 * expired lease) earns one re-attachment; if that fails too the session is
 * lost and its prompts are refused. So is a session that is gone (closed by
 * another client: ALBEDO_NOT_FOUND): the agent's gateway names it, so a new
 * session in its place would serve nobody; the editor's load or resume makes
 * one and gives the agent its gateway.
 */
import { CliError } from '../client/errors.ts';
import type { AttachBody, Attachment, DaemonLink } from './daemon-link.ts';

export class LeaseKeeper {
  readonly acpSessionId: string;
  /** The Albedo session and its token (both change only at a re-attachment). */
  id: string;
  token: string;
  #renewMs: number;
  #body: AttachBody;
  #link: DaemonLink;
  #say: (line: string) => void;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  /** The renewal under way (a re-attachment may be in it): a stop waits for it, then gives back what it holds. */
  #running: Promise<void> | null = null;
  /** The attachment could not be re-established: prompts are refused with ALBEDO_ATTACHMENT_LOST. */
  lost = false;

  constructor(link: DaemonLink, acpSessionId: string, a: Attachment, body: AttachBody, say: (line: string) => void) {
    this.#link = link;
    this.acpSessionId = acpSessionId;
    this.id = a.id;
    this.token = a.token;
    this.#renewMs = a.renewMs;
    this.#body = body;
    this.#say = say;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#stopped || this.lost) return;
    this.#timer = setTimeout(() => void this.renew(), Math.max(50, this.#renewMs));
    this.#timer.unref();
  }

  /** One renewal (and what its answer asks for); the next is scheduled after it. Exposed for tests. */
  renew(): Promise<void> {
    const run = this.#renew().finally(() => {
      if (this.#running === run) this.#running = null;
    });
    this.#running = run;
    return run;
  }

  async #renew(): Promise<void> {
    try {
      const r = await this.#link.renew(this);
      if (r.renewMs > 0) this.#renewMs = r.renewMs;
      if (r.state === 'reattach_required') await this.#link.republish(this, this.#body.cwd, this.#body.mcpServers);
    } catch (err) {
      if (this.#stopped) return;
      if (err instanceof CliError && err.code === 'ALBEDO_ATTACHMENT_LOST') await this.#reattach();
      else if (err instanceof CliError && err.code === 'ALBEDO_NOT_FOUND') this.#lose(err.code);
      else this.#say(`albedo: acp: renewing the lease of session ${this.id} failed (${codeOf(err)}); trying again`);
    }
    this.#schedule();
  }

  async #reattach(): Promise<void> {
    let a: Attachment;
    try {
      a = await this.#link.attach(this.acpSessionId, this.#body);
    } catch (err) {
      return this.#lose(codeOf(err));
    }
    if (a.created) {
      // None was bound any more (closed meanwhile): the one just made is not the agent's gateway's.
      await this.#link.close(a.id).catch(() => {});
      return this.#lose('ALBEDO_NOT_FOUND');
    }
    this.id = a.id;
    this.token = a.token;
    this.#renewMs = a.renewMs;
  }

  #lose(code: string): void {
    this.lost = true;
    this.#say(`albedo: acp: session ${this.acpSessionId} lost its attachment and could not re-attach (${code})`);
  }

  /** Stops renewing; `release` also gives the attachment back (best effort: the lease expires anyway). */
  async stop(release: boolean): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    // A re-attachment in flight would otherwise hold the session after this stop (an editor's load right after a
    // daemon restart was refused ALBEDO_ATTACHMENT_HELD by this adapter's own renewal).
    await this.#running?.catch(() => {});
    if (release && !this.lost) await this.#link.release(this).catch(() => {});
  }
}

function codeOf(err: unknown): string {
  return err instanceof CliError ? err.code : err instanceof Error ? err.message : String(err);
}
