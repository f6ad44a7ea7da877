/**
 * Watches files by watching their directory: editors save by writing a new
 * file and renaming it over the old one (and this service does too), which
 * replaces the inode a watch on the file itself would follow. Events for
 * each file are debounced, so the burst of one save is read once.
 */
import { watch, type FSWatcher } from 'node:fs';

export interface DirWatch {
  close(): void;
}

/**
 * Calls `onChange(name)` once a burst of events for `name` (one of `names`,
 * in `dir`) has been quiet for `debounceMs`. An event without a file name
 * (some platforms) counts for every name. The directory must exist.
 */
export function watchDir(dir: string, names: readonly string[], debounceMs: number, onChange: (name: string) => void): DirWatch {
  const timers = new Map<string, NodeJS.Timeout>();
  let closed = false;
  const fire = (name: string): void => {
    clearTimeout(timers.get(name));
    const timer = setTimeout(() => {
      timers.delete(name);
      if (!closed) onChange(name);
    }, debounceMs);
    // A pending read must not keep a process alive that is otherwise done.
    timer.unref();
    timers.set(name, timer);
  };
  const w: FSWatcher = watch(dir, { persistent: false }, (_event, filename) => {
    const f = filename?.toString();
    if (f === undefined || f === null) for (const n of names) fire(n);
    else if (names.includes(f)) fire(f);
  });
  // A watch that breaks (the directory removed) is not fatal: the next explicit reload still reads the file.
  w.on('error', () => w.close());
  return {
    close() {
      closed = true;
      w.close();
      for (const t of timers.values()) clearTimeout(t);
      timers.clear();
    },
  };
}
