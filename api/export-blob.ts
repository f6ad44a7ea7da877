/**
 * persistResourceBlob (issue 25, item 6): one base64 blob of a
 * resource read written to a new file, without a second full decoded copy.
 *
 * The base64 is taken in 64 KiB input batches; each batch's whole quartets
 * (four data characters, whitespace between them skipped) are decoded by
 * Node's own decoder (`Buffer.from(…, 'base64')`, which takes base64 and
 * base64url alike, padded or not) and written before the next batch is
 * decoded, the incomplete quartet at a batch's end carried to the next.
 * So at most one batch's bytes (48 KiB) are held, and the bytes are exactly
 * what Node would decode from the whole string. What Node would decode by
 * silently dropping data is refused instead (ALBEDO_INVALID_RESPONSE, the
 * file removed): a character of neither alphabet, data after the padding,
 * more than two `=`, a last quartet of one character.
 *
 * The file: a temporary file beside the target, created exclusively (`wx`:
 * never opened through a file or link already there), written whole (short
 * writes continued), fsynced and closed; then hard-linked to the target,
 * which fails if the target exists (an existing file is never replaced), and
 * the temporary name removed. The path and byte count are returned only
 * then, so the target name holds the complete file or nothing, even when the
 * process is killed mid-export (a `.albedo-export-<pid>-<hex>.part` file is
 * left then; the first export of a later process into that directory removes
 * the temporary files whose process is gone). The directory is fsynced after
 * the link, so the name survives a power loss as the bytes do. Where the file
 * system has no hard links, the target itself is
 * created exclusively and written (a kill then leaves it partial). Any
 * failure removes the file this export created; `data.leftover` names one
 * that could not be removed (outcome unknown).
 */
import { randomBytes } from 'node:crypto';
import { link, lstat, open, readdir, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { AlbedoError } from '../protocol/errors.ts';

/** Characters of base64 taken per batch. */
export const BATCH_CHARS = 64 * 1024;

const DATA = 1;
const SPACE = 2;
const PAD = 3;
/** Per ASCII code: a data character of base64 or base64url, whitespace, `=`; 0 refused. */
const CLASS = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_') CLASS[c.charCodeAt(0)] = DATA;
for (const c of ' \t\n\v\f\r') CLASS[c.charCodeAt(0)] = SPACE;
CLASS['='.charCodeAt(0)] = PAD;

/** Why a base64 string is refused, and at which character (UTF-16 index). */
export class Base64Problem extends Error {
  readonly at: number;
  readonly why: 'character' | 'after_padding' | 'padding' | 'dangling';

  constructor(why: Base64Problem['why'], at: number) {
    const said = {
      character: 'a character of neither base64 alphabet',
      after_padding: 'data after the padding',
      padding: 'more than two padding characters',
      dangling: 'a last quartet of a single character (it encodes no byte)',
    };
    super(`${said[why]} at character ${at}`);
    this.why = why;
    this.at = at;
  }
}

/**
 * The bytes of `b64`, a batch of input at a time (`batch` characters; tests make it small): each yield decodes the
 * whole quartets seen so far and not yet decoded. Throws Base64Problem where the input is refused (module comment).
 */
export function* decodeBatches(b64: string, batch = BATCH_CHARS): Generator<Buffer> {
  // The data characters after the last whole quartet decoded (whitespace dropped: Node skips it anyway), how many data
  // characters were seen in all, and how many `=` (from the first one on, the data is over).
  let carry = '';
  let data = 0;
  let pads = 0;
  for (let start = 0; start < b64.length; start += batch) {
    const part = b64.slice(start, start + batch);
    const over = pads > 0;
    // Where this part's last whole quartet ends (-1: none ends in it), and where its data ends (its first `=`).
    let whole = -1;
    let end = part.length;
    for (let i = 0; i < part.length; i++) {
      const code = part.charCodeAt(i);
      const k = code < 128 ? CLASS[code] : 0;
      if (k === DATA) {
        if (pads) throw new Base64Problem('after_padding', start + i);
        if (++data % 4 === 0) whole = i + 1;
      } else if (k === PAD) {
        if (!pads) end = i;
        if (++pads > 2) throw new Base64Problem('padding', start + i);
      } else if (k !== SPACE) {
        throw new Base64Problem('character', start + i);
      }
    }
    if (over) continue;
    if (pads || whole < 0) {
      // No quartet ends in this part, or the data ends in it: its data waits for the next part, or for the end.
      carry += dataOf(part.slice(0, end));
      continue;
    }
    const bytes = Buffer.from(carry + part.slice(0, whole), 'base64');
    carry = dataOf(part.slice(whole));
    if (bytes.length) yield bytes;
  }
  if (data % 4 === 1) throw new Base64Problem('dangling', b64.length);
  // The last quartet (two or three characters: one or two bytes), or, after the padding, everything since the last yield.
  if (carry) {
    const bytes = Buffer.from(carry, 'base64');
    if (bytes.length) yield bytes;
  }
}

/** The data characters of `s` (whitespace dropped; `s` holds nothing else by then). */
const dataOf = (s: string): string => (/\s/.test(s) ? s.replace(/\s+/g, '') : s);

export interface PersistOptions {
  /** Aborts the export between batches (the call's signal): the file is removed. */
  signal?: AbortSignal;
  /** Input characters per batch (tests). */
  batch?: number;
  /** Writes one batch's bytes (tests inject a failure, or a stall before a kill); the default writes it whole. */
  write?: (fh: FileHandle, bytes: Buffer) => Promise<void>;
  /** Tests: behave as on a file system without hard links. */
  noLinks?: boolean;
}

export interface Persisted {
  /** The file written (one of `names`). */
  path: string;
  bytes: number;
}

/** Errors of link() that say the file system has no hard links (so the target is written directly). */
const NO_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV', 'EMLINK']);

/**
 * Writes the bytes of `base64` to a new file: the first of `names` (absolute paths in one directory, tried in order)
 * that does not exist. Resolves once the file is complete and closed under its name. Throws an AlbedoError:
 * ALBEDO_INVALID_ARGUMENT (`data.export: 'exists'`) when every name exists, ALBEDO_INVALID_RESPONSE
 * (`invalid_base64`), ALBEDO_EXPORT_FAILED (`write_failed`, `data.errno`), ALBEDO_DEADLINE (`aborted`); not run unless
 * a file could not be removed (`data.leftover`, unknown).
 */
export async function persistResourceBlob(base64: string, names: readonly string[], opts: PersistOptions = {}): Promise<Persisted> {
  if (!names.length) throw new AlbedoError('ALBEDO_INTERNAL', 'an export needs a file name');
  if (opts.noLinks) return direct(base64, names, opts);
  const dir = path.dirname(names[0]!);
  await sweepDead(dir);
  const temp = path.join(dir, `.albedo-export-${process.pid}-${randomBytes(6).toString('hex')}.part`);
  let fh: FileHandle | undefined;
  try {
    fh = await open(temp, 'wx');
  } catch (err) {
    throw failed(err, names[0]!);
  }
  let bytes = 0;
  try {
    bytes = await writeBlob(fh, base64, opts);
    const done = fh;
    fh = undefined;
    await done.close();
    for (const name of names) {
      try {
        await link(temp, name);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') continue;
        if (code && NO_LINKS.has(code)) {
          await removeOwn(temp, names[0]!);
          return direct(base64, names, opts);
        }
        throw err;
      }
      // Linked: the export is complete. The temporary name goes; failing that costs a stray name for the same file.
      await unlink(temp).catch(() => {});
      await syncDir(dir);
      return { path: name, bytes };
    }
    throw exists(names);
  } catch (err) {
    await fh?.close().catch(() => {});
    await removeOwn(temp, names[0]!, err);
    throw failed(err, names[0]!);
  }
}

/** Without hard links: the first free name created exclusively and written in place; removed on failure. */
async function direct(base64: string, names: readonly string[], opts: PersistOptions): Promise<Persisted> {
  for (const name of names) {
    let fh: FileHandle | undefined;
    try {
      fh = await open(name, 'wx');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw failed(err, name);
    }
    try {
      const bytes = await writeBlob(fh, base64, opts);
      const done = fh;
      fh = undefined;
      await done.close();
      await syncDir(path.dirname(name));
      return { path: name, bytes };
    } catch (err) {
      await fh?.close().catch(() => {});
      await removeOwn(name, name, err);
      throw failed(err, name);
    }
  }
  throw exists(names);
}

/** An export's temporary name: the process that writes it, and a random part. */
const PART = /^\.albedo-export-(\d+)-[0-9a-f]{12}\.part$/;
/** Directories swept by this process (once each; bounded). */
const swept = new Set<string>();

/** Whether process `pid` exists (one of another user's answers EPERM: it exists). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A temporary file untouched this long, of a process that is gone, is a dead export's. */
const STALE_MS = 60_000;

/**
 * Once per directory per process: removes the temporary files of exports whose process is gone (one killed
 * mid-export left it) and that nothing has written to for STALE_MS (a process id of another PID namespace is not
 * seen here). A live process's file — this one's, another export's — is left alone; a name that cannot be read or
 * removed stays (best effort: the export goes on).
 */
export async function sweepDead(dir: string): Promise<void> {
  if (swept.has(dir)) return;
  if (swept.size >= 1_000) swept.clear();
  swept.add(dir);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(PART.exec(name)?.[1] ?? NaN);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid || alive(pid)) continue;
    const file = path.join(dir, name);
    const st = await lstat(file).catch(() => undefined);
    if (!st?.isFile() || Date.now() - st.mtimeMs < STALE_MS) continue;
    await unlink(file).catch(() => {});
  }
}

/**
 * Makes a new name durable as its bytes are: fsyncs its directory (where a directory cannot be synced, the name is
 * as durable as the system makes it).
 */
async function syncDir(dir: string): Promise<void> {
  let fh: FileHandle | undefined;
  try {
    fh = await open(dir, 'r');
    await fh.sync();
  } catch {
    // EISDIR/EINVAL on file systems that do not sync directories: the file is complete; its name waits for the system.
  } finally {
    await fh?.close().catch(() => {});
  }
}

/** Decodes and writes every batch, then fsyncs: the byte count. */
async function writeBlob(fh: FileHandle, base64: string, opts: PersistOptions): Promise<number> {
  const write = opts.write ?? writeAll;
  let bytes = 0;
  for (const chunk of decodeBatches(base64, opts.batch)) {
    if (opts.signal?.aborted) throw aborted();
    await write(fh, chunk);
    bytes += chunk.length;
  }
  if (opts.signal?.aborted) throw aborted();
  await fh.sync();
  return bytes;
}

/** Writes all of `bytes` (a short write near a size limit is continued; its failure fails the write). */
export async function writeAll(fh: FileHandle, bytes: Buffer): Promise<void> {
  for (let off = 0; off < bytes.length;) {
    const { bytesWritten } = await fh.write(bytes, off, bytes.length - off);
    if (bytesWritten <= 0) throw Object.assign(new Error('a write wrote nothing'), { code: 'EIO' });
    off += bytesWritten;
  }
}

/** Removes a file this export created; one that stays is named on the error (`leftover`). */
async function removeOwn(file: string, target: string, cause?: unknown): Promise<void> {
  try {
    await unlink(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    const first = AlbedoError.is(cause) ? cause : failed(cause ?? err, target);
    const data = { ...(first.data as Record<string, unknown>), leftover: file };
    throw new AlbedoError(first.code, `${first.message}; ${file} could not be removed`, { outcome: 'unknown', data });
  }
}

const exists = (names: readonly string[]): AlbedoError =>
  new AlbedoError('ALBEDO_INVALID_ARGUMENT', `${names[0]} exists already${names.length > 1 ? ', and so does every numbered name' : ''}`, {
    outcome: 'not_run',
    data: { export: 'exists', file: names[0], read: true },
  });

const aborted = (): AlbedoError =>
  new AlbedoError('ALBEDO_DEADLINE', 'the call was cancelled while its resource was written to a file; the file was removed', {
    outcome: 'not_run',
    data: { export: 'aborted', read: true },
  });

/** Anything thrown on the way as the export's AlbedoError (an AlbedoError passes as it is). */
function failed(err: unknown, file: string): AlbedoError {
  if (AlbedoError.is(err)) return err;
  if (err instanceof Base64Problem) {
    return new AlbedoError('ALBEDO_INVALID_RESPONSE', `the resource's blob is not valid base64: ${err.message}; nothing was written`, {
      outcome: 'not_run',
      data: { export: 'invalid_base64', why: err.why, at: err.at, file, read: true },
    });
  }
  const errno = (err as NodeJS.ErrnoException | undefined)?.code ?? 'EIO';
  return new AlbedoError('ALBEDO_EXPORT_FAILED', `the resource could not be written to ${file} (${errno}); nothing was left`, {
    outcome: 'not_run',
    data: { export: 'write_failed', errno, file, read: true },
  });
}
