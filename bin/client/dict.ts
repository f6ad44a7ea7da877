/**
 * Maps keyed by names a user or a config file chose (variables, headers,
 * servers): without a prototype, so a key `__proto__` or `constructor` is a
 * key like any other — kept as an own key, and written out by JSON.stringify
 * — instead of reaching Object.prototype.
 */

/** An empty map with no prototype. */
export const dict = <T>(): Record<string, T> => Object.create(null) as Record<string, T>;

/** `o` with `k` set as an own, enumerable key (whatever `o`'s prototype). */
export function setOwn<T>(o: Record<string, T>, k: string, v: T): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}
