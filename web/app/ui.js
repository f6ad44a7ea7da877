/// <reference lib="dom" />
// Small pieces every view uses: a state badge (its tone is a class and its
// symbol is shown, so colour is never the only signal), an error alert, a
// busy indicator, and a confirmation dialog that takes the focus and is
// cancelled by Esc. Everything a server said is passed in as text: htm
// escapes it; nothing here sets HTML.

import { html, useEffect, useRef, useState } from './vendor.js';
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
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

/** A label as a badge: symbol and words, coloured by its tone. @param {{ label: Label }} p */
export function Badge({ label }) {
  return html`<span class=${`badge tone-${label.tone}`}
    ><span class="symbol" aria-hidden="true">${label.symbol}</span> ${label.text}</span
  >`;
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

/** The first line of `text` (a string already made safe by asText), and whether anything follows it. @param {string} text */
export function firstLine(text) {
  const t = text.trim();
  const nl = t.indexOf('\n');
  return { first: (nl < 0 ? t : t.slice(0, nl)).trim(), more: nl >= 0 };
}

/** The most of a first line Clipped lays out: wider than any card, far less than a server can send. */
const FIRST_LINE_MAX = 2_000;

/**
 * A server's text that can be a page long (its instructions, a tool's
 * description, an error quoting stderr): its first line, on one line (cut
 * with an ellipsis where it does not fit), and a More button that shows the
 * whole text in a box of bounded height, scrolled inside, so a long text
 * never stretches its card or its row. Always text: markdown or HTML in it
 * is shown as the characters sent (htm escapes it), never rendered.
 * @param {{ text: unknown, what: string, className?: string }} p `what` names the text for a screen reader ("the description of docs")
 */
export function Clipped({ text, what, className = '' }) {
  const whole = asText(text).trim();
  const line = firstLine(whole);
  // The one line shows what a card's width can (CSS cuts the rest): a server's line of megabytes is not laid out whole.
  const first = line.first.length > FIRST_LINE_MAX ? line.first.slice(0, FIRST_LINE_MAX) : line.first;
  const more = line.more || first !== line.first;
  const [open, setOpen] = useState(false);
  const [cut, setCut] = useState(false);
  /** @type {{ current: HTMLElement | null }} */
  const shown = useRef(null);
  // A first line wider than the card is cut by CSS: measured, so More shows only when something is hidden.
  useEffect(() => {
    const el = shown.current;
    if (!el || typeof ResizeObserver === 'undefined') return undefined;
    const measure = () => setCut(el.scrollWidth > el.clientWidth + 1);
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, [whole, open]);
  if (!whole) return null;
  const toggle = html`<button type="button" class="more" aria-expanded=${open ? 'true' : 'false'} onClick=${() => setOpen(!open)}>
    ${open ? 'Less' : 'More'}<${Hidden} text=${` of ${what}`} />
  </button>`;
  if (open) {
    return html`<div class=${`clipped open ${className}`}>
      <div class="whole" tabindex="0" role="region" aria-label=${what}>${whole}</div>
      ${toggle}
    </div>`;
  }
  return html`<div class=${`clipped ${className}`}>
    <span class="first-line" ref=${shown}>${first}</span>${more || cut ? toggle : null}
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
