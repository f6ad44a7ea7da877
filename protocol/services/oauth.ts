/** The oauth service's message map. */
import type { ResolvedAuth } from '../config.ts';
import type { AuthStatus } from '../oauth.ts';

export interface OAuthMethods {
  /** Runs one sign-in (or a non-interactive grant) and stores the tokens; the user is shown the URL through `client/authorize`. */
  'oauth/sign-in': { params: { auth: ResolvedAuth; serverUrl: string; timeoutMs: number }; result: AuthStatus };
}
