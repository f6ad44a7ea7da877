/**
 * The variables of this command's environment it read as private values
 * (`--bearer-from VAR`, `--header-from Name=VAR`, `--env NAME`): a daemon
 * this command starts (daemon.ts) gets the environment without them, so the
 * secret does not sit in that long-lived process's /proc/PID/environ, nor
 * in what the servers it starts inherit from it.
 */
const names = new Set<string>();
/** Variables the same command names for the daemon to read (`${VAR}`, `--bearer-env VAR`): kept. */
const needed = new Set<string>();

/** Notes that `name`'s value was read as a private value. */
export function readPrivately(name: string): void {
  names.add(name);
}

/** Notes that the entry being saved names `name` as a variable of the daemon's: it stays in a daemon started now. */
export function namedForDaemon(name: string): void {
  needed.add(name);
}

/** `env` without the variables read as private values (but those the command also names for the daemon). */
export function withoutPrivate(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env };
  for (const n of names) if (!needed.has(n)) delete out[n];
  return out;
}
