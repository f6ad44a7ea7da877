/// <reference lib="dom" />
// The servers view: every configured server (GET /v1/mcp/servers) with the
// facts `albedo mcp list`, `albedo status` and the terminal screen show, in
// the same order and words (web/shared/labels.js): type, state, tools,
// sign-in, problem; then where it is, its description (first line, the rest
// on demand), and what its entry exposes (warnings). Its actions: edit
// (the form), enable (tried first: the strict save), disable, delete (after
// a confirmation) and, for one that needs it, sign in.

import { api, problemOf, serverPath } from './api.js';
import { html, useRef, useState } from './vendor.js';
import { EMPTY, NO_AUTH, authLabel, problemText, savedStateLabel, toolsLabel, transportOf } from '../shared/labels.js';
import { joinCommand } from './form-model.js';
import { Alert, Badge, Busy, Clipped, Confirm, Hidden, asText, useFocusOnShow } from './ui.js';

/** What a write's `check` says, in words. @param {any} check */
export function checkText(check) {
  if (!check) return '';
  if (check.tried) return check.result === 'needs_sign_in' ? 'it needs a sign-in' : 'connected';
  return check.reason === 'disabled' ? 'disabled, so not tried' : 'not tried';
}

/** Where a server is: its URL, or its command line. @param {any} s */
const whereOf = (s) => (transportOf(s.config) === 'http' ? s.config.url : joinCommand(s.config.command ?? '', s.config.args ?? []));

/** Whether a server can be signed in to from the list: http, needing a sign-in. @param {any} s */
export const needsSignIn = (s) => !!s.auth && (s.auth.state === 'needs_sign_in' || s.auth.state === 'signed_out');

/**
 * @typedef {object} ServersProps
 * @property {any[] | null} servers null while the first read is under way
 * @property {{ code: string, message: string } | null} loadError
 * @property {any} invalid the broken file's issues, when extensions.json is broken
 * @property {() => Promise<void>} refresh
 * @property {(m: { text: string, tone: string, signIn?: string }) => void} say
 * @property {(name: string) => void} signIn
 */

/** The one-line labels the servers view shares with `albedo mcp list`, `status` and the /mcp screen (docs/web.md). */
export const COLUMNS = ['Type', 'State', 'Tools', 'Sign-in', 'Problem'];

/** What the entry exposes (`server.warnings`): each as the daemon says it, as text. @param {{ server: any }} p */
function Warnings({ server: s }) {
  if (!s.warnings?.length) return null;
  return html`<ul class="entry-warnings" aria-label=${`Warnings about ${s.name}`}>
    ${s.warnings.map(
      (/** @type {any} */ w, /** @type {number} */ i) =>
        html`<li key=${i} class="tone-warn">
          <span class="symbol" aria-hidden="true">!</span> <strong>Warning</strong> ${asText(w.message)}
        </li>`,
    )}
  </ul>`;
}

/** What the confirmation of a delete says. @param {string} name */
const deleteText = (name) =>
  `${name} is removed from extensions.json, and everything creds.json holds for it (typed secrets, its sign-in) is deleted.`;

/**
 * @param {{
 *   server: any,
 *   busy: string | null,
 *   act: (s: any, what: 'enable' | 'disable') => void,
 *   ask: (s: any) => void,
 *   signIn: (n: string) => void,
 * }} p
 */
function ServerCard({ server: s, busy, act, ask, signIn }) {
  const transport = transportOf(s.config);
  const hide = (/** @type {string} */ verb) => html`${verb}<${Hidden} text=${` ${s.name}`} />`;
  const signInButton =
    needsSignIn(s) && s.enabled
      ? html`<button type="button" onClick=${() => signIn(s.name)}>Sign in<${Hidden} text=${` to ${s.name}`} /></button>`
      : null;
  const [type, state, tools, signInWord, problem] = COLUMNS;
  const auth = authLabel(s.auth, transport);
  return html`<li class="card" data-server=${s.name}>
    <h2 class="card-title">${s.name}</h2>
    <dl class="facts">
      <div>
        <dt>${type}</dt>
        <dd class="transport">${transport}</dd>
      </div>
      <div>
        <dt>${state}</dt>
        <dd><${Badge} label=${savedStateLabel(s.state)} /></dd>
      </div>
      <div>
        <dt>${tools}</dt>
        <dd class="tools">
          ${
            s.tools === null
              ? toolsLabel(s.tools)
              : html`<a href=${`#/tools/${encodeURIComponent(s.name)}`}>${toolsLabel(s.tools)}<${Hidden} text=${` of ${s.name}`} /></a>`
          }
        </dd>
      </div>
      <div>
        <dt>${signInWord}</dt>
        <dd>${auth === NO_AUTH ? EMPTY : html`<${Badge} label=${auth} />`}</dd>
      </div>
      <div>
        <dt>${problem}</dt>
        <dd class="problem">
          ${
            s.lastError
              ? html`<${Clipped} text=${problemText(s)} what=${`the problem of ${s.name}`} /><code class="code"
                    >${asText(s.lastError.code)}</code
                  >`
              : EMPTY
          }
        </dd>
      </div>
    </dl>
    <p class="where"><code>${asText(whereOf(s))}</code></p>
    <${Clipped} className="description" text=${s.description} what=${`the description of ${s.name}`} />
    <${Warnings} server=${s} />
    ${busy ? html`<${Busy} text=${busy} />` : null}
    <div class="actions">
      <a class="button" href=${`#/servers/${encodeURIComponent(s.name)}`}>${hide('Edit')}</a>
      ${
        s.enabled
          ? html`<button type="button" disabled=${!!busy} onClick=${() => act(s, 'disable')}>${hide('Disable')}</button>`
          : html`<button type="button" disabled=${!!busy} onClick=${() => act(s, 'enable')}>${hide('Enable')}</button>`
      }
      ${signInButton}
      <button type="button" class="danger" disabled=${!!busy} onClick=${() => ask(s)}>${hide('Delete')}</button>
    </div>
  </li>`;
}

/** The servers view. @param {ServersProps} p */
export function ServersView({ servers, loadError, invalid, refresh, say, signIn }) {
  /** @type {{ current: HTMLHeadingElement | null }} */
  const heading = useRef(null);
  useFocusOnShow(heading);
  const [busy, setBusy] = useState(/** @type {Record<string, string>} */ ({}));
  const [problem, setProblem] = useState(/** @type {{ code: string, message: string } | null} */ (null));
  const [asking, setAsking] = useState(/** @type {any} */ (null));
  /** @param {string} name @param {string | null} text */
  const mark = (name, text) =>
    setBusy((b) => {
      const next = { ...b };
      if (text) next[name] = text;
      else delete next[name];
      return next;
    });

  /** @param {any} s @param {'enable' | 'disable'} what */
  const act = async (s, what) => {
    setProblem(null);
    mark(s.name, what === 'enable' ? 'Trying the server…' : 'Disabling…');
    let done = null;
    try {
      const r = await api('POST', serverPath(s.name, `/${what}`));
      done = `${what === 'enable' ? 'Enabled' : 'Disabled'} ${s.name}: ${checkText(r.body.check)}.`;
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      mark(s.name, null);
      await refresh();
      // Said once the list shows it: the status line never runs ahead of the rows.
      if (done) say({ text: done, tone: 'ok' });
    }
  };
  const remove = async () => {
    const s = asking;
    setAsking(null);
    setProblem(null);
    mark(s.name, 'Deleting…');
    let done = false;
    try {
      await api('DELETE', serverPath(s.name));
      done = true;
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      mark(s.name, null);
      await refresh();
      if (done) say({ text: `Deleted ${s.name} and its stored credentials.`, tone: 'ok' });
    }
  };

  return html`<section aria-labelledby="servers-title">
    <div class="view-head">
      <h1 id="servers-title" ref=${heading} tabindex="-1">Servers</h1>
      <a class="button primary" href="#/new">Add a server</a>
    </div>
    ${
      invalid
        ? html`<${Alert}
            title="extensions.json is broken: the servers shown are the last valid ones"
            problem=${{ code: 'ALBEDO_INVALID_CONFIG', message: JSON.stringify(invalid) }}
          />`
        : null
    }
    <${Alert} problem=${problem ?? loadError} />
    ${
      servers === null
        ? loadError
          ? null
          : html`<${Busy} text="Loading…" />`
        : servers.length === 0
          ? html`<p class="empty">No server is configured yet. Add one.</p>`
          : html`<ul class="cards">
              ${servers.map(
                (s) =>
                  html`<${ServerCard}
                    key=${s.name}
                    server=${s}
                    busy=${busy[s.name] ?? null}
                    act=${act}
                    ask=${setAsking}
                    signIn=${signIn}
                  />`,
              )}
            </ul>`
    }
    ${
      asking
        ? html`<${Confirm}
            title=${`Delete ${asking.name}?`}
            text=${deleteText(asking.name)}
            confirm=${`Delete ${asking.name}`}
            onConfirm=${remove}
            onCancel=${() => setAsking(null)}
          />`
        : null
    }
  </section>`;
}
