/**
 * The oauth service: runs sign-ins in a worker of their own, so a loopback
 * listener and a user who takes minutes never sit on the embedder's thread
 * or a transport worker. Showing the authorization URL (opening a browser,
 * reading a pasted callback) is the embedder's: the `client/authorize`
 * local service. Tokens reach the transport through creds.json.
 */
import { defineService } from '../../kernel/service.ts';
import { credsStore } from './store.ts';
import { signIn } from './sign-in.ts';

export default defineService('oauth', {
  handlers: {
    async 'oauth/sign-in'(p, call) {
      const store = credsStore(p.auth.credsPath);
      const left = (): number => Math.max(1_000, call.deadline - Date.now());
      return signIn(
        { auth: p.auth, serverUrl: p.serverUrl, store },
        {
          timeoutMs: p.timeoutMs,
          signal: call.signal,
          open: async (url) => {
            const r = await call.call('client', 'client/authorize', { server: p.auth.name, url }, { timeoutMs: left() });
            return r?.callbackUrl;
          },
        },
      );
    },
  },
});
