/**
 * Entity tags of settings reads and the preconditions of writes
 * (RFC 9110 §13): a write with an `If-Match` that is not the current tag is
 * refused with 412 before anything changes, as Caddy's admin API does, so a
 * client never overwrites a change it did not see.
 *
 * A tag is a digest of what the read returns plus what it cannot show: the
 * server's fingerprint, which covers its secret values (hashed). So
 * replacing a stored token changes the tag although the response only says
 * "a bearer token is set". The fingerprint is itself a digest; hashing it
 * again reveals nothing it did not.
 */
import { createHash } from 'node:crypto';
import { ApiError } from './errors.ts';

/** JSON with object keys sorted: equal data, equal text. */
export function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** A strong entity tag (quoted) for `value`. */
export function etagOf(value: unknown): string {
  return `"${createHash('sha256').update(stableJson(value)).digest('base64url').slice(0, 27)}"`;
}

export interface Preconditions {
  ifMatch?: string;
  ifNoneMatch?: string;
}

/** The entity tags of an If-Match / If-None-Match value (`*` stays `*`). */
function tagsOf(header: string): string[] {
  if (header.trim() === '*') return ['*'];
  return header.match(/(?:W\/)?"[^"]*"/g) ?? [];
}

/**
 * Refuses a write (412, ALBEDO_PRECONDITION_FAILED) whose preconditions do
 * not hold for the resource's current tag (null: it does not exist).
 * If-Match compares strongly (a weak tag never matches); `*` means "exists".
 */
export function checkPreconditions(p: Preconditions, current: string | null): void {
  if (p.ifMatch !== undefined) {
    const tags = tagsOf(p.ifMatch);
    const ok = current !== null && (tags.includes('*') || tags.includes(current));
    if (!ok) {
      const why = current === null ? 'it does not exist' : 'it changed since that version was read';
      const message = `If-Match does not name the current version (${why}); read it again`;
      throw new ApiError(412, 'ALBEDO_PRECONDITION_FAILED', message, { path: ['headers', 'if-match'] });
    }
  }
  if (p.ifNoneMatch !== undefined && current !== null) {
    const tags = tagsOf(p.ifNoneMatch).map((t) => t.replace(/^W\//, ''));
    if (tags.includes('*') || tags.includes(current)) {
      throw new ApiError(412, 'ALBEDO_PRECONDITION_FAILED', 'If-None-Match: the server already exists', {
        path: ['headers', 'if-none-match'],
      });
    }
  }
}
