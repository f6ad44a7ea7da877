/**
 * A command line as a user types it (`npx -y pkg "/srv/my docs"`), split
 * into an argument vector by POSIX shell quoting rules, with no shell ever
 * run: shell-quote does the split (a maintained parser, not ours), and what
 * only a shell would do with the line (substitution, globs, `~`, variables,
 * operators, a leading assignment) is refused with a reason rather than
 * passed on literally. Shared by `albedo mcp add --command`, the `/mcp`
 * screen's form and the daemon's `POST /v1/ui/command-line` (the web pane).
 * Pure: no I/O.
 */
import { parse as shellParse } from 'shell-quote';

/** How a problem says to pass a variable instead; the CLI names its `--env` option. */
const ENV_ADVICE = (name: string): string => `pass it as an env entry (${name}=VALUE)`;

/**
 * What a shell would do with `text` that a split cannot: the first such
 * thing, as a usage message, or null. Scanned by POSIX quoting rules
 * (backslash, single and double quotes), so only unquoted text counts:
 * unbalanced quotes, a trailing backslash, command substitution (a
 * backtick or `$(`, unquoted or in double quotes, where a shell still runs
 * it), a word starting with an unquoted `~`, an unquoted glob or brace
 * character (`* ? [ {`), and a first word `NAME=value` (an assignment, to
 * a shell). shell-quote (below) refuses the rest: operators, variables,
 * comments.
 */
export function commandProblem(text: string, envAdvice: (name: string) => string = ENV_ADVICE): string | null {
  const substitution = (t: string, i: number): string | null =>
    t[i] === '`' || (t[i] === '$' && t[i + 1] === '(')
      ? `no shell runs, so ${t[i] === '`' ? 'a backtick' : '$('} (command substitution) cannot be used; ` +
        "write the value, or quote it with '…'"
      : null;
  let quote: "'" | '"' | null = null;
  let wordStart = true;
  let firstWord = true;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote === "'") {
      if (c === "'") quote = null;
      continue;
    }
    if (c === '\\') {
      // shell-quote keeps the backslash of "\`" where a shell drops it: not to be guessed at, refused with the other backticks.
      if (quote === '"' && text[i + 1] === '`') return substitution(text, i + 1);
      if (i === text.length - 1) return 'a trailing backslash escapes nothing: remove it, or quote it';
      i++;
      wordStart = false;
      continue;
    }
    if (quote === '"') {
      if (c === '"') quote = null;
      else if (substitution(text, i)) return substitution(text, i);
      continue;
    }
    if (/\s/.test(c)) {
      if (!wordStart) firstWord = false;
      wordStart = true;
      continue;
    }
    if (wordStart && firstWord && /^[A-Za-z_][A-Za-z0-9_]*=/.test(text.slice(i))) {
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i))![0];
      return `the command starts with ${name}=…, which a shell would take as a variable; ${envAdvice(name)}`;
    }
    if (wordStart && c === '~') return 'no shell runs, so a leading ~ would not be your home directory; write the path, or quote it';
    wordStart = false;
    if (c === "'" || c === '"') quote = c;
    else if (substitution(text, i)) return substitution(text, i);
    else if (c === '$' && text[i + 1] === '{')
      return 'no shell runs, so ${…} would not be expanded; write the value, or ' + envAdvice('NAME');
    else if ('*?[{'.includes(c)) return `no shell runs, so ${c} would not be expanded as a pattern; quote it to pass it as it is`;
  }
  if (quote) return `unbalanced ${quote === "'" ? 'single' : 'double'} quote: close it`;
  return null;
}

/**
 * Splits a command line by shell quoting rules into the words of an
 * argument vector; no shell runs, so what only a shell would do is a
 * `problem` (one sentence a user can act on) instead of words.
 */
export function splitCommandLine(
  text: string,
  envAdvice: (name: string) => string = ENV_ADVICE,
): { words: string[] } | { problem: string } {
  const problem = commandProblem(text, envAdvice);
  if (problem) return { problem };
  const vars: string[] = [];
  const parts = shellParse(text, (key) => {
    vars.push(key);
    return '';
  });
  if (vars.length) {
    return { problem: `no shell runs, so $${vars[0]} would not be expanded; write the value, or ${envAdvice('NAME')}` };
  }
  const out: string[] = [];
  for (const p of parts) {
    // An escaped glob character (`\*`) is still a "glob" to shell-quote; commandProblem refused every unescaped one, so this is the word.
    if (typeof p !== 'string' && 'op' in p && p.op === 'glob') {
      out.push(p.pattern);
      continue;
    }
    if (typeof p !== 'string') {
      const what = 'op' in p ? `the operator ${p.op}` : 'a comment';
      return { problem: `no shell runs, so ${what} cannot be used; quote it to pass it as an argument` };
    }
    out.push(p);
  }
  if (!out.length) return { problem: 'no command given' };
  return { words: out };
}
