/**
 * One ACP session's attachment, kept alive: the lease renewed every `renewMs`
 * (the daemon lets it expire `leaseMs` after the last renewal, so a dead
 * adapter frees the session for the next one). The renewal also says when the
 * daemon lost the editor's servers (its restart): `reattach_required` is
 * answered by publishing them again. A token the daemon no longer knows
 * (ALBEDO_ATTACHMENT_LOST: the daemon restarted, or another adapter took the
 * expired lease) earns one re-attachment; if that fails too the session is
 * lost and its prompts are refused.
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
  async renew(): Promise<void> {
    try {
      const r = await this.#link.renew(this);
      if (r.renewMs > 0) this.#renewMs = r.renewMs;
      if (r.state === 'reattach_required') await this.#link.republish(this, this.#body.cwd, this.#body.mcpServers);
    } catch (err) {
      if (this.#stopped) return;
      if (err instanceof CliError && (err.code === 'ALBEDO_ATTACHMENT_LOST' || err.code === 'ALBEDO_NOT_FOUND')) await this.#reattach();
      else this.#say(`albedo: acp: renewing the lease of session ${this.id} failed (${codeOf(err)}); trying again`);
    }
    this.#schedule();
  }

  async #reattach(): Promise<void> {
    try {
      const a = await this.#link.attach(this.acpSessionId, this.#body);
      this.id = a.id;
      this.token = a.token;
      this.#renewMs = a.renewMs;
    } catch (err) {
      this.lost = true;
      this.#say(`albedo: acp: session ${this.acpSessionId} lost its attachment and could not re-attach (${codeOf(err)})`);
    }
  }

  /** Stops renewing; `release` also gives the attachment back (best effort: the lease expires anyway). */
  async stop(release: boolean): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    if (release && !this.lost) await this.#link.release(this).catch(() => {});
  }
}

function codeOf(err: unknown): string {
  return err instanceof CliError ? err.code : err instanceof Error ? err.message : String(err);
}
