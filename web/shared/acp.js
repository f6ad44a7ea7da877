// What `albedo status`, the `/mcp` screen and the web pane call an ACP
// session's states and the extensions, in one place so the three never
// disagree. Plain JavaScript with JSDoc types, like labels.js: the browser
// loads it as it is and the CLI imports it. Labels and pure helpers only.

import { LIVE_STATES, SYMBOLS } from './labels.js';

/** @typedef {import('./labels.js').Label} Label */
/** @typedef {import('./labels.js').Tone} Tone */

/** @param {string} text @param {Tone} tone @returns {Label} */
const label = (text, tone) => ({ text, tone, symbol: SYMBOLS[tone] });

/**
 * An ACP session's attachment state (`GET /v1/acp/sessions`, `state`): ready; its editor's servers installed but the
 * session's reload failed; or its editor's servers lost (a daemon restart) until the editor attaches again.
 * @type {Record<string, Label>}
 */
export const ACP_STATES = {
  ready: label('ready', 'ok'),
  reload_pending: label('reload pending', 'warn'),
  reattach_required: label('reattach required', 'error'),
};

/** Whether an adapter holds the session now. @param {boolean} attached @returns {Label} */
export const attachedLabel = (attached) => (attached ? label('attached', 'ok') : label('detached', 'off'));

/**
 * An editor's server's state in its session: its live state (labels.js), or `lost` (a restart dropped it), `off`
 * (editor-mcp switched off for the session), `shadowed` (a configured server has its name: that one runs, this one is
 * left out), `unknown`.
 * @type {Record<string, Label>}
 */
const OVERLAY_STATES = {
  ...LIVE_STATES,
  lost: label('lost', 'error'),
  off: label('hidden (editor-mcp off)', 'off'),
  shadowed: label('left out (a configured server has its name)', 'warn'),
};

/** @param {Record<string, Label>} table @param {unknown} state @returns {Label} */
function lookup(table, state) {
  const s = typeof state === 'string' ? state : '';
  return (s && Object.hasOwn(table, s) ? table[s] : undefined) ?? label(s || 'unknown', 'off');
}

/** @param {unknown} state @returns {Label} */
export const acpStateLabel = (state) => lookup(ACP_STATES, state);

/** @param {unknown} state @returns {Label} */
export const overlayStateLabel = (state) => lookup(OVERLAY_STATES, state);

/** The two extensions a session has, in the order every view lists them, with what each brings. */
export const EXTENSIONS = /** @type {const} */ ([
  ['mcp', "the configured MCP servers' tools"],
  ['editor-mcp', "an editor's own servers (albedo acp)"],
]);

/** An extension switched on or off. @param {boolean} on @returns {Label} */
export const switchLabel = (on) => (on ? label('on', 'ok') : label('off', 'off'));

/** Whether a session is an ACP session, by the label the daemon gives it. @param {{ label?: unknown }} s */
export const isAcp = (s) => typeof s.label === 'string' && s.label.startsWith('acp:');
