// OAuth sign-in end to end against a real authorization server (oidc-provider
// on loopback) in front of an official-SDK MCP server that validates the JWT
// access tokens: sign-in through a browser stand-in, refresh near expiry,
// a rotating refresh token raced by two processes, a revoked refresh token,
// step-up on insufficient_scope, and the bad-input refusals. creds.json must
// be 0600 after every write, and no token may appear in any error, status
// or line written to stderr.
import t from 'tap';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { readFileSync, statSync, existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createAlbedo, type Albedo, type AlbedoOptions } from '../../api/albedo.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import { startOAuthStack, type OAuthStack } from '../fixtures/oauth-stack.ts';
import { browserStandIn, redirectOnly } from '../fixtures/browser.ts';
import { fixture, NODE, rejection, tempHome } from '../helpers.ts';

t.setTimeout(120_000);

/** Every secret seen in creds.json during the test, and every text Albedo produced. */
const secrets = new Set<string>();
const texts: string[] = [];
const origWrite = process.stderr.write.bind(process.stderr);
process.stderr.write = ((chunk: unknown, ...rest: unknown[]) => {
  texts.push(String(chunk));
  return (origWrite as (...a: unknown[]) => boolean)(chunk, ...rest);
}) as typeof process.stderr.write;
t.teardown(() => {
  process.stderr.write = origWrite;
});

type Creds = {
  mcp?: Record<
    string,
    {
      oauth?: {
        tokens?: { accessToken: string; refreshToken?: string; expiresAt?: number };
        client?: { clientSecret?: string };
        state?: string;
        stepUp?: string;
        reason?: string;
      };
    }
  >;
};

function readCreds(home: string): Creds {
  const file = path.join(home, 'creds.json');
  if (!existsSync(file)) return {};
  const doc = JSON.parse(readFileSync(file, 'utf8')) as Creds;
  for (const s of Object.values(doc.mcp ?? {})) {
    const o = s.oauth;
    if (o?.tokens?.accessToken) secrets.add(o.tokens.accessToken);
    if (o?.tokens?.refreshToken) secrets.add(o.tokens.refreshToken);
    if (o?.client?.clientSecret) secrets.add(o.client.clientSecret);
  }
  return doc;
}

function mode(home: string): number {
  return statSync(path.join(home, 'creds.json')).mode & 0o777;
}

/** Records what the test saw of an error or status, for the leak check. */
function seen<T>(v: T): T {
  texts.push(AlbedoError.is(v) ? JSON.stringify({ ...v.toJSON(), stack: v.stack }) : JSON.stringify(v));
  return v;
}

async function setup(
  t: Tap,
  stackOpts: Parameters<typeof startOAuthStack>[0] = {},
  albedoOpts: AlbedoOptions = {},
): Promise<{ stack: OAuthStack; home: string; albedo: Albedo }> {
  const stack = await startOAuthStack(stackOpts);
  const home = tempHome(t);
  const albedo = await createAlbedo({
    home,
    transportWorkers: 1,
    authorize: async ({ url }) => {
      await browserStandIn(url);
    },
    ...albedoOpts,
  });
  t.teardown(async () => {
    await albedo.close();
    await stack.close();
  });
  return { stack, home, albedo };
}
type Tap = { teardown(fn: () => unknown): void };

/** A port nobody listens on right now (each test its own, so parallel test files never share a callback port). */
async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

const text = (r: unknown): string => (r as { content?: Array<{ text?: string }> }).content?.[0]?.text ?? '';

t.test('sign-in, calls, step-up on insufficient_scope', async (t) => {
  const { stack, home, albedo } = await setup(t);
  const callbackPort = await freePort();
  const cfg = { url: stack.mcpUrl, oauth: { callbackPort } };
  const name = 'secure';

  t.equal((await albedo.authStatus(cfg, { name })).state, 'none', 'nothing stored yet');
  const first = seen(await rejection(albedo.connect(cfg, { name })));
  t.equal(first.code, 'ALBEDO_NEEDS_SIGN_IN', 'a 401 asks for a sign-in');
  t.equal(first.outcome, 'not_run', 'and says the request did not run');
  t.match(first.message, /needs the user to sign in/);
  t.equal((first.data as { reason: string }).reason, 'not_signed_in');
  const pending = seen(await albedo.authStatus(cfg, { name }));
  t.equal(pending.state, 'needs_sign_in');
  t.equal(mode(home), 0o600, 'creds.json is 0600 after the challenge was recorded');

  const status = seen(await albedo.signIn(cfg, { name }));
  t.equal(status.state, 'signed_in');
  t.equal(status.account, 'alice', 'the account is the token subject');
  t.match(status.scope, /mcp:read/, 'the scope came from the challenge / resource metadata');
  t.equal(status.client?.kind, 'dcr', 'a dynamically registered client');
  t.equal(status.issuer, stack.issuer);
  t.equal(status.refreshable, true, 'a refresh token was issued');
  t.notOk(JSON.stringify(status).includes('accessToken'), 'the status carries no token');
  t.equal(stack.stats.registrations, 1);
  t.equal(stack.stats.tokenRequests.authorization_code, 1);
  t.equal(mode(home), 0o600, 'creds.json is 0600 after the sign-in');
  const creds = readCreds(home);
  t.ok(creds.mcp?.secure?.oauth?.tokens?.accessToken, 'the tokens are in creds.json under mcp.secure.oauth');

  const c = await albedo.connect(cfg, { name });
  t.match(text(await c.callTool('whoami', {})), /^sub=alice scope=.*mcp:read/, 'the MCP server accepted the token');
  t.ok(
    stack.stats.mcpAuthHeaders.every((h) => h.startsWith('Bearer ')),
    'sent as Bearer',
  );

  // Step-up: the admin tool needs mcp:admin; the token is kept and the union recorded.
  const up = seen(await rejection(c.callTool('admin', {})));
  t.equal(up.code, 'ALBEDO_NEEDS_SIGN_IN');
  t.equal((up.data as { reason: string }).reason, 'insufficient_scope');
  t.match((up.data as { step_up: string }).step_up, /mcp:read/);
  t.match((up.data as { step_up: string }).step_up, /mcp:admin/);
  const st = seen(await albedo.authStatus(cfg, { name }));
  t.equal(st.step_up, (up.data as { step_up: string }).step_up, 'the status reports the step-up');
  t.match(text(await c.callTool('whoami', {})), /sub=alice/, 'the old token still works for what it covers');

  const again = seen(await albedo.signIn(cfg, { name }));
  t.match(again.scope, /mcp:admin/, 'the next sign-in asked for the union');
  t.match(again.scope, /mcp:read/);
  t.equal(again.step_up, undefined, 'the step-up is done');
  t.equal(stack.stats.registrations, 1, 'the registration was reused (same issuer and redirect)');
  t.match(text(await c.callTool('admin', {})), /admin ok/, 'the same connection now calls admin');
  t.equal(mode(home), 0o600);
  await c.close();

  // The callback port is taken: an ephemeral one, and so a new registration (its redirect differs).
  const squatter = net.createServer();
  await new Promise<void>((r) => squatter.listen(callbackPort, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => squatter.close(() => r())));
  const moved = seen(await albedo.signIn(cfg, { name }));
  t.equal(moved.state, 'signed_in', 'signed in through an ephemeral callback port');
  t.equal(stack.stats.registrations, 2, 'registered again for the new redirect URI');
  t.not(moved.client?.id, again.client?.id);

  const all = seen(await albedo.authStatuses());
  t.same(
    all.map((x) => [x.server, x.state]),
    [['secure', 'signed_in']],
    'the list of every server with OAuth state',
  );
  const out = seen(await albedo.signOut(cfg, { name }));
  t.equal(out.state, 'signed_out');
  t.notOk(readCreds(home).mcp?.secure?.oauth?.tokens, 'signing out removed the tokens');
  const after = seen(await rejection(albedo.connect(cfg, { name })));
  t.equal(after.code, 'ALBEDO_NEEDS_SIGN_IN');
  t.equal((after.data as { reason: string }).reason, 'signed_out');
});

t.test('refresh near expiry, and a revoked refresh token marks the server needs_sign_in', async (t) => {
  const { stack, home, albedo } = await setup(t, { accessTokenTtl: 4 });
  const cfg = { url: stack.mcpUrl };
  const name = 'short';
  seen(await albedo.signIn(cfg, { name }));
  const c = await albedo.connect(cfg, { name });
  const before = readCreds(home).mcp!.short!.oauth!.tokens!;
  const refusedBefore = stack.stats.mcp401;
  await new Promise((r) => setTimeout(r, 2_300));
  t.match(text(await c.callTool('whoami', {})), /sub=alice/);
  t.equal(stack.stats.tokenRequests.refresh_token, 1, 'refreshed once, before the request');
  const afterRefresh = readCreds(home).mcp!.short!.oauth!.tokens!;
  t.not(afterRefresh.accessToken, before.accessToken, 'a new access token');
  t.not(afterRefresh.refreshToken, before.refreshToken, 'the refresh token rotated');
  t.equal(stack.stats.mcp401, refusedBefore, 'no request was refused: the refresh came first');
  t.equal(mode(home), 0o600, 'creds.json is 0600 after the refresh');

  await stack.revokeRefreshTokens();
  await new Promise((r) => setTimeout(r, 4_300));
  const err = seen(await rejection(c.callTool('whoami', {})));
  t.equal(err.code, 'ALBEDO_NEEDS_SIGN_IN', 'an expired token that cannot be refreshed needs a sign-in');
  t.equal((err.data as { reason: string }).reason, 'refresh_refused');
  t.equal(stack.stats.tokenRequests.refresh_token, 2, 'the refused refresh was tried once');
  const st = seen(await albedo.authStatus(cfg, { name }));
  t.equal(st.state, 'needs_sign_in');
  t.equal(st.reason, 'refresh_refused');
  const again = seen(await rejection(c.callTool('whoami', {})));
  t.equal(again.code, 'ALBEDO_NEEDS_SIGN_IN');
  t.equal(stack.stats.tokenRequests.refresh_token, 2, 'a refused refresh is not tried again');
  await c.close();
});

t.test('a server that refuses every token: one refresh for the request, then needs_sign_in (no refresh loop)', async (t) => {
  const { stack, home, albedo } = await setup(t);
  const cfg = { url: stack.mcpUrl };
  const name = 'refuser';
  seen(await albedo.signIn(cfg, { name }));
  const c = await albedo.connect(cfg, { name });
  stack.refuseAllTokens(true);
  const before = stack.stats.tokenRequests.refresh_token ?? 0;
  const err = seen(await rejection(c.callTool('whoami', {})));
  t.equal(err.code, 'ALBEDO_NEEDS_SIGN_IN');
  t.equal(err.outcome, 'not_run');
  t.equal((err.data as { reason: string }).reason, 'token_rejected');
  t.equal((stack.stats.tokenRequests.refresh_token ?? 0) - before, 1, 'exactly one refresh for the refused request');
  t.equal((await albedo.authStatus(cfg, { name })).state, 'needs_sign_in');
  const again = seen(await rejection(c.callTool('whoami', {})));
  t.equal(again.code, 'ALBEDO_NEEDS_SIGN_IN');
  t.equal((stack.stats.tokenRequests.refresh_token ?? 0) - before, 1, 'the next call does not refresh again');
  t.equal(mode(home), 0o600);
  stack.refuseAllTokens(false);
  await c.close();
});

t.test('two processes race a rotating refresh token: one refresh, both signed in', async (t) => {
  const { stack, home, albedo } = await setup(t, { accessTokenTtl: 6 });
  const cfg = { url: stack.mcpUrl };
  const name = 'shared';
  seen(await albedo.signIn(cfg, { name }));
  const start = readCreds(home).mcp!.shared!.oauth!.tokens!;
  const kids = [0, 1].map(() => {
    const child = spawn(NODE, [fixture('oauth-caller.ts'), home, stack.mcpUrl, name, 'whoami'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout! });
    const messages: Array<Record<string, unknown>> = [];
    const done = new Promise<void>((r) => child.on('exit', () => r()));
    const ready = new Promise<void>((r) =>
      lines.on('line', (l) => {
        const m = JSON.parse(l) as Record<string, unknown>;
        messages.push(m);
        if (m.ready) r();
      }),
    );
    t.teardown(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    return { child, messages, done, ready };
  });
  await Promise.all(kids.map((k) => k.ready));
  // Into the refresh window (half of the 6 s lifetime), then both at once.
  const wait = start.expiresAt! - 2_500 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  for (const k of kids) k.child.stdin!.write('go\n');
  await Promise.all(kids.map((k) => k.done));
  for (const [i, k] of kids.entries()) {
    const res = k.messages.find((m) => 'ok' in m);
    seen(res);
    t.same(res && { ok: res.ok, text: String(res.text).slice(0, 9) }, { ok: true, text: 'sub=alice' }, `process ${i} called the tool`);
  }
  t.equal(stack.stats.tokenRequests.refresh_token, 1, 'exactly one refresh request reached the authorization server');
  const end = readCreds(home).mcp!.shared!.oauth!;
  t.equal(end.state, 'signed_in', 'still signed in');
  t.not(end.tokens!.refreshToken, start.refreshToken, 'the rotated refresh token was stored');
  t.equal(mode(home), 0o600);
  t.notOk(existsSync(path.join(home, 'creds.json.lock')), 'the lock was released');
});

t.test('bad callbacks are refused with a specific reason and store no token', async (t) => {
  const { stack, home, albedo } = await setup(t);
  const cfg = { url: stack.mcpUrl };
  const tamper =
    (change: (u: URL) => void) =>
    async ({ url }: { url: string }): Promise<string> => {
      const { callbackUrl } = await redirectOnly(url);
      const u = new URL(callbackUrl);
      change(u);
      return u.toString();
    };
  const cases: Array<[string, (u: URL) => void, string]> = [
    ['forged state', (u) => u.searchParams.set('state', 'forged-by-an-attacker'), 'state_mismatch'],
    ['missing state', (u) => u.searchParams.delete('state'), 'state_mismatch'],
    ['wrong iss', (u) => u.searchParams.set('iss', 'https://evil.example.com'), 'iss_mismatch'],
    ['normalised iss', (u) => u.searchParams.set('iss', `${stack.issuer}/`), 'iss_mismatch'],
    ['iss promised and missing', (u) => u.searchParams.delete('iss'), 'iss_missing'],
    [
      'access denied',
      (u) => {
        u.searchParams.delete('code');
        u.searchParams.set('error', 'access_denied');
      },
      'denied',
    ],
  ];
  for (const [what, change, reason] of cases) {
    const err = seen(await rejection(albedo.signIn(cfg, { name: 'bad', authorize: tamper(change) })));
    t.equal(err.code, 'ALBEDO_SIGN_IN_FAILED', `${what}: refused`);
    t.equal((err.data as { reason: string }).reason, reason, `${what}: ${err.message}`);
    t.notOk(readCreds(home).mcp?.bad?.oauth?.tokens, `${what}: no token stored`);
  }
  t.equal(stack.stats.tokenRequests.authorization_code ?? 0, 0, 'no code ever reached the token endpoint');

  // A stray request to the loopback callback (an old tab) is answered 400 and does not end the sign-in.
  let strayStatus = 0;
  const ok = seen(
    await albedo.signIn(cfg, {
      name: 'stray',
      authorize: async ({ url }) => {
        const redirect = new URL(url).searchParams.get('redirect_uri')!;
        const stray = await fetch(`${redirect}?code=stolen&state=not-this-one`);
        strayStatus = stray.status;
        await stray.body?.cancel();
        await browserStandIn(url);
      },
    }),
  );
  t.equal(strayStatus, 400, 'the stray callback was refused');
  t.equal(ok.state, 'signed_in', 'and the real one completed the sign-in');

  const expired = seen(await rejection(albedo.signIn(cfg, { name: 'bad', timeoutMs: 300, authorize: () => new Promise(() => {}) })));
  t.equal(expired.code, 'ALBEDO_SIGN_IN_FAILED');
  t.equal((expired.data as { reason: string }).reason, 'expired', 'a sign-in left unfinished expires');
  t.notOk(readCreds(home).mcp?.bad?.oauth?.tokens);
  t.equal((await albedo.authStatus(cfg, { name: 'bad' })).state === 'signed_in', false);
});

t.test('no token appears in any error, status or stderr line', async (t) => {
  t.ok(secrets.size >= 4, `tokens were collected from creds.json (${secrets.size})`);
  const all = texts.join('\n');
  for (const s of secrets) t.notOk(all.includes(s), `a ${s.length}-character secret is not in the output`);
});
