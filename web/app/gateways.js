/// <reference lib="dom" />
// The gateways view (#/gateways): each gateway the daemon serves as an MCP
// server (GET /v1/gateways, read again every few seconds: clients come and
// go) with its kind, what it serves, what keeps it from serving, the two
// ways in, its tokens and the clients connected now. A token is made here
// (POST …/tokens) and shown this once, to copy; one is revoked after a
// confirmation. Every value of the API is shown as text (asText).

import { api, problemOf } from './api.js';
import { html, useEffect, useRef, useState } from './vendor.js';
import { EMPTY } from '../shared/labels.js';
import { Alert, Busy, Confirm, Hidden, asText, useFocusOnShow } from './ui.js';

/** Clients connect and leave while the view is open: it reads the gateways again this often. */
const POLL_MS = 3_000;

/** What the view is for, before the command that adds one (a string: htm drops the space before a tag on the next line). */
const LEAD =
  'A gateway is a composition the daemon serves as one MCP server, for another host ' +
  '(Claude Code, Cursor, VS Code…) to use. Add one with ';

/** `/v1/gateways/<name>` plus `suffix`. @param {string} name @param {string} [suffix] */
export const gatewayPath = (name, suffix = '') => `/v1/gateways/${encodeURIComponent(name)}${suffix}`;

/** A time of the API (ISO text, or ms since the epoch) to the minute, in UTC; EMPTY when it is not one. @param {unknown} v */
export function minute(v) {
  if (typeof v !== 'string' && typeof v !== 'number') return EMPTY;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? EMPTY : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** What a gateway serves, in words (those of `albedo gateway list`). @param {any} g */
export function servesOf(g) {
  const d = g.definition ?? {};
  if (d.server !== undefined) return `the server ${asText(d.server)}, under its own names`;
  const inc = Array.isArray(d.servers?.include) ? d.servers.include.map(asText).join(', ') || 'no server' : 'every enabled server';
  const exc = Array.isArray(d.servers?.exclude) && d.servers.exclude.length ? ` but ${d.servers.exclude.map(asText).join(', ')}` : '';
  return `${inc}${exc}, composed into one session`;
}

/**
 * A token just made: shown this once, selected for copying, with a Copy button (the clipboard may be refused: then the
 * words say to copy it by hand). Done forgets it.
 * @param {{ name: string, token: string, onDone: () => void }} p
 */
function NewToken({ name, token, onDone }) {
  const [copied, setCopied] = useState(/** @type {string | null} */ (null));
  /** @type {{ current: HTMLInputElement | null }} */
  const field = useRef(null);
  useEffect(() => {
    field.current?.focus();
    field.current?.select();
  }, []);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(token);
      setCopied('Copied.');
    } catch {
      field.current?.select();
      setCopied('The browser did not allow it: the token is selected, copy it with your keyboard.');
    }
  };
  const id = `new-token-${name}`;
  return html`<div class="new-token" role="group" aria-labelledby=${`${id}-label`}>
    <label id=${`${id}-label`} for=${id}>The new token of ${name}</label>
    <p class="hint">Copy it now: it is shown this once. The daemon keeps only its digest.</p>
    <div class="token-row">
      <input id=${id} class="mono" readonly value=${token} ref=${field} onFocus=${() => field.current?.select()} />
      <button type="button" onClick=${copy}>Copy<${Hidden} text=${` the token of ${name}`} /></button>
      <button type="button" onClick=${onDone}>Done<${Hidden} text=${` with the token of ${name}`} /></button>
    </div>
    <p class="hint" aria-live="polite">${copied ?? ''}</p>
  </div>`;
}

/** The clients connected now, as a table. @param {{ name: string, clients: any[] }} p */
function Clients({ name, clients }) {
  if (!clients.length) return html`<p class="empty">No client is connected.</p>`;
  return html`<table class="clients">
    <caption class="visually-hidden">
      Clients of ${name}
    </caption>
    <thead>
      <tr>
        <th scope="col">Client</th>
        <th scope="col">Era</th>
        <th scope="col">Transport</th>
        <th scope="col">Since</th>
        <th scope="col">Calls</th>
      </tr>
    </thead>
    <tbody>
      ${clients.map(
        (c) =>
          html`<tr key=${asText(c.id)}>
            <td class="client-name">${c.name === null || c.name === undefined ? '(did not say)' : asText(c.name)}</td>
            <td>${asText(c.era)}</td>
            <td>${asText(c.transport)}</td>
            <td>${minute(c.since)}</td>
            <td>${asText(c.calls)}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/**
 * One gateway's card.
 * @param {{ g: any, fresh: string | null, busy: string | null, mint: (g: any) => void, ask: (g: any, id: string) => void,
 *   forget: () => void }} p
 */
function GatewayCard({ g, fresh, busy, mint, ask, forget }) {
  const name = asText(g.name);
  const off = g.definition?.enabled === false;
  const url = `${location.origin}/mcp/gateways/${encodeURIComponent(g.name)}`;
  const tokens = Array.isArray(g.tokens) ? g.tokens : [];
  const problems = Array.isArray(g.problems) ? g.problems : [];
  return html`<li class="card" data-gateway=${name}>
    <h2 class="card-title">${name}</h2>
    <dl class="facts">
      <div>
        <dt>Kind</dt>
        <dd>${asText(g.kind)}${off ? ' (switched off)' : ''}</dd>
      </div>
      <div>
        <dt>Serves</dt>
        <dd>${servesOf(g)}</dd>
      </div>
      <div>
        <dt>Problem</dt>
        <dd class="problem">
          ${
            problems.length
              ? html`<ul class="gateway-problems">
                  ${problems.map(
                    (/** @type {any} */ p, /** @type {number} */ i) =>
                      html`<li key=${i} class="tone-warn"><span class="symbol" aria-hidden="true">!</span> ${asText(p.message)}</li>`,
                  )}
                </ul>`
              : EMPTY
          }
        </dd>
      </div>
    </dl>
    <h3>Ways in</h3>
    <ul class="ways">
      <li>a command (stdio): <code>albedo gateway ${name}</code></li>
      <li>Streamable HTTP: <code>${url}</code> with <code>Authorization: Bearer</code> and a token</li>
    </ul>
    <h3>Tokens</h3>
    ${
      tokens.length
        ? html`<ul class="token-list">
            ${tokens.map(
              (/** @type {any} */ x) =>
                html`<li key=${asText(x.id)}>
                  <code>${asText(x.id)}</code> <span class="made">made ${minute(x.created)}</span>
                  <button type="button" class="small danger" disabled=${!!busy} onClick=${() => ask(g, x.id)}>
                    Revoke<${Hidden} text=${` token ${asText(x.id)} of ${name}`} />
                  </button>
                </li>`,
            )}
          </ul>`
        : html`<p class="empty">No token: a client over HTTP cannot connect yet.</p>`
    }
    ${fresh ? html`<${NewToken} name=${name} token=${fresh} onDone=${forget} />` : null} ${busy ? html`<${Busy} text=${busy} />` : null}
    <div class="actions">
      <button type="button" disabled=${!!busy} onClick=${() => mint(g)}>Make a token<${Hidden} text=${` for ${name}`} /></button>
    </div>
    <h3>Clients now</h3>
    <${Clients} name=${name} clients=${Array.isArray(g.clients) ? g.clients : []} />
  </li>`;
}

/** The gateways view. @param {{ say: (m: { text: string, tone: string }) => void }} p */
export function GatewaysView({ say }) {
  /** @type {{ current: HTMLHeadingElement | null }} */
  const heading = useRef(null);
  useFocusOnShow(heading);
  const [data, setData] = useState(/** @type {{ gateways: any[], invalid: any } | null} */ (null));
  const [problem, setProblem] = useState(/** @type {{ code: string, message: string } | null} */ (null));
  const [busy, setBusy] = useState(/** @type {{ name: string, text: string } | null} */ (null));
  // The token just made (its gateway's name and the token): in this view's memory only, gone with Done or the view.
  const [fresh, setFresh] = useState(/** @type {{ name: string, token: string } | null} */ (null));
  const [asking, setAsking] = useState(/** @type {{ name: string, id: string } | null} */ (null));

  const load = () =>
    api('GET', '/v1/gateways').then(
      (r) => {
        setData(r.body);
        setProblem((p) => (p?.code === 'ALBEDO_UNREACHABLE' ? null : p));
      },
      (err) => setProblem(problemOf(err)),
    );
  useEffect(() => {
    load();
    const t = setInterval(load, POLL_MS);
    return () => clearInterval(t);
  }, []);

  /** @param {any} g */
  const mint = async (g) => {
    setProblem(null);
    setFresh(null);
    setBusy({ name: g.name, text: 'Making a token…' });
    try {
      const r = await api('POST', gatewayPath(g.name, '/tokens'));
      setFresh({ name: g.name, token: String(r.body.token) });
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      setBusy(null);
      await load();
    }
  };
  const revoke = async () => {
    const a = asking;
    setAsking(null);
    if (!a) return;
    setProblem(null);
    setBusy({ name: a.name, text: 'Revoking…' });
    let done = false;
    try {
      await api('DELETE', gatewayPath(a.name, `/tokens/${encodeURIComponent(a.id)}`));
      done = true;
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      setBusy(null);
      await load();
      // Said once the list shows it: the status line never runs ahead of the tokens shown.
      if (done) say({ text: `Revoked token ${a.id} of ${a.name}: a client that sends it is refused from now on.`, tone: 'ok' });
    }
  };

  const gateways = data?.gateways ?? null;
  return html`<section aria-labelledby="gateways-title">
    <h1 id="gateways-title" ref=${heading} tabindex="-1">Gateways</h1>
    <p class="lead">${LEAD}<code>albedo gateway add NAME</code>.</p>
    ${
      data?.invalid
        ? html`<${Alert}
            title="extensions.json is broken: the gateways shown are the last valid ones"
            problem=${{ code: 'ALBEDO_INVALID_CONFIG', message: JSON.stringify(data.invalid) }}
          />`
        : null
    }
    <${Alert} problem=${problem} />
    ${
      gateways === null
        ? problem
          ? null
          : html`<${Busy} text="Loading…" />`
        : gateways.length === 0
          ? html`<p class="empty">No gateway is defined yet.</p>`
          : html`<ul class="cards wide">
              ${gateways.map(
                (g) =>
                  html`<${GatewayCard}
                    key=${g.name}
                    g=${g}
                    fresh=${fresh && fresh.name === g.name ? fresh.token : null}
                    busy=${busy && busy.name === g.name ? busy.text : null}
                    mint=${mint}
                    ask=${(/** @type {any} */ x, /** @type {string} */ id) => setAsking({ name: x.name, id })}
                    forget=${() => setFresh(null)}
                  />`,
              )}
            </ul>`
    }
    ${
      asking
        ? html`<${Confirm}
            title=${`Revoke token ${asText(asking.id)} of ${asText(asking.name)}?`}
            text=${
              `A client that sends this token to ${asText(asking.name)} is refused from then on. It cannot be taken back: ` +
              'the client needs a new token.'
            }
            confirm="Revoke the token"
            onConfirm=${revoke}
            onCancel=${() => setAsking(null)}
          />`
        : null
    }
  </section>`;
}
