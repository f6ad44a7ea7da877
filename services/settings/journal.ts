/**
 * The intent journal of a write that changes both files: a server's entry
 * in extensions.json and its record in creds.json. Each file is replaced
 * atomically on its own, but the two renames are two steps; a process
 * killed between them would leave the new entry beside the old secrets.
 *
 * So before the first rename the writer records what it is about to do
 * (`$ALBEDO_HOME/.settings-write.json`, written atomically and fsynced):
 * extensions.json as it was, a digest of what it becomes, and what the
 * server's creds.json record will look like once written. The journal goes
 * once both files are in place (or once a failed write was undone). A
 * journal found at start-up whose writer is gone means the write was cut
 * short: if creds.json shows the record as written, the write completed
 * and stands; otherwise extensions.json is put back as it was (unless it
 * has been edited since). Either way both files are the old pair or the
 * new pair, never one of each.
 *
 * The journal holds no secret value: extensions.json never has one, and
 * the expected secrets are a salted SHA-256 (as a fingerprint holds them).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { removeFileDurably, writeFileAtomic } from '../../platform/atomic-file.ts';
import { isAlive, thisProcess } from '../../platform/process.ts';
import { stableJson } from './writes.ts';

export const JOURNAL_FILE = '.settings-write.json';

/**
 * The journal of a settings file: extensions.json's has the name it always had; another file's (extensions.toml, a
 * replacement settings service) is named after it, so one format's store never takes the other's journal for its own.
 */
export function journalFileOf(settingsFile: string): string {
  const base = path.basename(settingsFile);
  return base === 'extensions.json' ? JOURNAL_FILE : `.${base}-write.json`;
}

/** What the record of the server in creds.json is once the write is done. */
export type CredsExpectation =
  /** The whole entry is gone (the server was removed). */
  | { removed: true }
  /** `secrets` is this digest (null: absent); with `signedOut`, the OAuth record holds no tokens. */
  | { removed: false; secrets: string | null; signedOut: boolean };

interface Journal {
  pid: number;
  /** The writer's start time (/proc/<pid>/stat field 22), so a reused pid is not taken for it; null where unknown. */
  start?: string | null;
  server: string;
  /** extensions.json before the write, base64 (null: it did not exist). */
  before: string | null;
  /** SHA-256 of extensions.json as the write makes it. */
  after: string;
  creds: CredsExpectation;
}

const sha256 = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

/** The digest of a secrets record as the journal keeps it: its content, the write time aside, salted so it matches no other digest. */
export function secretsDigest(s: Record<string, unknown> | null | undefined): string | null {
  if (!s) return null;
  return sha256(`albedo.settings.journal\0${stableJson({ ...s, updatedAt: undefined })}`);
}

export class WriteJournal {
  readonly file: string;
  readonly #settingsFile: string;

  constructor(home: string, settingsFile: string) {
    this.file = path.join(home, journalFileOf(settingsFile));
    this.#settingsFile = settingsFile;
  }

  /** Records the write about to happen; durable before it returns. */
  begin(server: string, before: Buffer | null, afterText: string, creds: CredsExpectation): void {
    const me = thisProcess();
    const j: Journal = {
      pid: me.pid,
      start: me.start,
      server,
      before: before === null ? null : before.toString('base64'),
      after: sha256(afterText),
      creds,
    };
    writeFileAtomic(this.file, `${JSON.stringify(j)}\n`, { mode: 0o600 });
  }

  /** The write is over (done, or undone): nothing to recover. */
  end(): void {
    try {
      removeFileDurably(this.file);
    } catch {
      // Left behind, it is recognised as completed next time (see recover): extensions.json is what it wrote, or edited since.
    }
  }

  /**
   * Completes or undoes a write cut short by the death of its process, given
   * how creds.json holds the server's entry now (`entry` reads it). Returns
   * what it found. A journal of a live process (another writer at work on
   * this home) is left alone.
   */
  recover(entry: (server: string) => Record<string, unknown> | undefined): 'none' | 'completed' | 'rolled_back' | 'busy' {
    let j: Journal;
    try {
      j = JSON.parse(readFileSync(this.file, 'utf8')) as Journal;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'none';
      // Unreadable or torn: it was being written when the process died, so neither file had been touched yet.
      this.end();
      return 'none';
    }
    if (j.pid !== process.pid && isAlive({ pid: j.pid, start: j.start ?? null })) return 'busy';
    const result = done(j.creds, entry(j.server)) ? 'completed' : this.#rollBack(j);
    this.end();
    return result;
  }

  #rollBack(j: Journal): 'completed' | 'rolled_back' {
    let now: Buffer | null;
    try {
      now = readFileSync(this.#settingsFile);
    } catch {
      now = null;
    }
    // Only the bytes this write put there are undone; a hand edit since then stands.
    if (now === null || sha256(now) !== j.after) return 'rolled_back';
    if (j.before === null) removeFileDurably(this.#settingsFile);
    else writeFileAtomic(this.#settingsFile, Buffer.from(j.before, 'base64'));
    return 'rolled_back';
  }
}

function done(want: CredsExpectation, entry: Record<string, unknown> | undefined): boolean {
  if (want.removed) return entry === undefined;
  const secrets = entry?.secrets;
  const have = typeof secrets === 'object' && secrets !== null ? secretsDigest(secrets as Record<string, unknown>) : null;
  if (have !== want.secrets) return false;
  if (!want.signedOut) return true;
  const oauth = entry?.oauth as { tokens?: unknown } | undefined;
  return !oauth?.tokens;
}
