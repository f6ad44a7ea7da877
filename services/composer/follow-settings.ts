/**
 * A session following the settings: when they change (a hand edit, a write,
 * a sign-in) it reloads, one reload at a time and once more if they changed
 * again meanwhile; a reload that fails keeps the composition, with a warning
 * event. An edit that left extensions.json invalid is a warning too (the
 * settings in force stay).
 */
import { AlbedoError } from '../../protocol/errors.ts';
import type { SessionEvent } from '../../protocol/composer.ts';
import type { Session } from './session.ts';

export class SettingsFollower {
  #session: Session;
  #emit: (event: SessionEvent) => void;
  #reloading: Promise<void> | undefined;
  #again = false;
  #closed = false;

  /** `emit` publishes a warning as one of the session's events. */
  constructor(session: Session, emit: (event: SessionEvent) => void) {
    this.#session = session;
    this.#emit = emit;
    session.on((e) => {
      if (e.type === 'closed') this.#closed = true;
    });
  }

  changed(): void {
    if (this.#closed) return;
    if (this.#reloading) {
      this.#again = true;
      return;
    }
    this.#reloading = (async () => {
      do {
        this.#again = false;
        try {
          await this.#session.reload();
        } catch (err) {
          if (this.#closed || (AlbedoError.is(err) && err.code === 'ALBEDO_CLOSED')) return;
          const e = err as AlbedoError;
          const message = `the settings changed, but they cannot be applied; the session keeps its composition: ${e.message}`;
          this.#emit(e.code ? { type: 'warning', message, code: e.code } : { type: 'warning', message });
        }
      } while (this.#again && !this.#closed);
    })().finally(() => {
      this.#reloading = undefined;
    });
  }

  invalid(file: string, issues: number): void {
    if (this.#closed) return;
    const message = `${file} is not valid (${issues} issue${issues === 1 ? '' : 's'}); the previous settings stay in force`;
    this.#emit({ type: 'warning', message, code: 'ALBEDO_INVALID_CONFIG' });
  }

  /** Settles once no reload triggered by the settings is running. */
  async settled(): Promise<void> {
    while (this.#reloading) await this.#reloading;
  }
}
