/**
 * A command line with what looks like a secret masked, for a command Albedo
 * records and shows but did not choose (an ACP agent's `albedo acp -- AGENT
 * ARGS…`): the value of an option named like a secret (`--api-key=V`,
 * `--api-key V`, `-token V`, `API_KEY=V`, `Authorization: Bearer V`), and any
 * argument that is itself credential-like (a known token prefix, or a long
 * opaque string). A value masked once is then cut out of every other argument
 * too (protocol/redact.ts), so `--key V` and `--url=https://h/?k=V` both lose
 * it. Guesswork by design: it masks more than needed rather than less, and is
 * no substitute for keeping secrets off command lines. Pure.
 */
import { REDACTED, redact } from './redact.ts';

/** A name that says its value is a secret. */
const SECRET_NAME = /key|token|secret|passw|pwd|credential|auth/i;
/** An option with its value: `--name=value` (one or two dashes). */
const OPTION_VALUE = /^(--?[A-Za-z0-9][A-Za-z0-9_.-]*)=([\s\S]*)$/;
/** An option alone: `--name` (its value is the next argument). */
const OPTION = /^--?[A-Za-z0-9][A-Za-z0-9_.-]*$/;
/** An environment assignment: `NAME=value`. */
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=([\s\S]*)$/;
/** A header: `Name: value`. */
const HEADER = /^([A-Za-z0-9_-]+)[ \t]*:[ \t]*([\s\S]+)$/;
/** Prefixes of well-known credentials: OpenAI/Anthropic, GitHub, Slack, GitLab, AWS, Google, Stripe, npm, Hugging Face. */
const PREFIXES = /^(sk-|sk_|pk_live_|rk_live_|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|xox[a-z]-|glpat-|AKIA|ASIA|AIza|npm_|hf_)/;
/** An auth scheme and its credential. */
const SCHEME = /^(Bearer|Basic|Token)[ \t]+\S/i;

/** Whether `s` looks like a credential on its own. */
export function looksLikeCredential(s: string): boolean {
  if (PREFIXES.test(s) || SCHEME.test(s)) return true;
  if (s.length < 32) return false;
  if (/^[0-9a-fA-F]+$/.test(s)) return true;
  // Long base64 (or base64url) with upper case, lower case and digits: not a word, a path or a model name.
  return /^[A-Za-z0-9+/_-]+={0,2}$/.test(s) && !s.startsWith('/') && /[A-Z]/.test(s) && /[a-z]/.test(s) && /[0-9]/.test(s);
}

/** `args` with secret-looking values as `[redacted]` (see above). */
export function maskArgv(args: readonly string[]): string[] {
  const secrets: string[] = [];
  const hide = (value: string): string => {
    if (value) secrets.push(value);
    return REDACTED;
  };
  const out = args.map((a, i) => {
    const prev = i > 0 ? args[i - 1]! : '';
    if (OPTION.test(prev) && SECRET_NAME.test(prev) && !a.startsWith('-')) return hide(a);
    const opt = OPTION_VALUE.exec(a) ?? ASSIGNMENT.exec(a);
    if (opt && SECRET_NAME.test(opt[1]!)) return `${opt[1]}=${hide(opt[2]!)}`;
    if (opt && looksLikeCredential(opt[2]!)) return `${opt[1]}=${hide(opt[2]!)}`;
    const header = HEADER.exec(a);
    if (header && (SECRET_NAME.test(header[1]!) || looksLikeCredential(header[2]!))) return `${header[1]}: ${hide(header[2]!)}`;
    return looksLikeCredential(a) ? hide(a) : a;
  });
  // What was masked somewhere is cut out of every other argument (a URL, a JSON blob) too.
  return secrets.length ? out.map((a) => (a === REDACTED ? a : redact(a, secrets))) : out;
}
