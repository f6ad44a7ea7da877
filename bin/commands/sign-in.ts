/**
 * `albedo mcp sign-in NAME` and `albedo mcp sign-out NAME`, over the
 * daemon's sign-in routes (issue 11: `PUT /v1/auth/logins/mcp:{name}` →
 * `{ authorizationUrl }`, `GET` its progress, `DELETE` cancels, `POST
 * …/callback` takes a pasted callback URL; sign-out is `PATCH` of the server
 * with `secrets: { oauth: null }`).
 *
 * The authorization URL is printed; nothing is opened unless `--open` asks.
 * The command then waits for the daemon to finish the sign-in (its loopback
 * callback, or a callback URL pasted here on a terminal), polling `GET`;
 * Ctrl-C cancels the pending sign-in (`DELETE`).
 */
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import { OPENER, openBrowser } from '../client/browser.ts';
import { Client } from '../client/client.ts';
import { CliError, EXIT, errorLine, usage } from '../client/errors.ts';
import { seg } from '../client/http.ts';
import { emit, note, safe } from '../client/output.ts';
import { saveLine } from '../client/show.ts';

const login = (name: string, suffix = ''): string => `/v1/auth/logins/mcp:${seg(name)}${suffix}`;
/** The daemon's pending state expires after ten minutes (docs/design.md, "Sign-in"): waiting longer is pointless. */
const DEFAULT_WAIT_S = 600;
const POLL_MS = 1_000;

/**
 * Opens `url` in the desktop's browser, detached, through a redirect page in
 * `home` (the opener's arguments hold no `state` or PKCE challenge; the page
 * goes when this command exits); a failure to open is only news.
 */
function openUrl(home: string, url: string): void {
  void openBrowser(home, url, { text: 'Continue to the sign-in' }).then(({ opened }) => {
    if (!opened) note(`albedo: cannot open a browser (${OPENER}); open the URL yourself`);
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A sign-in as the daemon reports it (`GET /v1/auth/logins/mcp:{name}`). */
interface Login {
  server: string;
  state: 'pending' | 'completed' | 'failed';
  authorizationUrl: string | null;
  auth: { state?: string; account?: string } | null;
  error: { code: string; message: string; reason?: string } | null;
}

function failed(l: Login): CliError {
  return new CliError(l.error?.code ?? 'ALBEDO_SIGN_IN_FAILED', l.error?.message ?? `the sign-in to ${l.server} failed`, EXIT.failed);
}

/** Polls the sign-in until it is over; resolves with it completed, throws its error when it failed. */
async function waitDone(client: Client, name: string, withinS: number, stop: { done: Login | null }): Promise<Login> {
  const end = Date.now() + withinS * 1000;
  while (Date.now() < end) {
    if (stop.done) return stop.done;
    const r = await client.call<Login>('GET', login(name), { accept: [404] });
    if (r.status === 404) throw new CliError('ALBEDO_SIGN_IN_FAILED', `the sign-in to ${name} was cancelled elsewhere`, EXIT.failed);
    if (r.body.state === 'completed') return r.body;
    if (r.body.state === 'failed') throw failed(r.body);
    await sleep(POLL_MS);
  }
  throw new CliError('ALBEDO_TIMEOUT', `the sign-in to ${name} did not complete within ${withinS} s`, EXIT.failed);
}

/** The account signed in to, always said: a sign-in completed by someone else's account must not pass unnoticed. */
const signedIn = (l: Login): string =>
  safe(
    l.auth?.account
      ? `signed in to ${l.server} as ${l.auth.account}`
      : `signed in to ${l.server} (the authorization server named no account)`,
  );

export function signInCommands(mcp: Command): void {
  mcp
    .command('sign-in')
    .argument('<name>')
    .description('sign in to an http server with OAuth: prints the authorization URL and waits until the daemon has the tokens')
    .option('--open', "open the URL in this desktop's browser")
    .option('--no-wait', 'print the URL and exit (the daemon keeps the sign-in pending for ten minutes)')
    .option('--timeout <seconds>', `give up waiting after this long (default ${DEFAULT_WAIT_S})`)
    .option('--json', 'print the sign-in as one JSON object: { login, server, state, authorizationUrl, expiresAt, auth, error }')
    .action(async (name: string, o: { open?: boolean; wait: boolean; timeout?: string; json?: boolean }) => {
      const withinS = o.timeout === undefined ? DEFAULT_WAIT_S : Number(o.timeout);
      if (!Number.isInteger(withinS) || withinS < 1)
        throw usage(`--timeout must be a whole number of seconds, not ${JSON.stringify(o.timeout)}`);
      const client = new Client();
      const { body: started } = await client.call<Login>('PUT', login(name));
      // A grant that needs no user (client credentials, a workload identity) is over already.
      if (started.state === 'completed') return emit(!!o.json, started, () => signedIn(started));
      if (started.state === 'failed') throw failed(started);
      const url = started.authorizationUrl;
      if (!url) throw new CliError('ALBEDO_INVALID_RESPONSE', 'the daemon did not answer with an authorization URL', EXIT.failed);
      if (!o.wait) return emit(!!o.json, started, () => safe(url));
      // With --json stdout gets one object at the end; the person at the terminal still needs the URL now.
      const show = o.json ? note : (l: string) => process.stdout.write(l + '\n');
      show(`sign in to ${safe(name)} by opening this URL in a browser:\n\n  ${safe(url)}\n`);
      if (o.open) openUrl(client.home, url);
      const stop: { done: Login | null } = { done: null };
      // Ctrl-C: the pending sign-in is cancelled (its loopback listener closes) before the command exits.
      const cancel = (): void => {
        void client.call('DELETE', login(name), { accept: [404] }).finally(() => process.exit(130));
      };
      process.once('SIGINT', cancel);
      let rl: ReturnType<typeof createInterface> | undefined;
      if (process.stdin.isTTY) {
        show('waiting for the browser… (or paste the URL it was sent to here and press Enter)');
        rl = createInterface({ input: process.stdin });
        rl.on('line', (line) => {
          const pasted = line.trim();
          if (!pasted) return;
          client.call<Login>('POST', login(name, '/callback'), { body: { url: pasted } }).then(
            (r) => {
              stop.done = r.body;
            },
            (err: unknown) => note(errorLine(err)),
          );
        });
      }
      try {
        const done = await waitDone(client, name, withinS, stop);
        emit(!!o.json, done, () => signedIn(done));
      } finally {
        rl?.close();
        process.off('SIGINT', cancel);
      }
    });

  mcp
    .command('sign-out')
    .argument('<name>')
    .description("forget a server's OAuth tokens (the server then needs a sign-in again)")
    .option('--json', 'print the save result as one JSON object: { saved, created, check, server }')
    .action(async (name: string, o: { json?: boolean }) => {
      const { body: r } = await new Client().call('PATCH', `/v1/mcp/servers/${seg(name)}`, {
        body: { secrets: { oauth: null } },
        headers: { 'content-type': 'application/merge-patch+json' },
      });
      emit(!!o.json, r, () => safe(`signed out of ${name}; ${saveLine(name, r)}`));
    });
}
