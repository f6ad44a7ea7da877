// The web pane's links and cookie sessions as a unit (daemon/ui-auth.ts),
// on a clock of the test's: a code works once and until its TTL, at most
// MAX_LINKS live (the oldest dropped); a session ends after 12 hours unused
// (each use starts the time again), at most MAX_SESSIONS (the least recently
// used dropped); the cookie is found among others by its port's name; the
// CSRF token compares exactly; ALBEDO_UI_LINK_TTL_MS within its bounds.
import t from 'tap';
import { MAX_LINKS, MAX_SESSIONS, UI_LINK_TTL_MS, UI_SESSION_IDLE_MS, UiAuth, uiLinkTtl } from '../../daemon/ui-auth.ts';

const codeOf = (url: string): string => new URL(url).searchParams.get('code')!;

function clocked(o: { linkTtlMs?: number } = {}): { ui: UiAuth; at: { now: number } } {
  const at = { now: 1_000_000 };
  return { ui: new UiAuth({ port: () => 40123, now: () => at.now, ...o }), at };
}

t.test('a code works once, until it expires; unknown codes never', async (t) => {
  const { ui, at } = clocked();
  const link = ui.mintLink();
  t.match(link.url, /^http:\/\/127\.0\.0\.1:40123\/ui\/login\?code=[A-Za-z0-9_-]{43}$/);
  t.equal(Date.parse(link.expiresAt), at.now + UI_LINK_TTL_MS);
  const value = ui.redeem(codeOf(link.url));
  t.match(value, /^[A-Za-z0-9_-]{43}$/, 'a cookie value of 32 random bytes');
  t.equal(ui.redeem(codeOf(link.url)), null, 'once');
  t.equal(ui.redeem('made-up'), null);
  const late = ui.mintLink();
  at.now += UI_LINK_TTL_MS;
  t.equal(ui.redeem(codeOf(late.url)), null, 'expired at its expiresAt');
  const short = clocked({ linkTtlMs: 1_000 });
  const l = short.ui.mintLink();
  short.at.now += 999;
  t.ok(short.ui.redeem(codeOf(l.url)), 'in time with a short TTL');
});

t.test('at most MAX_LINKS live codes: the oldest go first', async (t) => {
  const { ui } = clocked();
  const links = Array.from({ length: MAX_LINKS + 3 }, () => ui.mintLink());
  t.equal(ui.counts.links, MAX_LINKS);
  for (const l of links.slice(0, 3)) t.equal(ui.redeem(codeOf(l.url)), null, 'an oldest one was dropped');
  for (const l of links.slice(3)) t.ok(ui.redeem(codeOf(l.url)), 'the newest work');
});

t.test("a session lives while it is used: 12 hours idle; the cookie is found by its port's name among others", async (t) => {
  const { ui, at } = clocked();
  const value = ui.redeem(codeOf(ui.mintLink().url))!;
  const header = `other=1; albedo_ui_40124=${value}; albedo_ui_40123=${value}; x=y`;
  const s = ui.sessionOf(header);
  t.ok(s, 'found');
  t.equal(s!.expiresAt, at.now + UI_SESSION_IDLE_MS);
  t.equal(ui.sessionOf(`albedo_ui_40124=${value}`), null, "another port's cookie name is not ours");
  t.equal(ui.sessionOf(`albedo_ui_40123=nope; albedo_ui_40123=${value}`)?.key, s!.key, 'of several, the live one');
  t.equal(ui.sessionOf(undefined), null);
  at.now += UI_SESSION_IDLE_MS - 1;
  t.ok(ui.sessionOf(header), 'used just before the end: it goes on');
  at.now += UI_SESSION_IDLE_MS - 1;
  t.ok(ui.sessionOf(header), 'and again');
  at.now += UI_SESSION_IDLE_MS;
  t.equal(ui.sessionOf(header), null, '12 hours unused: gone');
  t.equal(ui.counts.sessions, 0);
});

t.test('the CSRF token: exact; forget ends the session', async (t) => {
  const { ui } = clocked();
  const value = ui.redeem(codeOf(ui.mintLink().url))!;
  const s = ui.sessionOf(`albedo_ui_40123=${value}`)!;
  t.match(s.csrf, /^[A-Za-z0-9_-]{43}$/);
  t.ok(ui.csrfMatches(s, s.csrf));
  for (const bad of [
    undefined,
    '',
    s.csrf.slice(1),
    `${s.csrf} `,
    s.csrf.toLowerCase() === s.csrf ? s.csrf.toUpperCase() : s.csrf.toLowerCase(),
  ]) {
    t.notOk(ui.csrfMatches(s, bad), `refused: ${JSON.stringify(bad?.slice(0, 4))}…`);
  }
  ui.forget(s);
  t.equal(ui.sessionOf(`albedo_ui_40123=${value}`), null);
  t.equal(ui.setCookie('v'), 'albedo_ui_40123=v; HttpOnly; SameSite=Strict; Path=/');
  t.equal(ui.clearCookie(), 'albedo_ui_40123=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0');
});

t.test('at most MAX_SESSIONS: the least recently used goes first', async (t) => {
  const { ui, at } = clocked();
  const values: string[] = [];
  for (let i = 0; i < MAX_SESSIONS; i++) {
    at.now += 1;
    values.push(ui.redeem(codeOf(ui.mintLink().url))!);
  }
  t.ok(ui.sessionOf(`albedo_ui_40123=${values[0]}`), 'the oldest, used now');
  ui.redeem(codeOf(ui.mintLink().url));
  t.equal(ui.counts.sessions, MAX_SESSIONS);
  t.ok(ui.sessionOf(`albedo_ui_40123=${values[0]}`), 'the one just used stays');
  t.equal(ui.sessionOf(`albedo_ui_40123=${values[1]}`), null, 'the least recently used was dropped');
});

t.test('ALBEDO_UI_LINK_TTL_MS: 1 s to 15 min, anything else the default', async (t) => {
  t.equal(uiLinkTtl({}), UI_LINK_TTL_MS);
  t.equal(uiLinkTtl({ ALBEDO_UI_LINK_TTL_MS: '1000' }), 1_000);
  t.equal(uiLinkTtl({ ALBEDO_UI_LINK_TTL_MS: String(UI_LINK_TTL_MS) }), UI_LINK_TTL_MS);
  for (const v of ['999', '900001', 'x', '1500.5', '-1', ''])
    t.equal(uiLinkTtl({ ALBEDO_UI_LINK_TTL_MS: v }), UI_LINK_TTL_MS, `${v}: ignored`);
});
