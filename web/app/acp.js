/// <reference lib="dom" />
// What the pane shows of an ACP session (an editor's session through
// `albedo acp`, docs/acp.md): GET /v1/acp/sessions, read again every few
// seconds (adapters attach and let go, the editor's servers come and go).
// Read only: the pane looks at an ACP session and may close it as any other
// session (sessions.js), it never changes its overlay. Its words are those of
// `albedo status` and the /mcp screen (web/shared/acp.js). Everything an
// editor or an agent chose (commands, arguments, names, paths) is text.

import { ApiError, api, problemOf } from './api.js';
import { html, useEffect, useState } from './vendor.js';
import { acpStateLabel, attachedLabel, overlayStateLabel, switchLabel } from '../shared/acp.js';
import { Badge, asText } from './ui.js';

/** ACP sessions attach and detach while a view is open: it reads them again this often. */
export const ACP_POLL_MS = 3_000;

/** `/v1/acp/sessions/<id>`. @param {string} id */
export const acpPath = (id) => `/v1/acp/sessions/${encodeURIComponent(id)}`;

/**
 * A command line in one line, as `albedo status` and the screen write it: a word with a space, a quote or a backslash
 * (or an empty one) quoted, the rest as it is; invisible characters spelled out (asText).
 * @param {unknown[]} words
 */
export const commandLine = (words) =>
  asText(
    words
      .map(String)
      .map((w) => (/[\s'"\\]/.test(w) || w === '' ? JSON.stringify(w) : w))
      .join(' '),
  );

/**
 * The ACP sessions by their session's id; null from a daemon without the route (404: it predates `albedo acp`).
 * @returns {Promise<Map<string, any> | null>}
 */
export async function acpSessions() {
  try {
    const r = await api('GET', '/v1/acp/sessions');
    return new Map((Array.isArray(r.body?.sessions) ? r.body.sessions : []).map((/** @type {any} */ a) => [String(a.id), a]));
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  }
}

/**
 * One ACP session, read now and every ACP_POLL_MS while `on`: undefined while unknown, null when the session is not
 * an ACP session the daemon knows (or the daemon has no such route). A failed read keeps the last answer.
 * @param {string} id @param {boolean} on
 */
export function useAcpSession(id, on) {
  const [acp, setAcp] = useState(/** @type {any} */ (undefined));
  const [problem, setProblem] = useState(/** @type {{ code: string, message: string } | null} */ (null));
  useEffect(() => {
    if (!on) return undefined;
    let live = true;
    const load = () =>
      api('GET', acpPath(id)).then(
        (r) => {
          if (!live) return;
          setAcp(r.body);
          setProblem(null);
        },
        (err) => {
          if (!live) return;
          if (err instanceof ApiError && err.status === 404) {
            setAcp(null);
            setProblem(null);
          } else setProblem(problemOf(err));
        },
      );
    load();
    const t = setInterval(load, ACP_POLL_MS);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [id, on]);
  return { acp, problem };
}

/** The mark of a session that belongs to an ACP session (its label, `acp:…`). */
export function AcpMark() {
  return html`<span class="acp-mark" title="an editor's session through albedo acp">ACP</span>`;
}

/**
 * An ACP session's facts: its attachment, its state, the agent's command, its workspace, the agent's session id,
 * editor-mcp, and the editor's servers with their states.
 * @param {{ a: any }} p
 */
export function AcpFacts({ a }) {
  const servers = Array.isArray(a.overlay?.servers) ? a.overlay.servers : [];
  const args = Array.isArray(a.agent?.args) ? a.agent.args : [];
  return html`<div class="acp" data-acp=${asText(a.id)}>
    <dl class="facts">
      <div>
        <dt>Attachment</dt>
        <dd class="acp-attached"><${Badge} label=${attachedLabel(a.attached === true)} /></dd>
      </div>
      <div>
        <dt>ACP state</dt>
        <dd class="acp-state"><${Badge} label=${acpStateLabel(a.state)} /></dd>
      </div>
      <div>
        <dt>Agent</dt>
        <dd><code class="acp-agent">${commandLine([a.agent?.command ?? '', ...args])}</code></dd>
      </div>
      <div>
        <dt>Workspace</dt>
        <dd><code class="acp-cwd">${asText(a.cwd)}</code></dd>
      </div>
      <div>
        <dt>Agent session</dt>
        <dd>${typeof a.acpSessionId === 'string' ? html`<code>${asText(a.acpSessionId)}</code>` : 'not bound yet'}</dd>
      </div>
      <div>
        <dt>editor-mcp</dt>
        <dd><${Badge} label=${switchLabel(a.editorMcp !== false)} /></dd>
      </div>
    </dl>
    <h3>The editor's servers</h3>
    ${
      servers.length
        ? html`<ul class="live acp-servers">
            ${servers.map(
              (/** @type {any} */ s) =>
                html`<li key=${asText(s.name)}>
                  <span class="live-name">${asText(s.name)}</span> <${Badge} label=${overlayStateLabel(s.state)} />
                </li>`,
            )}
          </ul>`
        : html`<p class="empty">The editor sent no server.</p>`
    }
  </div>`;
}
