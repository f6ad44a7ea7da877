/// <reference lib="dom" />
// The extensions view (#/extensions), as the /mcp screen's X view: the two
// extensions, `mcp` (the configured servers' tools) and `editor-mcp` (an
// editor's own servers, `albedo acp`), each with its default for every
// session (`enabled` in extensions.json: GET and PATCH /v1/mcp; the default
// given back takes the key out of the file, the built-in default is on) and,
// for each open session, its own choice and what is in force
// (GET /v1/sessions `extensions`; PATCH /v1/sessions/{id}: a switch chooses,
// the default given back is null). Read again every few seconds, so a change
// made elsewhere shows; a refusal shows the daemon's code, and the view reads
// again what is in force.

import { api, problemOf, sessionPath } from './api.js';
import { html, useEffect, useRef, useState } from './vendor.js';
import { EXTENSIONS, isAcp, switchLabel } from '../shared/acp.js';
import { AcpMark } from './acp.js';
import { Alert, Badge, Busy, Hidden, asText, useFocusOnShow } from './ui.js';

/** Another client may switch an extension while the view is open: it reads everything again this often. */
const POLL_MS = 3_000;

const LEAD =
  'An extension brings a session tools: mcp, those of the servers you configured; editor-mcp, those of the servers ' +
  'an editor sends through albedo acp. Each has a default for every session (enabled in extensions.json); a session ' +
  'may make its own choice, which wins.';

/** A session as the view names it: its id's first eight characters. @param {string} id */
const short = (id) => id.slice(0, 8);

/**
 * The extensions' defaults: a switch each, and the built-in default (on) again.
 * @param {{ enabled: any, busy: boolean, set: (name: string, on: boolean | null) => void }} p
 */
function Defaults({ enabled, busy, set }) {
  return html`<table class="extensions" data-defaults="">
    <caption class="visually-hidden">
      The extensions' defaults for every session
    </caption>
    <thead>
      <tr>
        <th scope="col">Extension</th>
        <th scope="col">Brings</th>
        <th scope="col">Default</th>
        <th scope="col"><span class="visually-hidden">Change</span></th>
      </tr>
    </thead>
    <tbody>
      ${EXTENSIONS.map(([name, brings]) => {
        const on = enabled?.[name] !== false;
        return html`<tr key=${name} data-extension=${name}>
          <th scope="row"><code>${name}</code></th>
          <td>${brings}</td>
          <td class="default"><${Badge} label=${switchLabel(on)} /></td>
          <td class="row-actions">
            <button type="button" class="small" disabled=${busy} onClick=${() => set(name, !on)}>
              Switch ${on ? 'off' : 'on'}<${Hidden} text=${` ${name} for every session`} />
            </button>
            <button type="button" class="small" disabled=${busy} onClick=${() => set(name, null)}>
              Built-in default (on)<${Hidden} text=${` for ${name}`} />
            </button>
          </td>
        </tr>`;
      })}
    </tbody>
  </table>`;
}

/**
 * One session's extensions: its own choice (or the default deciding) and what is in force; a switch chooses the
 * opposite of what is in force, Use the default gives the choice back.
 * @param {{ s: any, busy: boolean, set: (s: any, name: string, on: boolean | null) => void }} p
 */
function SessionExtensions({ s, busy, set }) {
  const id = short(String(s.id));
  if (!s.extensions) return html`<p class="empty">This daemon does not say what this session has chosen.</p>`;
  return html`<table class="extensions">
    <caption class="visually-hidden">
      The extensions of session ${id}
    </caption>
    <thead>
      <tr>
        <th scope="col">Extension</th>
        <th scope="col">Chosen</th>
        <th scope="col">In force</th>
        <th scope="col"><span class="visually-hidden">Change</span></th>
      </tr>
    </thead>
    <tbody>
      ${EXTENSIONS.map(([name]) => {
        const x = s.extensions[name] ?? { chosen: null, effective: false };
        return html`<tr key=${name} data-extension=${name}>
          <th scope="row"><code>${name}</code></th>
          <td class="chosen">${x.chosen === null ? 'the default' : html`<${Badge} label=${switchLabel(x.chosen)} />`}</td>
          <td class="effective"><${Badge} label=${switchLabel(x.effective === true)} /></td>
          <td class="row-actions">
            <button type="button" class="small" disabled=${busy} onClick=${() => set(s, name, !x.effective)}>
              Switch ${x.effective ? 'off' : 'on'}<${Hidden} text=${` ${name} for session ${id}`} />
            </button>
            ${
              x.chosen === null
                ? null
                : html`<button type="button" class="small" disabled=${busy} onClick=${() => set(s, name, null)}>
                    Use the default<${Hidden} text=${` for ${name} in session ${id}`} />
                  </button>`
            }
          </td>
        </tr>`;
      })}
    </tbody>
  </table>`;
}

/** The extensions view. @param {{ say: (m: { text: string, tone: string }) => void }} p */
export function ExtensionsView({ say }) {
  /** @type {{ current: HTMLHeadingElement | null }} */
  const heading = useRef(null);
  useFocusOnShow(heading);
  const [settings, setSettings] = useState(/** @type {{ enabled: any, invalid: any } | null} */ (null));
  const [sessions, setSessions] = useState(/** @type {any[] | null} */ (null));
  const [problem, setProblem] = useState(/** @type {{ code: string, message: string } | null} */ (null));
  const [busy, setBusy] = useState(/** @type {string | null} */ (null));
  // Counts the writes begun and ended: a read that began before a write's end may predate it, and is dropped.
  const writes = useRef(0);

  const load = () => {
    const at = writes.current;
    return Promise.all([api('GET', '/v1/mcp'), api('GET', '/v1/sessions')]).then(
      ([m, s]) => {
        if (at !== writes.current) return;
        setSettings({ enabled: m.body.enabled, invalid: m.body.invalid });
        setSessions(s.body.sessions);
        setProblem((p) => (p?.code === 'ALBEDO_UNREACHABLE' ? null : p));
      },
      (err) => {
        if (at === writes.current) setProblem(problemOf(err));
      },
    );
  };
  useEffect(() => {
    load();
    const t = setInterval(load, POLL_MS);
    return () => clearInterval(t);
  }, []);

  /**
   * One write with its busy words; then everything is read again (a refusal leaves what is in force shown), and
   * only then is the write said done, so the status line never runs ahead of the tables.
   */
  const write = async (/** @type {string} */ doing, /** @type {string} */ done, /** @type {() => Promise<unknown>} */ run) => {
    writes.current++;
    setProblem(null);
    setBusy(doing);
    let ok = false;
    try {
      await run();
      ok = true;
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      writes.current++;
      await load();
      setBusy(null);
      if (ok) say({ text: done, tone: 'ok' });
    }
  };
  const setDefault = (/** @type {string} */ name, /** @type {boolean | null} */ on) =>
    write(
      `Saving the default of ${name}…`,
      `${name}: ${on === null ? 'back to the built-in default (on)' : `switched ${on ? 'on' : 'off'}`} for every session.`,
      () => api('PATCH', '/v1/mcp', { body: { enabled: { [name]: on } } }),
    );
  const setChoice = (/** @type {any} */ s, /** @type {string} */ name, /** @type {boolean | null} */ on) =>
    write(
      `Switching ${name} for session ${short(s.id)}…`,
      `${name}: ${on === null ? 'the default decides again' : `switched ${on ? 'on' : 'off'}`} for session ${short(s.id)}.`,
      () => api('PATCH', sessionPath(s.id), { body: { extensions: { [name]: on } } }),
    );

  const broken = Array.isArray(settings?.invalid) ? settings.invalid.length > 0 : !!settings?.invalid;
  return html`<section aria-labelledby="extensions-title" aria-busy=${busy ? 'true' : 'false'}>
    <h1 id="extensions-title" ref=${heading} tabindex="-1">Extensions</h1>
    <p class="lead">${LEAD}</p>
    ${
      broken
        ? html`<${Alert}
            title="extensions.json is broken: the defaults shown are the last valid ones"
            problem=${{ code: 'ALBEDO_INVALID_CONFIG', message: JSON.stringify(settings?.invalid) }}
          />`
        : null
    }
    <div class="refusal"><${Alert} problem=${problem} /></div>
    ${busy ? html`<${Busy} text=${busy} />` : null}
    <h2>For every session</h2>
    ${
      settings
        ? html`<${Defaults} enabled=${settings.enabled} busy=${!!busy} set=${setDefault} />`
        : problem
          ? null
          : html`<${Busy} text="Loading…" />`
    }
    <h2>Each session</h2>
    ${
      sessions === null
        ? null
        : sessions.length === 0
          ? html`<p class="empty">No session is open.</p>`
          : html`<ul class="cards wide">
              ${sessions.map(
                (s) =>
                  html`<li class="card" key=${s.id} data-session=${asText(s.id)}>
                    <h3 class="card-title">
                      <a href=${`#/sessions/${encodeURIComponent(s.id)}`}
                        >Session ${short(asText(s.id))}<${Hidden} text=${asText(s.id).slice(8)} /></a
                      >${isAcp(s) ? html` <${AcpMark} />` : null}
                    </h3>
                    <${SessionExtensions} s=${s} busy=${!!busy} set=${setChoice} />
                  </li>`,
              )}
            </ul>`
    }
  </section>`;
}
