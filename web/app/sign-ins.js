/// <reference lib="dom" />
// MCP sign-ins (docs/design.md, "Sign-in"): the http servers that asked
// for a sign-in, each with Sign in (PUT /v1/auth/logins/mcp:NAME; the
// authorization page opens in a new tab and a link to it stays on the
// page), the sign-in's state until it completes or fails (polled), Cancel
// (DELETE) and Sign out (PATCH secrets { oauth: null }). The sign-ins in
// flight live in the app, not the view, so they go on while another view shows.

import { api, ApiError, loginPath, problemOf, serverPath } from './api.js';
import { html, useEffect, useRef, useState } from './vendor.js';
import { authLabel, loginStateLabel } from '../shared/labels.js';
import { Alert, Badge, Busy, Hidden, asText, useFocusOnShow } from './ui.js';

/** How often a pending sign-in is asked about. */
const POLL_MS = 1000;

/**
 * @typedef {object} Flow
 * @property {'starting' | 'pending' | 'completed' | 'failed' | 'signing_out'} state
 * @property {string | null} [url] the authorization page
 * @property {{ code: string, message: string } | null} [error]
 * @property {string | null} [account] the account a completed sign-in is for, when the authorization server named one
 */
/**
 * @typedef {object} SignIns
 * @property {Record<string, Flow>} flows the sign-ins in flight (or just over), by server name
 * @property {(name: string) => void} start called from a click: opens the new tab at once
 * @property {(name: string) => Promise<void>} cancel
 * @property {(name: string) => Promise<void>} signOut
 * @property {(names: string[]) => void} resume shows sign-ins pending from before this page
 */

/**
 * What a completed sign-in says, always naming the account (a sign-in
 * completed by someone else's account must not pass unnoticed).
 * @param {string} name @param {string | null | undefined} account
 */
export const signedInText = (name, account) =>
  account ? `Signed in to ${name} as ${account}.` : `Signed in to ${name}; the authorization server named no account.`;

/** Whether a server is one MCP sign-ins lists: http with an OAuth record. @param {any} s */
export const asksForSignIn = (s) => !!s.auth && ['needs_sign_in', 'signed_out', 'signed_in'].includes(s.auth.state);

/**
 * The sign-ins in flight and their actions. `changed` is called when a
 * server's sign-in state moved (the list should be read again); `say`
 * shows a status message.
 * @param {() => void} changed @param {(m: { text: string, tone: string }) => void} say
 * @returns {SignIns}
 */
export function useSignIns(changed, say) {
  const [flows, setFlows] = useState(/** @type {Record<string, Flow>} */ ({}));
  /** @type {{ current: Map<string, number> }} */
  const timers = useRef(new Map());
  /** @param {string} name @param {Flow | null} flow */
  const put = (name, flow) =>
    setFlows((f) => {
      const next = { ...f };
      if (flow) next[name] = flow;
      else delete next[name];
      return next;
    });
  /** @param {string} name */
  const stop = (name) => {
    window.clearTimeout(timers.current.get(name));
    timers.current.delete(name);
  };
  useEffect(
    () => () => {
      for (const id of timers.current.values()) window.clearTimeout(id);
    },
    [],
  );

  /** A sign-in over and done: its row and the status say who is signed in. @param {string} name @param {any} l */
  const completed = (name, l) => {
    const account = typeof l.auth?.account === 'string' ? l.auth.account : null;
    put(name, { state: 'completed', account });
    say({ text: signedInText(name, account), tone: 'ok' });
  };

  /** Asks about the sign-in until it is no longer pending. @param {string} name @param {string | null} url */
  const poll = (name, url) => {
    stop(name);
    const tick = async () => {
      try {
        const l = (await api('GET', loginPath(name))).body;
        if (!timers.current.has(name)) return;
        if (l.state === 'pending') {
          timers.current.set(name, window.setTimeout(tick, POLL_MS));
          return;
        }
        stop(name);
        const error = l.error ?? { code: 'ALBEDO_SIGN_IN_FAILED', message: 'the sign-in failed' };
        if (l.state === 'completed') completed(name, l);
        else put(name, { state: 'failed', error });
        changed();
      } catch (err) {
        if (!timers.current.has(name)) return;
        stop(name);
        put(name, { state: 'failed', error: problemOf(err) });
      }
    };
    timers.current.set(name, window.setTimeout(tick, POLL_MS));
    put(name, { state: 'pending', url, error: null });
  };

  return {
    flows,
    start(name) {
      // Opened now, inside the click: a tab opened later, when the URL arrives, is a pop-up the browser blocks.
      // The new tab must not reach back into this page (window.opener): cut before it leaves about:blank.
      const tab = window.open('about:blank', '_blank');
      if (tab) tab.opener = null;
      put(name, { state: 'starting' });
      api('PUT', loginPath(name)).then(
        ({ body: l }) => {
          if (l.state === 'completed') {
            tab?.close();
            completed(name, l);
            changed();
            return;
          }
          if (tab && l.authorizationUrl) tab.location.href = l.authorizationUrl;
          poll(name, l.authorizationUrl);
        },
        (err) => {
          tab?.close();
          put(name, { state: 'failed', error: problemOf(err) });
        },
      );
    },
    async cancel(name) {
      stop(name);
      try {
        await api('DELETE', loginPath(name));
      } catch (err) {
        // Already over (completed, failed, forgotten): nothing to cancel, so nothing to report.
        if (!(err instanceof ApiError && err.status === 404)) return put(name, { state: 'failed', error: problemOf(err) });
      }
      put(name, null);
      say({ text: `The sign-in to ${name} was cancelled.`, tone: 'off' });
      changed();
    },
    async signOut(name) {
      stop(name);
      put(name, { state: 'signing_out' });
      try {
        await api('PATCH', serverPath(name), { body: { secrets: { oauth: null } } });
        put(name, null);
        say({ text: `Signed out of ${name}.`, tone: 'ok' });
      } catch (err) {
        put(name, { state: 'failed', error: problemOf(err) });
      }
      changed();
    },
    resume(names) {
      // A sign-in started before this page loaded (another tab, the terminal screen) is shown with its link.
      for (const name of names) {
        if (flows[name] || timers.current.has(name)) continue;
        api('GET', loginPath(name)).then(
          ({ body: l }) => {
            if (l.state === 'pending' && !timers.current.has(name)) poll(name, l.authorizationUrl);
          },
          () => {
            /* none known: nothing to show */
          },
        );
      }
    },
  };
}

/** @param {{ server: any, flow: Flow | undefined, signIns: SignIns }} p */
function SignInRow({ server, flow, signIns }) {
  const auth = server.auth;
  const pending = flow?.state === 'pending' || flow?.state === 'starting';
  return html`<li class="card" data-server=${server.name}>
    <h2 class="card-title">${server.name}</h2>
    <p class="where"><code>${asText(server.config.url)}</code></p>
    <p>
      Sign-in:
      <${Badge} label=${authLabel(auth, 'http')} />${auth.reason ? html` <span class="reason">(${asText(auth.reason)})</span>` : null}
    </p>
    ${flow?.state === 'starting' ? html`<${Busy} text="Starting the sign-in…" />` : null}
    ${flow?.state === 'signing_out' ? html`<${Busy} text="Signing out and trying the server…" />` : null}
    ${
      flow?.state === 'pending'
        ? html`<div class="flow">
            <p><${Badge} label=${loginStateLabel('pending')} /></p>
            ${
              flow.url
                ? html`<p>
                    <a href=${flow.url} target="_blank" rel="noopener noreferrer">
                      Open the sign-in page<${Hidden} text=${` of ${server.name}`}
                    /></a>
                  </p>`
                : null
            }
          </div>`
        : null
    }
    ${
      flow?.state === 'completed'
        ? html`<p class="signed-in">
            <${Badge} label=${loginStateLabel('completed')} /> <strong>${signedInText(server.name, flow.account)}</strong>
          </p>`
        : null
    }
    ${flow?.state === 'failed' ? html`<${Alert} title=${loginStateLabel('failed').text} problem=${flow.error ?? null} />` : null}
    <div class="actions">
      ${
        auth.state === 'signed_in'
          ? html`<button type="button" disabled=${flow?.state === 'signing_out'} onClick=${() => signIns.signOut(server.name)}>
              Sign out<${Hidden} text=${` of ${server.name}`} />
            </button>`
          : html`<button type="button" class="primary" disabled=${pending} onClick=${() => signIns.start(server.name)}>
              Sign in<${Hidden} text=${` to ${server.name}`} />
            </button>`
      }
      ${
        flow?.state === 'pending'
          ? html`<button type="button" onClick=${() => signIns.cancel(server.name)}>
              Cancel<${Hidden} text=${` the sign-in to ${server.name}`} />
            </button>`
          : null
      }
    </div>
  </li>`;
}

/** The MCP sign-ins view. @param {{ servers: any[] | null, signIns: SignIns }} p */
export function SignInsView({ servers, signIns }) {
  /** @type {{ current: HTMLHeadingElement | null }} */
  const heading = useRef(null);
  useFocusOnShow(heading);
  const listed = (servers ?? []).filter(asksForSignIn);
  const names = listed.map((s) => s.name).join('\n');
  useEffect(() => {
    signIns.resume(listed.map((s) => s.name));
  }, [names]);
  return html`<section aria-labelledby="sign-ins-title">
    <h1 id="sign-ins-title" ref=${heading} tabindex="-1">MCP sign-ins</h1>
    <p class="lead">The HTTP servers that asked to sign in. Signing in opens the server's authorization page in a new tab.</p>
    ${
      servers === null
        ? html`<${Busy} text="Loading…" />`
        : listed.length === 0
          ? html`<p class="empty">No server has asked for a sign-in.</p>`
          : html`<ul class="cards">
              ${listed.map((s) => html`<${SignInRow} key=${s.name} server=${s} flow=${signIns.flows[s.name]} signIns=${signIns} />`)}
            </ul>`
    }
  </section>`;
}
