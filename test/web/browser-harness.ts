/**
 * The web pane as a person uses it: Debian's real Chromium, headless,
 * driven by puppeteer-core, against the real daemon (test/daemon/harness.ts)
 * over a temp $ALBEDO_HOME. A browser per test, with its own temp profile
 * directory; closed at teardown, and no Chromium process (found by that
 * directory on its command line) may outlive it. Every page records its
 * console errors and uncaught exceptions (a CSP refusal is one), so a test
 * can assert the pane ran clean. Waits are on the DOM, bounded and generous;
 * nothing sleeps.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer, { type Browser, type ElementHandle, type Page } from 'puppeteer-core';
import { ROOT, until } from '../helpers.ts';
import type { Daemon } from '../daemon/harness.ts';

type Tap = { teardown(fn: () => unknown): void };

export const CHROMIUM = '/usr/bin/chromium';
/** Long enough for a strict save (a server started and discovered) on a loaded 2-core machine. */
export const WAIT = 60_000;
export const AXE = path.join(ROOT, 'node_modules', 'axe-core', 'axe.min.js');
/**
 * Screenshots are written only when asked, so a CI run never rewrites the committed ones: ALBEDO_SCREENSHOTS=1
 * writes every one, ALBEDO_SCREENSHOTS=servers,tools only those named.
 */
const ASKED = process.env.ALBEDO_SCREENSHOTS ?? '';
export const SCREENSHOTS = ASKED && ASKED !== '0' ? path.join(ROOT, 'docs', 'screenshots') : null;
const WANTED = ASKED === '1' ? null : new Set(ASKED.split(',').map((n) => n.trim()));

const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

export interface Chromium {
  browser: Browser;
  /** The profile directory, on every Chromium process's command line. */
  userDataDir: string;
  /** Closes the browser; resolves with the Chromium pids still alive (bounded wait): [] is the passing answer. */
  close(): Promise<number[]>;
}

/** The pids of processes whose command line names `dir`. */
export function chromiumPids(dir: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', dir], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

/** Launches headless Chromium with a temp profile; closed (and checked for leftovers) at teardown. */
export async function launchChromium(t: Tap): Promise<Chromium> {
  const userDataDir = mkdtempSync(path.join(os.tmpdir(), 'albedo-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true, // puppeteer passes --headless=new
    args: ARGS,
    userDataDir,
    defaultViewport: { width: 1280, height: 800 },
    protocolTimeout: 120_000,
    // DevTools over a pipe, not a port: Chromium exits when the pipe closes, so it dies with this process even
    // when no teardown runs (tap killing a test at its timeout), and it opens no debugging port.
    pipe: true,
  });
  let closed: Promise<number[]> | undefined;
  const close = (): Promise<number[]> =>
    (closed ??= (async () => {
      await browser.close().catch(() => undefined);
      let left = chromiumPids(userDataDir);
      await until(() => (left = chromiumPids(userDataDir)).length === 0, 15_000, 'chromium to exit').catch(() => undefined);
      return left;
    })());
  t.teardown(async () => {
    const left = await close();
    rmSync(userDataDir, { recursive: true, force: true });
    if (left.length) throw new Error(`chromium processes outlived the test: ${left.join(', ')}`);
  });
  return { browser, userDataDir, close };
}

/** Chromium's console line for any answer >= 400: the pane shows those refusals itself, so they are not errors of the page. */
const HTTP_STATUS_LINE = /^Failed to load resource: the server responded with a status of \d{3}/;

/** What a page said that a clean run never says: console errors (CSP refusals included) and uncaught exceptions. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !HTTP_STATUS_LINE.test(m.text())) errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => {
    errors.push(`pageerror: ${e instanceof Error ? e.stack : String(e)}`);
  });
  return errors;
}

/** A one-time login link from the daemon (the bearer-token route `albedo open` uses). */
export async function mintLink(d: Daemon): Promise<string> {
  const r = await d.call('POST', '/v1/ui/links');
  if (r.status !== 201) throw new Error(`POST /v1/ui/links: ${r.status} ${r.text}`);
  return r.body.url as string;
}

export interface Pane {
  page: Page;
  /** The page's console errors and exceptions so far. */
  errors: string[];
  /** The login link it used (spent now). */
  link: string;
}

/** A new tab of `browser`, logged in through a fresh one-time link: the servers view is showing. */
export async function openPane(browser: Browser, d: Daemon): Promise<Pane> {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  page.setDefaultTimeout(WAIT);
  const errors = watchErrors(page);
  const link = await mintLink(d);
  await page.goto(link);
  await page.waitForSelector('nav[aria-label="Sections"]');
  await page.waitForSelector('#servers-title');
  return { page, errors, link };
}

/** The element with this ARIA role and accessible name (puppeteer's ARIA query: what a screen reader would find). */
export function byRole(page: Page, role: string, name: string): Promise<ElementHandle<Element>> {
  return page.waitForSelector(`::-p-aria([name=${JSON.stringify(name)}][role=${JSON.stringify(role)}])`) as Promise<ElementHandle<Element>>;
}

/** Clicks the button (or link) named `name`. */
export async function press(page: Page, name: string, role = 'button'): Promise<void> {
  const el = await byRole(page, role, name);
  await el.click();
}

/** Goes to a hash route of the pane and waits for its heading. */
export async function go(page: Page, hash: string, heading: string): Promise<void> {
  await page.evaluate((h) => {
    location.hash = h;
  }, hash);
  await page.waitForSelector(heading);
}

/** The text the page shows (innerText of the body). */
export const shown = (page: Page): Promise<string> => page.evaluate(() => document.body.innerText);

/** Waits until the text of `selector` includes `text`; resolves with that text. */
export async function waitText(page: Page, selector: string, text: string, timeout = WAIT): Promise<string> {
  const h = await page.waitForFunction(
    (sel, want) => {
      const el = document.querySelector(sel);
      const t = el instanceof HTMLElement ? el.innerText : '';
      return t.includes(want) ? t : false;
    },
    { timeout, polling: 100 },
    selector,
    text,
  );
  return (await h.jsonValue()) as string;
}

/**
 * Records, from now on, every moment the server form is busy (aria-busy):
 * the progress text shown and whether its save button is disabled. A
 * MutationObserver sees each render, so a save that is over quickly is seen too.
 */
export async function recordBusy(page: Page): Promise<() => Promise<Array<{ text: string; disabled: boolean }>>> {
  await page.evaluate(() => {
    const w = window as unknown as { busySeen: Array<{ text: string; disabled: boolean }> };
    w.busySeen = [];
    new MutationObserver(() => {
      const f = document.querySelector('form.server-form');
      if (f?.getAttribute('aria-busy') !== 'true') return;
      const text = (f.querySelector('.busy') as HTMLElement | null)?.innerText ?? '';
      w.busySeen.push({ text, disabled: (f.querySelector('button[type="submit"]') as HTMLButtonElement).disabled });
    }).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  });
  return () => page.evaluate(() => (window as unknown as { busySeen: Array<{ text: string; disabled: boolean }> }).busySeen);
}

/** The card (li[data-server]) of a server in the current view, or null. */
export const card = (name: string): string => `li[data-server=${JSON.stringify(name)}]`;

/** Clears an input and types `text` into it, key by key, as a person would. */
export async function typeInto(page: Page, selector: string, text: string): Promise<void> {
  const el = await page.waitForSelector(selector);
  await el!.click({ count: 3 });
  await page.keyboard.press('Backspace');
  await page.keyboard.type(text);
}

/** A file's bytes, or null when it does not exist (for byte-for-byte comparisons). */
export function bytes(file: string): Buffer | null {
  return existsSync(file) ? readFileSync(file) : null;
}

/** extensions.json and creds.json of a home, as bytes. */
export function settingsFiles(home: string): { extensions: Buffer | null; creds: Buffer | null } {
  return { extensions: bytes(path.join(home, 'extensions.json')), creds: bytes(path.join(home, 'creds.json')) };
}

/**
 * The accessibility violations axe-core finds on the page as it is now
 * (rule id and the nodes' selectors). axe is run by DevTools evaluation:
 * page.addScriptTag adds an inline script, which the pane's CSP
 * (script-src 'self') refuses, and the test must not weaken that CSP.
 */
export async function axeViolations(page: Page): Promise<Array<{ id: string; impact: string | null; nodes: string[] }>> {
  const loaded = await page.evaluate(() => typeof (window as unknown as { axe?: unknown }).axe === 'object');
  if (!loaded) await page.evaluate(readFileSync(AXE, 'utf8'));
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: unknown, o: unknown): Promise<{ violations: any[] }> } }).axe;
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({
      id: v.id as string,
      impact: v.impact as string | null,
      nodes: v.nodes.map((n: any) => String(n.target)),
    }));
  });
}

/** Saves a 1280×800 screenshot of the page as docs/screenshots/<name>.png, when ALBEDO_SCREENSHOTS asks for it. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS || (WANTED && !WANTED.has(name))) return;
  await page.setViewport({ width: 1280, height: 800 });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`) as `${string}.png` });
}

/** The cookie the pane's login set (name and value), read from the browser. */
export async function paneCookie(page: Page, port: number): Promise<string> {
  const c = (await page.cookies()).find((x) => x.name === `albedo_ui_${port}`);
  if (!c) throw new Error('no pane cookie in the browser');
  return `${c.name}=${c.value}`;
}
