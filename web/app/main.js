/// <reference lib="dom" />
// The web settings pane (issue 12 item 2): one page, served by the daemon at
// /ui/, talking only to the daemon's API by the cookie the one-time login
// link set. Views by hash route: #/servers, #/new, #/servers/NAME (edit),
// #/tools/NAME (a server's saved tools), #/sign-ins, #/sessions, #/sessions/ID, #/gateways, #/extensions.
// Without a live cookie session the page says how to get one, and nothing else.

import { logout, startSession, whenLoggedOut, whenTokenKept, api, problemOf } from './api.js';
import { html, render, useEffect, useState } from './vendor.js';
import { ServersView, checkText } from './servers.js';
import { ServerForm } from './form.js';
import { SignInsView, useSignIns } from './sign-ins.js';
import { SessionsView, SessionView } from './sessions.js';
import { ToolsView } from './tools.js';
import { GatewaysView } from './gateways.js';
import { ExtensionsView } from './extensions.js';
import { Alert, Busy } from './ui.js';

/** @typedef {'servers' | 'new' | 'edit' | 'tools' | 'sign-ins' | 'sessions' | 'session' | 'gateways' | 'extensions'} View */
/** @typedef {{ view: View, arg: string | null }} Route */
/** @typedef {{ text: string, tone: string, signIn?: string, view: Route['view'] }} Status */

/** The route a hash names; anything else is the servers view. @param {string} hash @returns {Route} */
export function routeOf(hash) {
  const [, view = '', arg] = /^#\/([^/]*)(?:\/(.*))?$/.exec(hash) ?? [];
  /** @param {string | undefined} a */
  const decoded = (a) => {
    try {
      return a ? decodeURIComponent(a) : null;
    } catch {
      return null;
    }
  };
  if (view === 'new') return { view: 'new', arg: null };
  if (view === 'servers' && decoded(arg)) return { view: 'edit', arg: decoded(arg) };
  if (view === 'tools' && decoded(arg)) return { view: 'tools', arg: decoded(arg) };
  if (view === 'sign-ins') return { view: 'sign-ins', arg: null };
  if (view === 'gateways') return { view: 'gateways', arg: null };
  if (view === 'extensions') return { view: 'extensions', arg: null };
  if (view === 'sessions') return decoded(arg) ? { view: 'session', arg: decoded(arg) } : { view: 'sessions', arg: null };
  return { view: 'servers', arg: null };
}

function useRoute() {
  const [route, setRoute] = useState(() => routeOf(location.hash));
  useEffect(() => {
    const on = () => setRoute(routeOf(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

const TABS = /** @type {const} */ ([
  ['servers', '#/servers', 'Servers'],
  ['sign-ins', '#/sign-ins', 'MCP sign-ins'],
  ['sessions', '#/sessions', 'Sessions'],
  ['gateways', '#/gateways', 'Gateways'],
  ['extensions', '#/extensions', 'Extensions'],
]);

/** @param {Route} route */
const tabOf = (route) =>
  route.view === 'new' || route.view === 'edit' || route.view === 'tools' ? 'servers' : route.view === 'session' ? 'sessions' : route.view;

/** The logged-in pane. @param {{ onLogout: () => void }} p */
function Pane({ onLogout }) {
  const route = useRoute();
  const [servers, setServers] = useState(/** @type {any[] | null} */ (null));
  const [invalid, setInvalid] = useState(/** @type {any} */ (null));
  const [loadError, setLoadError] = useState(/** @type {{ code: string, message: string } | null} */ (null));
  const [status, setStatus] = useState(/** @type {Status | null} */ (null));
  const refresh = async () => {
    try {
      const r = await api('GET', '/v1/mcp/servers');
      setServers(r.body.servers);
      setInvalid(r.body.invalid);
      setLoadError(null);
    } catch (err) {
      setLoadError(problemOf(err));
    }
  };
  // A status belongs to the view it was said in (a save's, to the list it returns to): another view does not show it.
  /** @param {{ text: string, tone: string }} m */
  const say = (m) => setStatus({ ...m, view: routeOf(location.hash).view });
  const signIns = useSignIns(() => {
    refresh();
  }, say);
  useEffect(() => {
    refresh();
  }, [route.view, route.arg]);
  /** @param {string} hash */
  const go = (hash) => {
    location.hash = hash;
  };
  /** @param {string} name */
  const signIn = (name) => {
    signIns.start(name);
    go('#/sign-ins');
  };
  /** @param {any} r */
  const saved = (r) => {
    const needs = r.check?.tried && r.check.result === 'needs_sign_in';
    const text = `Saved ${r.server.name}: ${checkText(r.check)}.`;
    setStatus({ text, tone: needs ? 'warn' : 'ok', signIn: needs ? r.server.name : undefined, view: 'servers' });
    go('#/servers');
  };

  let view;
  if (route.view === 'new' || route.view === 'edit') {
    view = html`<${ServerForm} key=${route.arg ?? '+new'} name=${route.arg} onSaved=${saved} onCancel=${() => go('#/servers')} />`;
  } else if (route.view === 'tools' && route.arg) view = html`<${ToolsView} key=${route.arg} name=${route.arg} />`;
  else if (route.view === 'sign-ins') view = html`<${SignInsView} servers=${servers} signIns=${signIns} />`;
  else if (route.view === 'gateways') view = html`<${GatewaysView} say=${say} />`;
  else if (route.view === 'extensions') view = html`<${ExtensionsView} say=${say} />`;
  else if (route.view === 'sessions') view = html`<${SessionsView} go=${go} say=${say} />`;
  else if (route.view === 'session' && route.arg) view = html`<${SessionView} key=${route.arg} id=${route.arg} go=${go} say=${say} />`;
  else
    view = html`<${ServersView}
      servers=${servers}
      loadError=${loadError}
      invalid=${invalid}
      refresh=${refresh}
      say=${say}
      signIn=${signIn}
    />`;

  // The status's own Sign in: a click, so the sign-in may open its tab.
  const signInNow = () => {
    const name = status?.signIn;
    setStatus(null);
    if (name) signIn(name);
  };
  const signInButton = status?.signIn
    ? html` <button type="button" class="primary" onClick=${signInNow}>Sign in to ${status.signIn}</button>`
    : null;
  const tab = tabOf(route);
  return html` <header class="top">
      <p class="brand">Albedo <span class="brand-sub">MCP settings</span></p>
      <nav aria-label="Sections">
        <ul>
          ${TABS.map(([id, href, text]) => html`<li><a href=${href} aria-current=${tab === id ? 'page' : undefined}>${text}</a></li>`)}
        </ul>
      </nav>
      <button type="button" class="logout" onClick=${onLogout}>Log out</button>
    </header>
    <main id="main">
      <div class="status-line" role="status">
        ${
          status && status.view === route.view
            ? html`<p class=${`status tone-${status.tone}`}>
                ${status.text} ${signInButton}
                <button type="button" class="small dismiss" onClick=${() => setStatus(null)}>Dismiss</button>
              </p>`
            : null
        }
      </div>
      ${view}
    </main>`;
}

/** Shown without a cookie session: how to get one, and nothing else. */
function LoggedOut() {
  return html`<main id="main" class="logged-out">
    <h1>Albedo</h1>
    <p>Open the link <code>albedo open</code> prints.</p>
  </main>`;
}

function App() {
  const [phase, setPhase] = useState(/** @type {'starting' | 'in' | 'out' | 'unreachable'} */ ('starting'));
  const [problem, setProblem] = useState(/** @type {{ code: string, message: string } | null} */ (null));
  useEffect(() => {
    whenLoggedOut(() => setPhase('out'));
    // Another tab logged in: the browser's cookie is that login's, and this page may use it too.
    whenTokenKept(() => {
      startSession().then(
        (ok) => ok && setPhase('in'),
        () => {},
      );
    });
    startSession().then(
      (ok) => setPhase(ok ? 'in' : 'out'),
      (err) => {
        setProblem(problemOf(err));
        setPhase('unreachable');
      },
    );
  }, []);
  const out = () => {
    logout().catch(() => setPhase('out'));
  };
  if (phase === 'starting') return html`<main id="main"><${Busy} text="Connecting to the daemon…" /></main>`;
  if (phase === 'out') return html`<${LoggedOut} />`;
  if (phase === 'unreachable')
    return html`<main id="main">
      <h1>Albedo</h1>
      <${Alert} problem=${problem} />
    </main>`;
  return html`<${Pane} onLogout=${out} />`;
}

const root = document.getElementById('app');
if (root) render(html`<${App} />`, root);
