/**
 * The ACP routes (`/v1/acp/*`, the daemon's bearer as every /v1 route) over acp/sessions.ts:
 * what `albedo acp` calls to open an ACP session, attach to one (load,
 * resume), bind the agent's session id, renew its lease, republish the
 * editor's servers, and let go. The calls that act for the attachment carry
 * its token in `Albedo-Attachment-Token`; reads (and closing the session,
 * `DELETE /v1/sessions/{id}`) are anyone's with the daemon's token. A
 * workspace (`cwd`) at or inside the daemon's home is refused (400 at
 * body.cwd) before anything is made or changed.
 */
import { createRoute, type OpenAPIHono, type RouteConfig } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { AcpRefusal, type AcpSessions } from './acp/sessions.ts';
import { ApiError, statusOf } from './errors.ts';
import { errorSchema } from './schemas.ts';
import { insideHome } from './acp/workspace.ts';
import {
  attachBodySchema,
  attachmentSchema,
  bindBodySchema,
  createBodySchema,
  idParam,
  infoListSchema,
  infoSchema,
  leaseSchema,
  overlayBodySchema,
  overlayResultSchema,
  tokenHeader,
  type AttachBody,
  type AcpMcpServer,
  type CreateBody,
} from './acp/schemas.ts';

type OverlayBody = { cwd?: string; mcpServers: AcpMcpServer[] };

const json = <S>(schema: S, description: string) => ({ description, content: { 'application/json': { schema } } });
const err = (description: string) => json(errorSchema, description);
const body = <S>(schema: S) => ({ required: true, content: { 'application/json': { schema } } });

const COMMON = {
  400: err(
    "invalid input: `path` names the field, ['body','cwd'] for a workspace at or inside the daemon's home (ALBEDO_INVALID_ARGUMENT)",
  ),
  401: err("no bearer token, or not this daemon's (ALBEDO_UNAUTHORIZED)"),
  404: err('no ACP session has this id (ALBEDO_NOT_FOUND)'),
  500: err('a defect in the daemon (ALBEDO_INTERNAL)'),
} as const;
const PUBLISH = {
  409: err(
    "the editor's servers were refused (ALBEDO_OVERLAY_FAILED: `data.reason` duplicate, collision, unsupported, invalid or failed, " +
      '`path` the entry), or another attachment holds the session (ALBEDO_ATTACHMENT_HELD)',
  ),
  503: err('installed but the reload failed (ALBEDO_OVERLAY_RELOAD_FAILED), or the outcome is unknown (ALBEDO_OVERLAY_UNCERTAIN)'),
} as const;
const LOST = { 409: err('the token is not the session’s attachment any more (ALBEDO_ATTACHMENT_LOST)') } as const;
const TAG = ['acp'];

const createRoute_ = createRoute({
  method: 'post',
  path: '/v1/acp/sessions',
  tags: TAG,
  summary: "Open an ACP session: a session with the editor's servers as its overlay, attached to the caller",
  request: { body: body(createBodySchema) },
  responses: { 201: json(attachmentSchema, 'open and attached'), ...COMMON, ...PUBLISH },
});
const attachRoute = createRoute({
  method: 'post',
  path: '/v1/acp/attach',
  tags: TAG,
  summary: "Attach to the ACP session bound to the agent's session id (its overlay published again); none bound: a new one",
  request: { body: body(attachBodySchema) },
  responses: { 200: json(attachmentSchema, 'attached'), 201: json(attachmentSchema, 'none was bound: opened'), ...COMMON, ...PUBLISH },
});
const bindRoute = createRoute({
  method: 'patch',
  path: '/v1/acp/sessions/{id}',
  tags: TAG,
  summary: "Bind the agent's session id (after its session/new)",
  request: { params: idParam, headers: tokenHeader, body: body(bindBodySchema) },
  responses: { 204: { description: 'bound' }, ...COMMON, ...LOST },
});
const leaseRoute = createRoute({
  method: 'post',
  path: '/v1/acp/sessions/{id}/lease',
  tags: TAG,
  summary: 'Renew the attachment’s lease; `state` says whether the overlay must be published again',
  request: { params: idParam, headers: tokenHeader },
  responses: { 200: json(leaseSchema, 'renewed'), ...COMMON, ...LOST },
});
const overlayRoute = createRoute({
  method: 'put',
  path: '/v1/acp/sessions/{id}/overlay',
  tags: TAG,
  summary: "Publish the editor's servers again (or others): only the attachment may",
  request: { params: idParam, headers: tokenHeader, body: body(overlayBodySchema) },
  responses: { 200: json(overlayResultSchema, 'published'), ...COMMON, ...PUBLISH },
});
const releaseRoute = createRoute({
  method: 'delete',
  path: '/v1/acp/sessions/{id}/attachment',
  tags: TAG,
  summary: 'Release the attachment: the session, its overlay and its servers stay',
  request: { params: idParam, headers: tokenHeader },
  responses: { 204: { description: 'released' }, ...COMMON, ...LOST },
});
const listRoute = createRoute({
  method: 'get',
  path: '/v1/acp/sessions',
  tags: TAG,
  summary: "The ACP sessions: bindings, states, the editor's servers by name",
  responses: { 200: json(infoListSchema, 'the sessions'), ...COMMON },
});
const getRoute = createRoute({
  method: 'get',
  path: '/v1/acp/sessions/{id}',
  tags: TAG,
  summary: 'One ACP session',
  request: { params: idParam },
  responses: { 200: json(infoSchema, 'the session'), ...COMMON },
});

/** An ACP refusal answered with its path and, for a publication, `data` (server, reason, code: names only). */
class AcpApiError extends ApiError {
  readonly data: Record<string, unknown> | undefined;
  constructor(e: AcpRefusal) {
    super(statusOf(e.code), e.code, e.message, { path: e.path, outcome: e.outcome });
    this.data = e.fields;
  }
  override body() {
    const b = super.body();
    return this.data ? { error: { ...b.error, data: this.data } } : b;
  }
}

/** `home`: the daemon's $ALBEDO_HOME, where no editor's workspace may be. */
export function acpRoutes(app: OpenAPIHono, acp: AcpSessions, home: string): void {
  const route = <R extends RouteConfig>(r: R, handler: (c: Context) => Promise<Response> | Response): void => {
    const answer = async (c: Context): Promise<Response> => {
      try {
        return await handler(c);
      } catch (err) {
        throw err instanceof AcpRefusal ? new AcpApiError(err) : err;
      }
    };
    app.openapi(r, answer as never);
  };
  const id = (c: Context): string => c.req.param('id') ?? '';
  const token = (c: Context): string | undefined => c.req.header('albedo-attachment-token');
  /** The body, its workspace checked first (for an overlay without one, the session's). */
  const checked = async <B extends { cwd?: string }>(c: Context, sessionCwd?: string): Promise<B> => {
    const b = (await c.req.json()) as B;
    const cwd = b.cwd ?? sessionCwd;
    if (cwd && insideHome(cwd, home)) {
      throw new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', "cwd: the workspace may not be the daemon's home or inside it", {
        path: ['body', 'cwd'],
      });
    }
    return b;
  };

  route(createRoute_, async (c) => c.json(await acp.create(await checked<CreateBody>(c)), 201));
  route(attachRoute, async (c) => {
    const r = await acp.attach(await checked<AttachBody>(c));
    return c.json(r.body, r.created ? 201 : 200);
  });
  route(bindRoute, async (c) => {
    acp.bind(id(c), token(c), ((await c.req.json()) as { acpSessionId: string }).acpSessionId);
    return c.body(null, 204);
  });
  route(leaseRoute, (c) => c.json(acp.lease(id(c), token(c)), 200));
  route(overlayRoute, async (c) => {
    const b = await checked<OverlayBody>(c, acp.find(id(c))?.cwd);
    return c.json(await acp.overlay(id(c), token(c), b), 200);
  });
  route(releaseRoute, (c) => {
    acp.release(id(c), token(c));
    return c.body(null, 204);
  });
  route(listRoute, (c) => c.json({ sessions: acp.list().map((r) => acp.info(r)) }, 200));
  route(getRoute, (c) => c.json(acp.info(acp.get(id(c))), 200));
}
