/**
 * Sign-in expiry for the soak (bench/soak.ts): a real OAuth authorization
 * server (oidc-provider) and an official-SDK MCP server demanding its JWT
 * access tokens (test/fixtures/oauth-stack.ts, tool `whoami`), run as a
 * process of their own (test/fixtures/oauth-stack-process.ts) so that what is
 * sampled is Albedo's alone; its access tokens live `accessTokenTtl` seconds
 * and its refresh tokens rotate. The server is configured shared in the soak
 * home, and signed in once before the rounds as a user would: the
 * authorization-code flow through `albedo.signIn` with the browser stand-in
 * of the tests (test/fixtures/browser.ts) following the authorization server's
 * redirects to Albedo's loopback callback. From then on every new access token
 * must come from Albedo refreshing it: the token endpoint's counts by grant
 * type show it (`refresh_token` growing, `authorization_code` staying at the
 * one sign-in).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import type { AlbedoWithFaults } from '../api/albedo.ts';
import { browserStandIn } from '../test/fixtures/browser.ts';
import { NODE, ROOT } from './proc.ts';

/** The signed-in server's name in the soak home. */
export const SIGNED_IN = 'signed';

export interface SignInStats {
  /** Requests that reached the token endpoint, by grant_type (refused ones included). */
  tokenRequests: Record<string, number>;
  /** Requests that reached the MCP server with an Authorization header. */
  mcpRequests: number;
  /** Requests the MCP server refused with 401 (a token it did not take). */
  mcp401: number;
}

export interface OAuthProcess {
  pid: number;
  mcpUrl: string;
  stats(): Promise<SignInStats>;
  /** Destroys every refresh token issued so far (test hook: the refresh that follows is refused). */
  revokeRefreshTokens(): Promise<void>;
  close(): Promise<void>;
}

/** Starts test/fixtures/oauth-stack-process.ts with access tokens living `accessTokenTtl` seconds. */
export async function startOAuthProcess(accessTokenTtl: number): Promise<OAuthProcess> {
  const script = path.join(ROOT, 'test', 'fixtures', 'oauth-stack-process.ts');
  const child: ChildProcess = spawn(NODE, [script, String(accessTokenTtl)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: Interface = createInterface({ input: child.stdout! });
  const waiting: Array<(v: Record<string, unknown>) => void> = [];
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let gone: Error | undefined;
  void exited.then(() => {
    gone = new Error('the OAuth stack process exited');
  });
  lines.on('line', (l) => waiting.shift()?.(JSON.parse(l) as Record<string, unknown>));
  const next = (): Promise<Record<string, unknown>> =>
    gone
      ? Promise.reject(gone)
      : new Promise((resolve, reject) => {
          waiting.push(resolve);
          void exited.then(() => reject(new Error('the OAuth stack process exited')));
        });
  // One request at a time: each answer is the next line.
  let queue: Promise<unknown> = Promise.resolve();
  const ask = (cmd: string): Promise<Record<string, unknown>> => {
    const p = queue.then(() => {
      const answer = next();
      child.stdin!.write(`${cmd}\n`);
      return answer;
    });
    queue = p.catch(() => {});
    return p;
  };
  const hello = await next();
  return {
    pid: child.pid!,
    mcpUrl: String(hello.mcpUrl),
    async stats() {
      const s = await ask('stats');
      return { tokenRequests: s.tokenRequests as Record<string, number>, mcpRequests: Number(s.mcpRequests), mcp401: Number(s.mcp401) };
    },
    async revokeRefreshTokens() {
      await ask('revoke');
    },
    async close() {
      child.stdin!.end();
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** The signed-in server's entry in extensions.json: shared, OAuth with an ephemeral loopback callback. */
export function signedInConfig(mcpUrl: string): Record<string, unknown> {
  return { url: mcpUrl, share: true, oauth: { callbackPort: 0 }, callTimeoutMs: 60_000, startupTimeoutMs: 60_000 };
}

/** Signs in to the signed-in server once, as a user would (the browser stand-in completes the authorization-code flow). */
export async function signInOnce(albedo: AlbedoWithFaults, mcpUrl: string): Promise<void> {
  const st = await albedo.signIn(signedInConfig(mcpUrl) as Parameters<AlbedoWithFaults['signIn']>[0], {
    name: SIGNED_IN,
    authorize: async ({ url }) => {
      await browserStandIn(url);
    },
  });
  if (st.state !== 'signed_in') throw new Error(`soak: the sign-in ended ${st.state}`);
}
