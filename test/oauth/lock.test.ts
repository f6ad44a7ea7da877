// The credentials lock (issue 10, item 7): a refresh holds only its own
// server's record lock across the request to the authorization server, so
// while one server's token endpoint is slow, other servers' refreshes,
// sign-outs and writes from other processes go ahead; a second refresh of the
// same record still waits for the first and adopts its token (single flight).
// The slow token endpoint is a loopback server that holds its answer until
// the test releases it, so the assertions are on the order of events, never
// on elapsed time.
import t from 'tap';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { FileCredsStore, type OAuthRecord } from '../../services/oauth/store.ts';
import { LinkAuth } from '../../services/oauth/link-auth.ts';
import { signOut } from '../../services/oauth/sign-in.ts';
import type { ResolvedAuth } from '../../protocol/config.ts';
import { fixture, NODE, tempHome } from '../helpers.ts';

t.setTimeout(90_000);

interface TokenServer {
  base: string;
  /** Bodies of the token requests received. */
  requests: string[];
  /** Resolves when the first token request has arrived. */
  reached: Promise<void>;
  /** Lets held answers go (idempotent). */
  release(): void;
  released: boolean;
}

/** A token endpoint (`/token`) that rotates tokens named after `name`; with `hold`, every answer waits for release(). */
async function tokenServer(t: Tap, name: string, hold: boolean): Promise<TokenServer> {
  let reached!: () => void;
  const reachedP = new Promise<void>((r) => (reached = r));
  let letGo!: () => void;
  const releasedP = new Promise<void>((r) => (letGo = r));
  let n = 0;
  const srv = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      if (req.url !== '/token') return void res.writeHead(404).end();
      out.requests.push(body);
      reached();
      void (hold ? releasedP : Promise.resolve()).then(() => {
        n++;
        res
          .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
          .end(JSON.stringify({ access_token: `${name}-AT${n}`, token_type: 'Bearer', expires_in: 3600, refresh_token: `${name}-RT${n}` }));
      });
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const out: TokenServer = {
    base: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`,
    requests: [],
    reached: reachedP,
    released: false,
    release: () => {
      out.released = true;
      letGo();
    },
  };
  t.teardown(
    () =>
      new Promise<void>((r) => {
        out.release();
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  );
  return out;
}
type Tap = { teardown(fn: () => unknown): void };

/** A signed-in record whose access token is due for refresh, at the authorization server `as`. */
function dueRecord(as: string, url: string, name: string): OAuthRecord {
  const now = Date.now();
  return {
    url,
    state: 'signed_in',
    updatedAt: 0,
    issuer: as,
    authServer: {
      issuer: as,
      token_endpoint: `${as}/token`,
      authorization_endpoint: `${as}/authorize`,
      code_challenge_methods_supported: ['S256'],
    },
    client: { issuer: as, clientId: `${name}-client`, authMethod: 'none', kind: 'dcr', registeredAt: now },
    tokens: {
      accessToken: `${name}-AT0`,
      refreshToken: `${name}-RT0`,
      tokenType: 'Bearer',
      issuer: as,
      obtainedAt: now - 3_600_000,
      expiresAt: now + 5_000,
      resource: url,
    },
  };
}

const authFor = (name: string, credsPath: string): ResolvedAuth => ({
  name,
  credsPath,
  oauth: { grant: 'authorization_code', dpop: 'auto', callbackPort: 0 },
});
const urlOf = (name: string): string => `http://127.0.0.1:9/${name}`;

/** Another process that writes one record when told to (test/fixtures/oauth-store-writer.ts), started and ready. */
async function writerProcess(t: Tap, file: string, name: string, reason: string): Promise<{ go(): Promise<Record<string, unknown>> }> {
  const child = spawn(NODE, [fixture('oauth-store-writer.ts'), file, name, urlOf(name), reason], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const lines = createInterface({ input: child.stdout! });
  const messages: Array<Record<string, unknown>> = [];
  let onMessage: (() => void) | undefined;
  lines.on('line', (l) => {
    messages.push(JSON.parse(l) as Record<string, unknown>);
    onMessage?.();
  });
  const next = (pred: (m: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const m = messages.find(pred);
        if (m) resolve(m);
      };
      onMessage = check;
      child.once('exit', () => {
        check();
        reject(new Error('the writer process exited without answering'));
      });
      check();
    });
  await next((m) => m.ready === true);
  return {
    go: () => {
      child.stdin!.write('go\n');
      return next((m) => 'done' in m);
    },
  };
}

t.test('a refresh stuck at a slow token endpoint holds up no other server: refresh, sign-out, another process', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'creds.json');
  const slow = await tokenServer(t, 'a', true);
  const fast = await tokenServer(t, 'b', false);
  const store = new FileCredsStore(file);
  for (const [name, as] of [
    ['a', slow.base],
    ['b', fast.base],
    ['c', fast.base],
    ['d', fast.base],
  ] as const) {
    await store.update(name, urlOf(name), () => ({ record: dueRecord(as, urlOf(name), name), value: undefined }));
  }
  // Started before A's refresh, so its start-up is not inside the window being measured.
  const other = await writerProcess(t, file, 'd', 'written-by-another-process');

  const events: string[] = [];
  const a = new LinkAuth(authFor('a', file), urlOf('a'));
  const aHeaders = a.headers('POST', new URL(urlOf('a'))).then((h) => {
    events.push('A refreshed');
    return h;
  });
  await slow.reached;
  events.push('A is at its token endpoint');
  // A bound so that the code before this change (which makes B wait for A) fails instead of hanging; 12 s is below A's
  // 15 s request timeout.
  const bound = setTimeout(() => {
    events.push('A answered (bound reached)');
    slow.release();
  }, 12_000);
  t.teardown(() => clearTimeout(bound));

  const b = new LinkAuth(authFor('b', file), urlOf('b'));
  const bHeaders = await b.headers('POST', new URL(urlOf('b')));
  events.push(slow.released ? 'B refreshed (after A answered)' : 'B refreshed');
  await signOut({ auth: authFor('c', file), serverUrl: urlOf('c'), store });
  events.push(slow.released ? 'C signed out (after A answered)' : 'C signed out');
  const written = await other.go();
  events.push(slow.released ? 'D written by another process (after A answered)' : 'D written by another process');
  clearTimeout(bound);
  if (!slow.released) {
    events.push('A answered');
    slow.release();
  }
  const aH = await aHeaders;

  t.same(
    events,
    ['A is at its token endpoint', 'B refreshed', 'C signed out', 'D written by another process', 'A answered', 'A refreshed'],
    "every other write completed while A's token endpoint had not answered",
  );
  t.same(written, { done: true }, 'the other process wrote its record');
  t.equal(aH.headers.authorization, 'Bearer a-AT1', 'A got its refreshed token once its endpoint answered');
  t.equal(bHeaders.headers.authorization, 'Bearer b-AT1', 'B refreshed at its own endpoint');
  t.equal(slow.requests.length, 1, 'one refresh request for A');
  t.equal(fast.requests.length, 1, 'one refresh request for B');

  const doc = JSON.parse(readFileSync(file, 'utf8')) as { mcp: Record<string, { oauth: OAuthRecord }> };
  t.equal(doc.mcp.a!.oauth.tokens?.refreshToken, 'a-RT1', "A's rotated refresh token is stored");
  t.equal(doc.mcp.b!.oauth.tokens?.refreshToken, 'b-RT1', "B's rotated refresh token is kept beside it");
  t.equal(doc.mcp.c!.oauth.state, 'signed_out');
  t.notOk(doc.mcp.c!.oauth.tokens, "C's sign-out is kept");
  t.equal(doc.mcp.d!.oauth.reason, 'written-by-another-process', "the other process's write is kept");
  t.notOk(existsSync(`${file}.lock`), 'the document lock is released');
  t.same(readdirSync(`${file}.locks`), [], 'every record lock is released');
});

t.test('a second refresh of the same record waits for the first and adopts its token (one request)', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'creds.json');
  const slow = await tokenServer(t, 'a', true);
  await new FileCredsStore(file).update('a', urlOf('a'), () => ({ record: dueRecord(slow.base, urlOf('a'), 'a'), value: undefined }));
  const events: string[] = [];
  // Two link auths for one server (two connections): each has its own in-memory single flight; the record lock is what joins them.
  const first = new LinkAuth(authFor('a', file), urlOf('a'));
  const second = new LinkAuth(authFor('a', file), urlOf('a'));
  const p1 = first.headers('POST', new URL(urlOf('a'))).then((h) => {
    events.push('first done');
    return h;
  });
  await slow.reached;
  const p2 = second.headers('POST', new URL(urlOf('a'))).then((h) => {
    events.push('second done');
    return h;
  });
  // The second is queued behind the first's record lock; give it every chance to overtake (it must not).
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setTimeout(r, 200));
  events.push('answer released');
  slow.release();
  const [h1, h2] = await Promise.all([p1, p2]);
  t.same(events.slice(0, 1), ['answer released'], 'neither finished before the token endpoint answered');
  t.equal(h1.headers.authorization, 'Bearer a-AT1');
  t.equal(h2.headers.authorization, 'Bearer a-AT1', "the second adopted the first's token");
  t.equal(slow.requests.length, 1, 'exactly one refresh request');
});
