/**
 * The `/mcp` screen's server form as data (docs/design.md, "The server
 * form"): which fields a new or an edited server has — in the same order
 * for both, the web pane's order — what each shows (secrets masked, one •
 * per character, never in clear: the bearer token, the header's value, the
 * `secret env` values; the `env` values show as typed), the name suggested
 * from the URL host or the command's package (never a name a server has)
 * until the user edits it, and hints for what is stored. A field's problem
 * goes when the field changes; a `~` in the working directory or the
 * command is flagged when the field is left, as in the pane
 * (web/shared/labels.js has both forms' words). Pure: no I/O, no Ink; the
 * form component renders it and form-body.ts turns it into the request.
 */
import { commandTildeProblem, suggestName, transportOf, workingDirProblem } from '../../web/shared/labels.js';
import type { Problem, Server } from './api.ts';
import { textAt, type TextState } from './text-input.ts';

export type Transport = 'http' | 'stdio';
export type FieldId = 'transport' | 'url' | 'command' | 'cwd' | 'name' | 'bearer' | 'header' | 'env' | 'secretEnv';
export type TextField = Exclude<FieldId, 'transport'>;

export interface FormState {
  mode: 'new' | 'edit';
  transport: Transport;
  fields: Record<TextField, TextState>;
  focus: FieldId;
  /** The user typed a name: the suggestion no longer follows the URL or command (an emptied name follows again). */
  nameEdited: boolean;
  /**
   * On edit: the server as read when the form opened, the ETag of that read, the url or command
   * line and the working directory it was prefilled with.
   */
  current: { server: Server; etag: string | null; prefill: string; prefillCwd: string } | null;
  /** The names servers have when the form opened: a suggested name is never one of them. */
  taken: string[];
  /** A problem found at a field before anything was sent (or the field the daemon's refusal names). */
  problems: Partial<Record<FieldId, string>>;
  /** The daemon's refusal of the last save, shown at the top of the form. */
  error: Problem | null;
}

export const LABELS: Record<FieldId, string> = {
  transport: 'transport',
  url: 'url',
  command: 'command',
  cwd: 'working dir',
  name: 'name',
  bearer: 'bearer token',
  header: 'header',
  env: 'env',
  secretEnv: 'secret env',
};

/** The fields whose text is a secret (the bearer token, the header's value, the secret env entries' values): masked while typed. */
export const SECRET_FIELDS: ReadonlySet<FieldId> = new Set(['bearer', 'header', 'secretEnv']);

const empty = (): Record<TextField, TextState> => ({
  url: textAt(),
  command: textAt(),
  cwd: textAt(),
  name: textAt(),
  bearer: textAt(),
  header: textAt(),
  env: textAt(),
  secretEnv: textAt(),
});

/**
 * The form `n` opens: an http server (the default), nothing typed; the
 * working directory a stdio server gets is `cwd` (the screen's own, as
 * `albedo mcp add` saves), shown and editable.
 */
export function newForm(o: { cwd?: string; taken?: string[] } = {}): FormState {
  const fields = empty();
  fields.cwd = textAt(o.cwd ?? '');
  return {
    mode: 'new',
    transport: 'http',
    fields,
    focus: 'transport',
    nameEdited: false,
    current: null,
    taken: o.taken ?? [],
    problems: {},
    error: null,
  };
}

/** A word as a shell would need it typed to mean that word (single quotes unless it is plain). */
export function shellWord(w: string): string {
  return /^[A-Za-z0-9_\-./:=@%+,]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}

/** The form `enter` opens on a server: its URL or command line filled in, its secrets empty (blank keeps what is stored). */
export function editForm(server: Server, etag: string | null): FormState {
  const transport = transportOf(server.config) as Transport;
  const fields = empty();
  fields.name = textAt(server.name);
  const prefill =
    transport === 'http'
      ? String(server.config.url ?? '')
      : [server.config.command, ...(server.config.args ?? [])].map((w: unknown) => shellWord(String(w))).join(' ');
  fields[transport === 'http' ? 'url' : 'command'] = textAt(prefill);
  const prefillCwd = typeof server.config.cwd === 'string' ? server.config.cwd : '';
  fields.cwd = textAt(prefillCwd);
  return {
    mode: 'edit',
    transport,
    fields,
    focus: transport === 'http' ? 'url' : 'command',
    nameEdited: true,
    current: { server, etag, prefill, prefillCwd },
    taken: [],
    problems: {},
    error: null,
  };
}

/** Every row the form shows, in order, the same for a new server and an edited one (and as the pane has them). */
export function rowsOf(s: FormState): FieldId[] {
  const rest: FieldId[] = s.transport === 'http' ? ['url', 'name', 'bearer', 'header'] : ['command', 'cwd', 'name', 'env', 'secretEnv'];
  return ['transport', ...rest];
}

/** The fields focus moves between, in order: on edit the transport and the name are fixed (shown, not focusable). */
export function fieldsOf(s: FormState): FieldId[] {
  return s.mode === 'new' ? rowsOf(s) : rowsOf(s).filter((id) => id !== 'transport' && id !== 'name');
}

/** What is wrong with a path field the user leaves (a `~`; a working directory that is not a full path), or ''. */
export function leftFieldProblem(s: FormState, field: FieldId): string {
  if (field === 'cwd') return workingDirProblem(s.fields.cwd.text);
  if (field === 'command') return commandTildeProblem(s.fields.command.text);
  return '';
}

/** Focus on the next (`+1`) or previous (`-1`) field, wrapping around; the field left is looked at (leftFieldProblem). */
export function moveFocus(s: FormState, by: 1 | -1): FormState {
  const order = fieldsOf(s);
  const i = order.indexOf(s.focus);
  const problem = leftFieldProblem(s, s.focus);
  const problems = problem ? { ...s.problems, [s.focus]: problem } : s.problems;
  return { ...s, problems, focus: order[(i + by + order.length) % order.length]! };
}

/** Whether the focus is on the last field (where enter saves). */
export const onLastField = (s: FormState): boolean => fieldsOf(s).at(-1) === s.focus;

/** The name suggested for a new server's fields (never one taken). */
const suggestion = (s: FormState, transport: Transport, fields: Record<TextField, TextState>): TextState =>
  textAt(suggestName(transport, fields[transport === 'http' ? 'url' : 'command'].text, { taken: s.taken, cwd: fields.cwd.text }));

/**
 * The form with `field`'s text replaced: its problem goes (the working
 * directory's also when the command changes: it may be about a relative
 * path there; the env fields' together, which are checked together); a new
 * URL, command line or working directory moves the suggested name until
 * the name is edited.
 */
export function setText(s: FormState, field: TextField, t: TextState): FormState {
  const fields = { ...s.fields, [field]: t };
  const problems = { ...s.problems };
  delete problems[field];
  if (field === 'command') delete problems.cwd;
  if (field === 'env') delete problems.secretEnv;
  if (field === 'secretEnv') delete problems.env;
  let nameEdited = s.nameEdited;
  if (field === 'name' && s.mode === 'new') nameEdited = t.text !== '';
  const target = s.transport === 'http' ? 'url' : 'command';
  if (s.mode === 'new' && (field === target || (field === 'cwd' && target === 'command')) && !nameEdited) {
    fields.name = suggestion(s, s.transport, fields);
    delete problems.name;
  }
  return { ...s, fields, problems, nameEdited };
}

/** The other transport (← → on the transport field of a new server); the name suggestion follows it unless edited. */
export function switchTransport(s: FormState): FormState {
  if (s.mode !== 'new') return s;
  const transport: Transport = s.transport === 'http' ? 'stdio' : 'http';
  const fields = { ...s.fields };
  if (!s.nameEdited) fields.name = suggestion(s, transport, fields);
  return { ...s, transport, fields, problems: {} };
}

/**
 * What a field shows for `text`: as typed, or with its secret part masked
 * (one • per character, so the cursor stays in place): all of a bearer
 * token; a header's value after its `Name:`; each env entry's value after
 * its `KEY=` (up to the next unquoted space, quotes honoured as the
 * splitter reads them).
 */
export function shownText(field: FieldId, text: string): string {
  // One cell per character, and no control character a terminal would obey (a prefilled argument may hold one).
  return masked(field, text).replace(/[\u0000-\u001f\u007f-\u009f]/g, '\ufffd');
}

function masked(field: FieldId, text: string): string {
  if (field === 'bearer') return '•'.repeat([...text].length);
  if (field === 'header') {
    const colon = text.indexOf(':');
    if (colon < 0) return text;
    const rest = text.slice(colon + 1);
    const lead = /^\s*/.exec(rest)![0];
    return text.slice(0, colon + 1) + lead + '•'.repeat([...rest.slice(lead.length)].length);
  }
  if (field !== 'secretEnv') return text;
  let out = '';
  let inValue = false;
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"' && i + 1 < text.length) {
        out += inValue ? '••' : c + text[i + 1];
        i++;
        continue;
      }
    } else if (c === '\\' && i + 1 < text.length) {
      out += inValue ? '••' : c + text[i + 1];
      i++;
      continue;
    } else if (c === "'" || c === '"') quote = c;
    else if (/\s/.test(c)) {
      inValue = false;
      out += c;
      continue;
    } else if (c === '=' && !inValue) {
      inValue = true;
      out += c;
      continue;
    }
    out += inValue ? '•' : c;
  }
  return out;
}

/** The dim text an empty field shows: what to type, or (on edit) what is stored and how to keep or remove it. Names only, never a value. */
export function placeholder(s: FormState, field: FieldId): string {
  const cur = s.current?.server;
  const keep = 'blank keeps it, - removes it';
  switch (field) {
    case 'url':
      return 'https://example.com/mcp';
    case 'command':
      return 'npx -y @scope/server "arg with spaces"  (no shell runs)';
    case 'cwd':
      return "empty: an empty directory of the server's own (a full path, from /, to run it there)";
    case 'name':
      return 'a name for the server';
    case 'bearer':
      if (cur?.secrets.bearer) return `stored — ${keep}`;
      if (cur?.config.bearerTokenEnvVar) return `the daemon's $${cur.config.bearerTokenEnvVar} — ${keep}`;
      return 'optional';
    case 'header':
      if (cur?.secrets.header) return `${cur.secrets.header} stored — ${keep}`;
      return 'optional: Name: value';
    case 'env': {
      const names = [...(cur?.secrets.env ?? []), ...Object.keys(cur?.config.env ?? {})];
      // The keys first: a long list of names is what gets cut.
      if (names.length) return `blank keeps · KEY=- removes one · - removes all · set: ${names.join(', ')}`;
      return 'optional: KEY=value KEY2="v a l"  (shown as typed)';
    }
    case 'secretEnv':
      return cur
        ? 'KEY=value, masked: a value to keep secret (blank keeps what is stored)'
        : 'optional: KEY=value, masked: values to keep secret';
    default:
      return '';
  }
}

/**
 * The field a refusal's `path` names (`["body", "secrets", "bearer"]` →
 * bearer), if any; an env entry's is the env field it was typed in (`s`).
 */
export function fieldOfPath(path: Array<string | number> | undefined, s?: FormState): FieldId | null {
  if (!path?.length) return null;
  const [where, a, b, c] = path;
  if (where === 'params' && a === 'name') return 'name';
  if (where !== 'body') return null;
  if (a === 'url') return 'url';
  if (a === 'cwd') return 'cwd';
  if (a === 'command' || a === 'args') return 'command';
  if (a === 'env') return 'env';
  if (a === 'headers') return 'header';
  if (a === 'bearerTokenEnvVar') return 'bearer';
  if (a === 'secrets' && b === 'env') {
    const typed = (f: TextField): boolean =>
      typeof c === 'string' && (s?.fields[f].text ?? '').split(/\s+/).some((w) => w.startsWith(`${c}=`));
    return typed('secretEnv') && !typed('env') ? 'secretEnv' : 'env';
  }
  if (a === 'secrets' && (b === 'bearer' || b === 'header')) return b;
  return null;
}
