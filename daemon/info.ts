/**
 * `$ALBEDO_HOME/daemon.json`: how a client finds the running daemon and
 * proves it may use it — `{ port, token, pid, version }`. Mode 0600 from
 * its creation (the token is the key to everything the daemon holds), and
 * replaced atomically (platform/atomic-file.ts: a temporary file, fsync,
 * rename, the directory fsynced), so a reader sees the old file or the new
 * one, never part of one.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../platform/atomic-file.ts';

export const INFO_FILE = 'daemon.json';

export interface DaemonInfo {
  port: number;
  /** The bearer token every request carries: 32 random bytes, base64url. */
  token: string;
  pid: number;
  /** Albedo's version (package.json). */
  version: string;
}

/** A fresh bearer token: 32 random bytes, base64url (43 characters). */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Writes daemon.json in `home` (mode 0600, atomic: platform/atomic-file.ts). */
export function writeInfo(home: string, info: DaemonInfo): void {
  writeFileAtomic(path.join(home, INFO_FILE), JSON.stringify(info) + '\n', { mode: 0o600 });
}

/** daemon.json of `home`, or null when there is none or it is not a daemon's. */
export function readInfo(home: string): DaemonInfo | null {
  try {
    const v = JSON.parse(readFileSync(path.join(home, INFO_FILE), 'utf8')) as Partial<DaemonInfo>;
    if (!Number.isInteger(v.port) || typeof v.token !== 'string' || !Number.isInteger(v.pid) || typeof v.version !== 'string') return null;
    return v as DaemonInfo;
  } catch {
    return null;
  }
}

/** Removes daemon.json when it is this process's (a later daemon's file is not ours to remove). */
export function removeInfo(home: string, pid = process.pid): void {
  if (readInfo(home)?.pid === pid) rmSync(path.join(home, INFO_FILE), { force: true });
}
