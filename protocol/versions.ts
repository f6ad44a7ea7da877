/** Protocol revisions Albedo speaks, by era. */

/** The stateless revision: `server/discover`, `_meta` on every request. */
export const MODERN_VERSION = '2026-07-28';
export const MODERN_VERSIONS: readonly string[] = [MODERN_VERSION];

/** What Albedo offers in `initialize`. */
export const LEGACY_OFFERED = '2025-11-25';
/** What Albedo accepts back from `initialize`, newest first. */
export const LEGACY_ACCEPTED: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];

export type Era = 'modern' | 'legacy';

export function isLegacyVersion(v: unknown): v is string {
  return typeof v === 'string' && LEGACY_ACCEPTED.includes(v);
}
export function isModernVersion(v: unknown): v is string {
  return typeof v === 'string' && MODERN_VERSIONS.includes(v);
}
