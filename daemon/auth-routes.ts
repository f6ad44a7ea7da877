/**
 * The sign-in routes (`/v1/auth/logins/{login}`, a login being `mcp:` and
 * a configured server's name), over the daemon's Logins: PUT starts a
 * sign-in and answers its authorization URL (the daemon opens no browser),
 * GET reports it, POST …/callback takes the callback URL the user pasted,
 * DELETE cancels it. Signing out is a settings write:
 * `PATCH /v1/mcp/servers/{name}` with `{ "secrets": { "oauth": null } }`.
 */
import { createRoute, type OpenAPIHono, type RouteConfig } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { ApiError } from './errors.ts';
import { callbackBodySchema, errorSchema, loginParamSchema, loginSchema } from './schemas.ts';
import type { Logins } from './logins.ts';

const json = <S>(schema: S, description: string) => ({ description, content: { 'application/json': { schema } } });
const err = (description: string) => json(errorSchema, description);

const COMMON = {
  401: err("no bearer token, or not this daemon's (ALBEDO_UNAUTHORIZED)"),
  403: err("an Origin other than the daemon's own (ALBEDO_BAD_ORIGIN)"),
  421: err("a Host that is not a loopback name with the daemon's port (ALBEDO_BAD_HOST)"),
  500: err('a defect in the daemon (ALBEDO_INTERNAL)'),
  503: err("the daemon's services are not available (ALBEDO_SERVICE_LOST, ALBEDO_CLOSED)"),
} as const;
const BAD_LOGIN = err(
  'the login is not mcp:<name>, or the server does not use OAuth (a stdio server, a fixed Authorization) (ALBEDO_INVALID_ARGUMENT)',
);
const params = { params: loginParamSchema };

const putLogin = createRoute({
  method: 'put',
  path: '/v1/auth/logins/{login}',
  tags: ['auth'],
  summary: 'Start signing in to a configured http server (or get the sign-in already pending): its authorization URL',
  request: params,
  responses: {
    201: json(loginSchema, 'started: open authorizationUrl in a browser; the loopback callback or a pasted one completes it'),
    200: json(loginSchema, 'a sign-in to this server was already pending: that one'),
    400: BAD_LOGIN,
    404: err('no such server (ALBEDO_NOT_FOUND)'),
    409: err('the server as saved cannot be prepared (ALBEDO_INVALID_CONFIG): fix its settings first'),
    502: err('the authorization server cannot be used for a sign-in (ALBEDO_SIGN_IN_FAILED: discovery, registration, no PKCE S256, …)'),
    ...COMMON,
  },
});
const getLogin = createRoute({
  method: 'get',
  path: '/v1/auth/logins/{login}',
  tags: ['auth'],
  summary: "A sign-in's progress: pending, completed or failed (with why)",
  request: params,
  responses: {
    200: json(loginSchema, 'the sign-in'),
    400: BAD_LOGIN,
    404: err('no sign-in to this server is known (ALBEDO_NOT_FOUND)'),
    ...COMMON,
  },
});
const deleteLogin = createRoute({
  method: 'delete',
  path: '/v1/auth/logins/{login}',
  tags: ['auth'],
  summary: 'Cancel a pending sign-in (its callback listener closes) and forget it',
  request: params,
  responses: {
    204: { description: 'cancelled and forgotten' },
    400: BAD_LOGIN,
    404: err('no sign-in to this server is known (ALBEDO_NOT_FOUND)'),
    ...COMMON,
  },
});
const postCallback = createRoute({
  method: 'post',
  path: '/v1/auth/logins/{login}/callback',
  tags: ['auth'],
  summary: 'Complete a pending sign-in with the callback URL the browser was sent to (pasted by the user)',
  request: { ...params, body: { required: true, content: { 'application/json': { schema: callbackBodySchema } } } },
  responses: {
    200: json(loginSchema, 'completed: the tokens are stored; sessions take the server in'),
    400: err(
      "not a URL, or not this sign-in's callback (another redirect URI, another state: another server's or an older sign-in); " +
        'the sign-in stays pending (ALBEDO_INVALID_ARGUMENT, path body.url)',
    ),
    404: err('no sign-in to this server is known (ALBEDO_NOT_FOUND)'),
    409: err(
      'the sign-in is not pending (completed, failed, expired), already has its callback, or failed at the exchange ' +
        '(ALBEDO_SIGN_IN_FAILED; GET says why)',
    ),
    413: err('the body is over 1 MiB (ALBEDO_TOO_LARGE)'),
    415: err('the body is not JSON (ALBEDO_INVALID_ARGUMENT)'),
    ...COMMON,
  },
});

/** The server's name of a login (`mcp:<name>`, checked by the route's schema). */
function serverOf(c: Context): string {
  return (c.req.param('login') ?? '').slice('mcp:'.length);
}

/** Adds the sign-in routes to `app`. */
export function authRoutes(app: OpenAPIHono, logins: Logins): void {
  const route = <R extends RouteConfig>(r: R, handler: (c: Context) => Promise<Response> | Response): void => {
    app.openapi(r, handler as never);
  };

  route(putLogin, async (c) => {
    const { login, created } = await logins.start(serverOf(c));
    return c.json(login, created ? 201 : 200);
  });
  route(getLogin, (c) => c.json(logins.get(serverOf(c)), 200));
  route(deleteLogin, async (c) => {
    const name = serverOf(c);
    if (!(await logins.remove(name))) {
      throw new ApiError(404, 'ALBEDO_NOT_FOUND', `no sign-in to ${JSON.stringify(name)} is known`, { path: ['params', 'login'] });
    }
    return c.body(null, 204);
  });
  route(postCallback, async (c) => {
    const body = c.req.valid('json' as never) as { url: string };
    return c.json(await logins.callback(serverOf(c), body.url), 200);
  });
}
