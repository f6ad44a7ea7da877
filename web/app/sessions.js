/// <reference lib="dom" />
// The daemon's sessions (GET /v1/sessions) and one session as a model
// would see it: its servers' live states, its advertised tools (name, the
// first line of the description, parameters, input schema: tools.js) and
// its MCP context text, kept up to date from the session's event stream
// (SSE: server_state, capabilities_changed, …). A user can open a session
// for a profile to look, and close it. A session opened here is leased
// (docs/api.md "Leases"): the page renews it while it is open, so a session
// left behind by a closed tab expires.

import { ApiError, api, eventsUrl, problemOf, sessionPath } from './api.js';
import { html, useEffect, useRef, useState } from './vendor.js';
import { liveStateLabel } from '../shared/labels.js';
import { Alert, Badge, Busy, Hidden, asText, useFocusOnShow } from './ui.js';
import { Tool } from './tools.js';
import { isAcp } from '../shared/acp.js';
import { ACP_POLL_MS, AcpFacts, AcpMark, acpSessions, useAcpSession } from './acp.js';

/** The provider profiles the daemon shapes tool schemas for (services/catalogue/schema/profiles.ts). */
export const PROFILES = ['portable', 'anthropic', 'openai', 'openai-strict', 'gemini', 'bedrock'];

/** The events that change what the session shows (the rest are only listed). */
const RELOADING = ['server_state', 'capabilities_changed', 'catalogue_refreshed', 'warning'];

/** @type {Map<string, ReturnType<typeof setInterval>>} The sessions this page opened, each with its renewal timer. */
const kept = new Map();

/**
 * Renews the lease of a session this page opened, at a third of its ttl, until the page closes it or it is gone.
 * @param {string} id @param {number} ttlMs
 */
function keep(id, ttlMs) {
  if (kept.has(id)) return;
  const renew = () =>
    api('POST', sessionPath(id, '/lease')).catch((err) => {
      // Gone, or this page no longer logged in: nothing more to renew.
      if (err instanceof ApiError && [401, 403, 404].includes(err.status)) forget(id);
    });
  kept.set(id, setInterval(renew, Math.max(1_000, Math.floor(ttlMs / 3))));
}

/** @param {string} id */
function forget(id) {
  clearInterval(kept.get(id));
  kept.delete(id);
}

/** @param {{ servers: any[] }} p */
function LiveServers({ servers }) {
  if (!servers.length) return html`<p class="empty">No server is in this session.</p>`;
  return html`<ul class="live">
    ${servers.map(
      (s) =>
        html`<li key=${s.name}>
          <span class="live-name">${s.name}</span> <${Badge} label=${liveStateLabel(s.state)} />
          ${s.reason ? html` <span class="reason">${asText(s.reason)}</span>` : null}
        </li>`,
    )}
  </ul>`;
}

/** The sessions view: the list, and a form that opens one. @param {{ go: (hash: string) => void, say: (m: any) => void }} p */
export function SessionsView({ go, say }) {
  /** @type {{ current: HTMLHeadingElement | null }} */
  const heading = useRef(null);
  useFocusOnShow(heading);
  const [sessions, setSessions] = useState(/** @type {any[] | null} */ (null));
  const [profile, setProfile] = useState('portable');
  const [problem, setProblem] = useState(/** @type {{ code: string, message: string } | null} */ (null));
  const [opening, setOpening] = useState(false);
  // The ACP sessions by id; null from a daemon without them (then nothing more is shown).
  const [acp, setAcp] = useState(/** @type {Map<string, any> | null} */ (null));
  const load = () =>
    Promise.all([api('GET', '/v1/sessions'), acpSessions()]).then(
      ([r, a]) => {
        setSessions(r.body.sessions);
        setAcp(a);
        setProblem((p) => (p?.code === 'ALBEDO_UNREACHABLE' ? null : p));
      },
      (err) => setProblem(problemOf(err)),
    );
  useEffect(() => {
    load();
    // Adapters attach and let go, and sessions open and close elsewhere: read again while the view is open.
    const t = setInterval(load, ACP_POLL_MS);
    return () => clearInterval(t);
  }, []);

  /** @param {Event} e */
  const open = async (e) => {
    e.preventDefault();
    setProblem(null);
    setOpening(true);
    try {
      const r = await api('POST', '/v1/sessions', { body: { profile } });
      keep(r.body.id, r.body.lease?.ttlMs ?? 300_000);
      go(`#/sessions/${encodeURIComponent(r.body.id)}`);
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      setOpening(false);
    }
  };
  /** @param {string} id */
  const close = async (id) => {
    setProblem(null);
    let done = false;
    try {
      await api('DELETE', sessionPath(id));
      forget(id);
      done = true;
    } catch (err) {
      setProblem(problemOf(err));
    }
    await load();
    // Said once the list no longer shows it.
    if (done) say({ text: 'The session was closed.', tone: 'ok' });
  };

  return html`<section aria-labelledby="sessions-title">
    <h1 id="sessions-title" ref=${heading} tabindex="-1">Sessions</h1>
    <p class="lead">A session is what a model sees: the tools of the servers it could reach, and their context.</p>
    <form class="inline" onSubmit=${open} aria-busy=${opening ? 'true' : 'false'}>
      <label for="profile">Profile</label>
      <select
        id="profile"
        value=${profile}
        onChange=${(/** @type {Event} */ e) => setProfile(/** @type {HTMLSelectElement} */ (e.currentTarget).value)}
      >
        ${PROFILES.map((p) => html`<option value=${p}>${p}</option>`)}
      </select>
      <button type="submit" class="primary" disabled=${opening}>Open a session</button>
    </form>
    ${opening ? html`<${Busy} text="Opening a session: connecting its servers…" />` : null}
    <${Alert} problem=${problem} />
    ${
      sessions === null
        ? problem
          ? null
          : html`<${Busy} text="Loading…" />`
        : sessions.length === 0
          ? html`<p class="empty">No session is open.</p>`
          : html`<ul class="cards">
              ${sessions.map(
                (s) =>
                  html`<li class="card" key=${s.id} data-session=${s.id}>
                    <h2 class="card-title">
                      <a href=${`#/sessions/${encodeURIComponent(s.id)}`}>Session ${s.id.slice(0, 8)}<${Hidden} text=${s.id.slice(8)} /></a>
                      ${isAcp(s) ? html` <${AcpMark} />` : null}
                    </h2>
                    <p>Profile <code>${s.profile}</code>, generation ${s.generation}, ${s.tools === 1 ? '1 tool' : `${s.tools} tools`}</p>
                    <${LiveServers} servers=${s.servers} />
                    ${acp?.get(s.id) ? html`<${AcpFacts} a=${acp.get(s.id)} />` : null}
                    <div class="actions">
                      <button type="button" onClick=${() => close(s.id)}>Close<${Hidden} text=${` session ${s.id.slice(0, 8)}`} /></button>
                    </div>
                  </li>`,
              )}
            </ul>`
    }
  </section>`;
}

/** One session: servers, tools, context, live. @param {{ id: string, go: (hash: string) => void, say: (m: any) => void }} p */
export function SessionView({ id, go, say }) {
  /** @type {{ current: HTMLHeadingElement | null }} */
  const heading = useRef(null);
  useFocusOnShow(heading);
  const [view, setView] = useState(/** @type {{ session: any, tools: any, context: any } | null} */ (null));
  const [problem, setProblem] = useState(/** @type {{ code: string, message: string } | null} */ (null));
  const [events, setEvents] = useState(/** @type {Array<{ id: string, name: string, data: string }>} */ ([]));
  const [closed, setClosed] = useState(false);
  const acp = useAcpSession(id, !closed && !!view && isAcp(view.session));

  const load = async () => {
    try {
      const [session, tools, context] = await Promise.all(['', '/tools', '/context'].map((s) => api('GET', sessionPath(id, s))));
      setView({ session: session.body, tools: tools.body, context: context.body });
      setProblem(null);
    } catch (err) {
      setProblem(problemOf(err));
    }
  };
  useEffect(() => {
    load();
    // The browser sends the cookie with a same-origin EventSource; it reconnects by itself with Last-Event-ID.
    /** @type {EventSource} */
    let es;
    let gone = false;
    const open = () => {
      const url = eventsUrl(id);
      const source = new EventSource(url);
      es = source;
      for (const name of [...RELOADING, 'server_probed', 'session_closed'])
        source.addEventListener(name, (e) => {
          const m = /** @type {MessageEvent} */ (e);
          setEvents((old) => [{ id: m.lastEventId, name, data: String(m.data) }, ...old].slice(0, 20));
          if (name === 'session_closed') {
            source.close();
            setClosed(true);
          } else if (RELOADING.includes(name)) load();
        });
      // A reconnection refused (a non-200 ends an EventSource for good) because another tab's login changed the
      // token since: open the stream again with the new one.
      source.addEventListener('error', () => {
        if (!gone && source.readyState === EventSource.CLOSED && eventsUrl(id) !== url) open();
      });
    };
    open();
    return () => {
      gone = true;
      es.close();
    };
  }, [id]);

  const close = async () => {
    try {
      await api('DELETE', sessionPath(id));
      forget(id);
      go('#/sessions');
      say({ text: 'The session was closed.', tone: 'ok' });
    } catch (err) {
      setProblem(problemOf(err));
    }
  };

  const s = view?.session;
  return html`<section aria-labelledby="session-title">
    <h1 id="session-title" ref=${heading} tabindex="-1">
      Session ${id.slice(0, 8)}<${Hidden} text=${id.slice(8)} />${view && isAcp(view.session) ? html` <${AcpMark} />` : null}
    </h1>
    <p><a href="#/sessions">All sessions</a></p>
    <${Alert} problem=${problem} />
    ${closed ? html`<p class="notice" role="status">This session was closed.</p>` : null}
    ${
      !view
        ? problem
          ? null
          : html`<${Busy} text="Loading…" />`
        : html` <p>Profile <code>${s.profile}</code>, generation ${s.generation}, ${s.tools === 1 ? '1 tool' : `${s.tools} tools`}.</p>
            ${closed ? null : html`<div class="actions"><button type="button" onClick=${close}>Close this session</button></div>`}
            ${
              acp.acp
                ? html`<h2>ACP session</h2>
                    <${AcpFacts} a=${acp.acp} />`
                : null
            }
            <${Alert} problem=${acp.problem} />
            <h2>Servers</h2>
            <${LiveServers} servers=${s.servers} />
            ${
              s.warnings?.length
                ? html`<h2>Warnings</h2>
                    <ul class="warnings">
                      ${s.warnings.map((/** @type {any} */ w) => html`<li>${asText(w)}</li>`)}
                    </ul>`
                : null
            }
            <h2>Tools</h2>
            ${
              view.tools.tools.length
                ? html`<ul class="tools-list">
                    ${view.tools.tools.map((/** @type {any} */ t) => html`<${Tool} key=${t.name} tool=${t} />`)}
                  </ul>`
                : html`<p class="empty">No tool is advertised.</p>`
            }
            <h2>MCP context</h2>
            <pre class="context" tabindex="0">${asText(view.context.context)}</pre>
            <h2>Recent events</h2>
            ${
              events.length
                ? html`<ol class="events">
                    ${events.map((e) => html`<li key=${e.id}><code>${e.name}</code> <span class="data">${e.data}</span></li>`)}
                  </ol>`
                : html`<p class="empty">None since this page opened.</p>`
            }`
    }
  </section>`;
}
