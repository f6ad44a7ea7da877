/// <reference lib="dom" />
// Small pieces every view uses: a state badge (its tone is a class and its
// symbol is shown, so colour is never the only signal), an error alert, a
// busy indicator, and a confirmation dialog that takes the focus and is
// cancelled by Esc. Everything a server said is passed in as text: htm
// escapes it; nothing here sets HTML.

import { html, useEffect, useRef } from './vendor.js';
import { INVISIBLE, spelled } from '../shared/shown.js';

/** @typedef {import('../shared/labels.js').Label} Label */

/**
 * Bidirectional controls, which reorder the text after them, and invisible
 * characters, which hide it: shown as \uHHHH (or \u{HHHHH}) so a server's
 * text reads as it is — the set the CLI and the screen use (shared/shown.js).
 */
const INVISIBLE_RE = new RegExp(`[${INVISIBLE}]`, 'gu');

/**
 * Any value of an answer as words to show. Preact would take an object
 * child for an element to render (or fail on it), so what the daemon or a
 * server sent is always made a string first: a string as it is, an error
 * object `{ code, message }` as "code: message", anything else as JSON.
 * @param {unknown} v @returns {string}
 */
export function asText(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v.replace(INVISIBLE_RE, spelled);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const o = /** @type {Record<string, unknown>} */ (v);
  if (typeof o.message === 'string') return typeof o.code === 'string' ? `${o.code}: ${o.message}` : o.message;
  try { return JSON.stringify(v); } catch { return String(v); }
}

/** A label as a badge: symbol and words, coloured by its tone. @param {{ label: Label }} p */
export function Badge({ label }) {
  return html`<span class=${`badge tone-${label.tone}`}><span class="symbol" aria-hidden="true">${label.symbol}</span> ${label.text}</span>`;
}

/**
 * An error as the daemon gave it: its code and its message (which can
 * quote a server's stderr: shown as text, line breaks kept).
 * @param {{ problem: { code: string, message: string } | null, title?: string }} p
 */
export function Alert({ problem, title }) {
  if (!problem) return null;
  return html`<div role="alert" class="alert" tabindex="-1">
    ${title ? html`<p class="alert-title">${title}</p>` : null}
    <p><code class="code">${asText(problem.code)}</code></p>
    <p class="message">${asText(problem.message)}</p>
  </div>`;
}

/** A spinner and words for work under way. @param {{ text: string }} p */
export function Busy({ text }) {
  return html`<p class="busy" role="status"><span class="spinner" aria-hidden="true"></span> ${text}</p>`;
}

/** Text only screen readers read (a button's object, say). @param {{ text: string }} p */
export function Hidden({ text }) {
  return html`<span class="visually-hidden">${text}</span>`;
}

/**
 * A modal confirmation: the dialog opens with the focus on its first
 * control (Cancel), Esc or Cancel calls `onCancel`, the other button
 * `onConfirm`; the focus goes back where it was when it closes.
 * @param {{ title: string, text: string, confirm: string, onConfirm: () => void, onCancel: () => void }} p
 */
export function Confirm({ title, text, confirm, onConfirm, onCancel }) {
  /** @type {{ current: HTMLDialogElement | null }} */
  const ref = useRef(null);
  useEffect(() => {
    const d = ref.current;
    const before = document.activeElement;
    if (d && !d.open) d.showModal();
    d?.querySelector('button')?.focus();
    return () => {
      if (d?.open) d.close();
      if (before instanceof HTMLElement && before.isConnected) before.focus();
    };
  }, []);
  /** @param {Event} e */
  const cancelled = (e) => {
    e.preventDefault();
    onCancel();
  };
  return html`<dialog ref=${ref} class="confirm" aria-labelledby="confirm-title" aria-describedby="confirm-text" onCancel=${cancelled}>
    <h2 id="confirm-title">${title}</h2>
    <p id="confirm-text">${text}</p>
    <div class="actions">
      <button type="button" onClick=${onCancel}>Cancel</button>
      <button type="button" class="danger" onClick=${onConfirm}>${confirm}</button>
    </div>
  </dialog>`;
}

/**
 * Focuses the element of `ref` once, when the view shows: each view's
 * heading, so a keyboard or screen reader user starts at what changed.
 * @param {{ current: HTMLElement | null }} ref
 */
export function useFocusOnShow(ref) {
  useEffect(() => {
    ref.current?.focus();
  }, []);
}
