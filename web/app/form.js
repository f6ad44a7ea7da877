/// <reference lib="dom" />
// The server form, for a new server and for editing one: the fields and
// rules of the terminal screen's form (docs/design.md, "The server form").
// The command line is split by the daemon with the CLI's rules
// (POST /v1/ui/command-line) before anything is saved, and a problem is
// shown at the field. Saving is the API's strict save: PUT with
// If-None-Match: * (new) or a merge PATCH with If-Match of the version read
// when the form opened (edit); the daemon tries the server first, and a
// refusal leaves the form open with the error and nothing changed.
// Env values are shown as typed unless the user marks one secret (then a
// password input); every typed value is sent once in the body (`secrets`,
// stored in creds.json) and never shown back. A stdio server's working
// directory is a field of its own (docs/config.md "Working directory"):
// empty, the server runs in an empty directory of its own. A field's
// problem goes when the field changes; a `~` is flagged when a path field
// is left (no shell expands it), as the `/mcp` screen does.

import { api, ApiError, problemOf, serverPath } from './api.js';
import { html, useEffect, useRef, useState } from './vendor.js';
import { suggestName } from '../shared/labels.js';
import {
  checkDraft,
  draftFromServer,
  emptyDraft,
  envRow,
  fieldOfPath,
  joinCommand,
  leftFieldProblem,
  patchBody,
  problemsAfter,
  putBody,
  withoutSecrets,
} from './form-model.js';
import { Alert, Busy, useFocusOnShow } from './ui.js';

/** @typedef {import('./form-model.js').Draft} Draft */
/** @typedef {import('./form-model.js').Problems} Problems */

/**
 * A labelled text or password input with its hint and its problem (read by
 * screen readers with the field: aria-describedby, aria-invalid).
 * @param {{ id: string, label: string, value: string, onInput: (v: string) => void, problems: Problems, hint?: string,
 *   secret?: boolean, readOnly?: boolean, disabled?: boolean, field?: string, mono?: boolean, onBlur?: () => void }} p
 */
function Field({ id, label, value, onInput, problems, hint, secret, readOnly, disabled, field, mono, onBlur }) {
  const problem = problems[field ?? id];
  const described = [hint ? `${id}-hint` : '', problem ? `${id}-problem` : ''].filter(Boolean).join(' ') || undefined;
  return html`<div class="field">
    <label for=${id}>${label}</label>
    <input
      id=${id}
      name=${id}
      type=${secret ? 'password' : 'text'}
      value=${value}
      class=${mono ? 'mono' : ''}
      autocomplete=${secret ? 'new-password' : 'off'}
      spellcheck=${false}
      autocapitalize="off"
      readonly=${!!readOnly}
      disabled=${!!disabled}
      aria-invalid=${problem ? 'true' : undefined}
      aria-describedby=${described}
      onBlur=${onBlur}
      onInput=${(/** @type {InputEvent} */ e) => onInput(/** @type {HTMLInputElement} */ (e.currentTarget).value)}
    />
    ${hint ? html`<p class="hint" id=${`${id}-hint`}>${hint}</p>` : null}
    ${problem ? html`<p class="field-problem" id=${`${id}-problem`}><span aria-hidden="true">✗ </span>${problem}</p>` : null}
  </div>`;
}

/** "Remove the stored …" for a stored secret. @param {{ id: string, label: string, checked: boolean, onChange: (v: boolean) => void }} p */
function RemoveBox({ id, label, checked, onChange }) {
  return html`<div class="check">
    <input
      type="checkbox"
      id=${id}
      checked=${checked}
      onChange=${(/** @type {Event} */ e) => onChange(/** @type {HTMLInputElement} */ (e.currentTarget).checked)}
    /><label for=${id}>${label}</label>
  </div>`;
}

const STORED = 'stored — leave blank to keep, or remove';

/** What the saved entry reads from the daemon's own environment (kept as it is; `albedo mcp edit` changes it). @param {{ d: Draft }} p */
function Named({ d }) {
  if (!d.named.length) return null;
  return html`<div class="named">
    <p class="hint">Read from the daemon's environment (kept as saved):</p>
    <ul>
      ${d.named.map(([what, v]) => html`<li key=${what}><code>${what}</code> ← <code>$${v}</code></li>`)}
    </ul>
  </div>`;
}

/** @param {{ d: Draft, set: (p: Partial<Draft>) => void, problems: Problems }} p */
function HttpSecrets({ d, set, problems }) {
  return html`<fieldset>
    <legend>Credentials <span class="optional">(optional; a server that asks for OAuth needs neither)</span></legend>
    <${Field}
      id="bearer"
      label="Bearer token"
      secret=${true}
      value=${d.bearer}
      problems=${problems}
      disabled=${d.removeBearer}
      hint=${d.storedBearer ? STORED : 'Sent as Authorization: Bearer …; stored by the daemon in creds.json.'}
      onInput=${(/** @type {string} */ v) => set({ bearer: v })}
    />
    ${
      d.storedBearer
        ? html`<${RemoveBox}
            id="bearer-remove"
            label="Remove the stored bearer token"
            checked=${d.removeBearer}
            onChange=${(/** @type {boolean} */ v) => set({ removeBearer: v, bearer: '' })}
          />`
        : null
    }
    <div class="pair">
      <${Field}
        id="header-name"
        field="headerName"
        label="Header name"
        value=${d.headerName}
        problems=${problems}
        disabled=${d.removeHeader}
        onInput=${(/** @type {string} */ v) => set({ headerName: v })}
      />
      <${Field}
        id="header-value"
        field="headerValue"
        label="Header value"
        secret=${true}
        value=${d.headerValue}
        problems=${problems}
        disabled=${d.removeHeader}
        hint=${d.storedHeader !== null ? STORED : undefined}
        onInput=${(/** @type {string} */ v) => set({ headerValue: v })}
      />
    </div>
    ${
      d.storedHeader !== null
        ? html`<${RemoveBox}
            id="header-remove"
            label=${`Remove the stored header ${d.storedHeader}`}
            checked=${d.removeHeader}
            onChange=${(/** @type {boolean} */ v) => set({ removeHeader: v, headerValue: '' })}
          />`
        : null
    }
    <${Named} d=${d} />
  </fieldset>`;
}

/** @param {{ d: Draft, set: (p: Partial<Draft>) => void, problems: Problems }} p */
function EnvSecrets({ d, set, problems }) {
  /** @param {number} id @param {Partial<import('./form-model.js').EnvRow>} patch */
  const row = (id, patch) => set({ env: d.env.map((r) => (r.id === id ? { ...r, ...patch } : r)) });
  return html`<fieldset>
    <legend>
      Environment
      <span class="optional"
        >(optional KEY=value entries, stored by the daemon in creds.json and never shown back; mark a value secret to mask it here)</span
      >
    </legend>
    ${d.env.map(
      (r, i) =>
        html`<fieldset class="env-row" key=${r.id}>
          <legend class="visually-hidden">${r.stored ? `Stored entry ${r.key}` : `Entry ${i + 1}`}</legend>
          <div class="pair">
            ${
              r.stored
                ? html`<div class="field"><span class="label-like">Variable</span><code class="stored-key">${r.key}</code></div>`
                : html`<${Field}
                    id=${`env-${r.id}-key`}
                    label="Variable"
                    value=${r.key}
                    problems=${problems}
                    mono=${true}
                    onInput=${(/** @type {string} */ v) => row(r.id, { key: v })}
                  />`
            }
            <${Field}
              id=${`env-${r.id}-value`}
              label=${r.stored ? `Value of ${r.key}` : 'Value'}
              secret=${r.secret}
              value=${r.value}
              problems=${problems}
              disabled=${r.remove}
              hint=${r.stored ? STORED : undefined}
              onInput=${(/** @type {string} */ v) => row(r.id, { value: v })}
            />
          </div>
          <div class="check">
            <input
              type="checkbox"
              id=${`env-${r.id}-secret`}
              checked=${r.secret}
              disabled=${r.remove}
              onChange=${(/** @type {Event} */ e) => row(r.id, { secret: /** @type {HTMLInputElement} */ (e.currentTarget).checked })}
            />
            <label for=${`env-${r.id}-secret`}>Secret: mask the value</label>
          </div>
          ${
            r.stored
              ? html`<${RemoveBox}
                  id=${`env-${r.id}-remove`}
                  label=${`Remove the stored ${r.key}`}
                  checked=${r.remove}
                  onChange=${(/** @type {boolean} */ v) => row(r.id, { remove: v, value: '' })}
                />`
              : html`<button type="button" class="small" onClick=${() => set({ env: d.env.filter((x) => x.id !== r.id) })}>
                  Remove entry ${i + 1}
                </button>`
          }
        </fieldset>`,
    )}
    <button type="button" onClick=${() => set({ env: [...d.env, envRow()] })}>Add an env entry</button>
    <${Named} d=${d} />
  </fieldset>`;
}

/**
 * The add / edit form. `name` is the server edited (null: a new one).
 * `onSaved` gets the write's answer once the daemon saved it.
 * @param {{ name: string | null, onSaved: (r: any) => void, onCancel: () => void }} p
 */
export function ServerForm({ name, onSaved, onCancel }) {
  const editing = name !== null;
  /** @type {{ current: HTMLHeadingElement | null }} */
  const heading = useRef(null);
  const [d, setDraft] = useState(/** @type {Draft | null} */ (editing ? null : emptyDraft()));
  const [saved, setSaved] = useState(/** @type {{ server: any, etag: string | null } | null} */ (null));
  const [problems, setProblems] = useState(/** @type {Problems} */ ({}));
  const [error, setError] = useState(/** @type {{ code: string, message: string } | null} */ (null));
  const [phase, setPhase] = useState(/** @type {'idle' | 'checking' | 'trying'} */ ('idle'));
  // Bumped by a save that found problems or was refused: only then does the focus move to what went wrong.
  const [looked, setLooked] = useState(0);
  /** @type {{ current: Draft | null }} */
  const latest = useRef(d);
  latest.current = d;
  /** @type {{ current: string[] }} the names servers have: a suggested name is never one of them */
  const taken = useRef([]);
  useFocusOnShow(heading);

  /** The draft with the name suggested from the URL or command (and the working directory) until the user typed one. @param {Draft} next */
  const suggested = (next) =>
    editing || next.nameEdited
      ? next
      : {
          ...next,
          name: suggestName(next.transport, next.transport === 'http' ? next.url : next.command, { taken: taken.current, cwd: next.cwd }),
        };

  /** @param {Partial<Draft>} patch */
  const set = (patch) => {
    const old = latest.current;
    if (!old) return;
    // The name itself typed (or emptied, when the suggestion follows again from the next change) is kept as typed.
    const next = 'name' in patch ? { ...old, ...patch } : suggested({ ...old, ...patch });
    latest.current = next;
    setDraft(next);
    setProblems((p) => problemsAfter(p, old, next));
  };

  useEffect(() => {
    if (!editing) {
      // The names taken, for the suggestion (the daemon refuses a taken name all the same: If-None-Match: *).
      api('GET', '/v1/mcp/servers').then(
        (r) => {
          taken.current = (r.body.servers ?? []).map((/** @type {{ name: string }} */ s) => s.name);
          if (latest.current) set({});
        },
        () => undefined,
      );
      return;
    }
    api('GET', serverPath(name)).then(
      (r) => {
        setSaved({ server: r.body, etag: r.etag });
        setDraft(draftFromServer(r.body));
      },
      (err) => setError(problemOf(err)),
    );
  }, [name]);

  // After a save: the first field with a problem takes the focus, else the refusal — where the user is is what went wrong.
  useEffect(() => {
    if (!looked) return;
    const first = Object.keys(problems)[0];
    const id = first === 'headerName' ? 'header-name' : first === 'headerValue' ? 'header-value' : first;
    const target = id ? document.getElementById(id) : error ? document.querySelector('.server-form [role="alert"]') : null;
    if (target instanceof HTMLElement) target.focus();
  }, [looked]);

  /** A path field left: a `~` in it (or a working directory that is not a full path) is said at once. @param {'cwd' | 'command'} field */
  const left = (field) => () => {
    const cur = latest.current;
    const problem = cur ? leftFieldProblem(field, cur[field]) : '';
    if (problem) setProblems((p) => ({ ...p, [field]: problem }));
  };

  /** @param {Event} e */
  const save = async (e) => {
    e.preventDefault();
    if (!d || phase !== 'idle') return;
    setError(null);
    const local = checkDraft(d, saved?.server);
    setProblems(local);
    if (Object.keys(local).length) return setLooked((n) => n + 1);
    setPhase('checking');
    try {
      let split = null;
      const asSaved = editing && saved && d.command === joinCommand(saved.server.config.command ?? '', saved.server.config.args ?? []);
      if (d.transport === 'stdio' && !asSaved) {
        try {
          split = (await api('POST', '/v1/ui/command-line', { body: { line: d.command } })).body;
        } catch (err) {
          if (err instanceof ApiError && err.path.join('.') === 'body.line') {
            setProblems({ command: err.message });
            return setLooked((n) => n + 1);
          }
          throw err;
        }
      }
      setPhase('trying');
      const target = serverPath(d.name.trim());
      const r = editing
        ? await api('PATCH', target, { body: patchBody(d, saved?.server, split), headers: saved?.etag ? { 'if-match': saved.etag } : {} })
        : await api('PUT', target, { body: putBody(d, split), headers: { 'if-none-match': '*' } });
      setDraft(withoutSecrets(d));
      onSaved(r.body);
    } catch (err) {
      setError(problemOf(err));
      const field = err instanceof ApiError ? fieldOfPath(err.path, d) : null;
      if (field) setProblems({ [field]: 'The daemon refused this field: see why below.' });
      setLooked((n) => n + 1);
    } finally {
      setPhase('idle');
    }
  };

  const title = editing ? `Edit ${name}` : 'Add a server';
  const busy = phase !== 'idle';
  const cwdHint = d?.cwd.trim()
    ? `The server runs in ${d.cwd.trim()}: a relative path in the command is taken from there.`
    : 'Empty: the server runs in an empty directory of its own, which the daemon makes ' +
      '(a relative path in the command finds nothing there). Type a full path, from /, to run it in that directory.';
  const fixedTransport = editing
    ? html`<p class="hint">The transport of a saved server is fixed; delete it and add it again to change it.</p>`
    : null;
  return html`<section aria-labelledby="form-title">
    <h1 id="form-title" ref=${heading} tabindex="-1">${title}</h1>
    ${
      d === null
        ? error
          ? html`<${Alert} problem=${error} />`
          : html`<${Busy} text="Loading…" />`
        : html` <form class="server-form" onSubmit=${save} aria-busy=${busy ? 'true' : 'false'} novalidate>
            <fieldset class="transport-choice">
              <legend>Transport</legend>
              ${['http', 'stdio'].map(
                (t) =>
                  html`<div class="radio">
                    <input
                      type="radio"
                      id=${`transport-${t}`}
                      name="transport"
                      value=${t}
                      checked=${d.transport === t}
                      disabled=${editing}
                      onChange=${() => set({ transport: /** @type {'http' | 'stdio'} */ (t) })}
                    />
                    <label for=${`transport-${t}`}>${t === 'http' ? 'HTTP (a URL)' : 'stdio (a command)'}</label>
                  </div>`,
              )}
              ${fixedTransport}
            </fieldset>
            ${
              d.transport === 'http'
                ? html`<${Field}
                    id="url"
                    label="URL"
                    value=${d.url}
                    problems=${problems}
                    mono=${true}
                    hint="https://… or http://… (a network you trust)."
                    onInput=${(/** @type {string} */ v) => set({ url: v })}
                  />`
                : html`<${Field}
                      id="command"
                      label="Command"
                      value=${d.command}
                      problems=${problems}
                      mono=${true}
                      onBlur=${left('command')}
                      hint="Typed as in a shell: quotes are honoured, but no shell runs (no ~, no $VARIABLES)."
                      onInput=${(/** @type {string} */ v) => set({ command: v })}
                    />
                    <${Field}
                      id="cwd"
                      label="Working directory"
                      value=${d.cwd}
                      problems=${problems}
                      mono=${true}
                      onBlur=${left('cwd')}
                      hint=${cwdHint}
                      onInput=${(/** @type {string} */ v) => set({ cwd: v })}
                    />`
            }
            <${Field}
              id="name"
              label="Name"
              value=${d.name}
              problems=${problems}
              readOnly=${editing}
              hint=${editing ? 'The name of a saved server is fixed.' : 'Suggested from the URL or the command until you edit it.'}
              onInput=${(/** @type {string} */ v) => set({ name: v, nameEdited: v !== '' })}
            />
            ${
              d.transport === 'http'
                ? html`<${HttpSecrets} d=${d} set=${set} problems=${problems} />`
                : html`<${EnvSecrets} d=${d} set=${set} problems=${problems} />`
            }
            <${Alert} title="Not saved: the daemon refused it, and nothing was changed." problem=${error} />
            ${phase === 'trying' ? html`<${Busy} text="Trying the server…" />` : null}
            <div class="actions">
              <button type="submit" class="primary" disabled=${busy}>${editing ? 'Save changes' : 'Save'}</button>
              <button type="button" onClick=${onCancel}>Cancel</button>
            </div>
          </form>`
    }
  </section>`;
}
