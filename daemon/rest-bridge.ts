/**
 * The REST bridge: `/mcp` on the daemon is an MCP server (Streamable HTTP,
 * both protocol eras, stateless: a fresh server per HTTP request) with one
 * tool, `albedo_request` `{ method, path, body? }`, which makes one request to
 * the daemon's own HTTP API and answers with what the API answered.
 *
 * It adds no rights: the request goes to `http://127.0.0.1:PORT<path>` with
 * the `Authorization` header of the MCP request, unchanged, so the daemon's
 * guard checks it again, as for any client. It adds no behaviour either: no
 * retry, no timeout of its own but a generous cap (a strict save or a tool
 * call may take a while), the caller's cancellation passed on. A call the
 * rules of bridge-request.ts refuse sends nothing; listing the tool sends
 * nothing.
 */
import { createMcpHandler, McpServer, type CallToolResult, type StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import { Agent, fetch } from 'undici';
import { z } from 'zod';
import { MAX_BODY_BYTES } from './app.ts';
import { bridgeInputSchema, parseBridgeRequest, type BridgeRequest } from './bridge-request.ts';

export interface RestBridgeOptions {
  /** The daemon's port, known once it listens: requests are sent to http://127.0.0.1:PORT. */
  port(): number;
  /** The daemon's version, for serverInfo. */
  version?: string;
}

export const BRIDGE_TOOL = 'albedo_request';

/** The longest a forwarded request may take: beyond any strict save or call the API makes (it has its own deadlines). */
export const BRIDGE_CAP_MS = 15 * 60_000;

const DESCRIPTION = [
  "Sends one request to the Albedo daemon's HTTP API (the MCP servers it is configured with, their tools, sign-ins, agent sessions)",
  "and answers with its status and JSON body. GET /openapi.json describes every route. A 4xx or 5xx answer is a tool error with the API's",
  'error code. Examples: GET /v1/mcp/servers; PUT /v1/mcp/servers/NAME with {"command":"…","args":[…]}; DELETE /v1/mcp/servers/NAME.',
].join(' ');

/** The tool's JSON Schema for tools/list, without `$schema` (the MCP default dialect). */
const ADVERTISED = (({ $schema: _, ...rest }) => rest)(z.toJSONSchema(bridgeInputSchema) as Record<string, unknown>);

/**
 * The schema the SDK is given: it advertises ADVERTISED and lets every call through, so
 * that the bridge's own rules (parseBridgeRequest) answer a bad call with the API's code and
 * the field's path, rather than the SDK's message.
 */
const lenient: StandardSchemaWithJSON<Record<string, unknown>> = {
  '~standard': {
    version: 1,
    vendor: 'albedo',
    validate: (value) => ({ value: (value ?? {}) as Record<string, unknown> }),
    jsonSchema: { input: () => ADVERTISED, output: () => ADVERTISED },
  },
};

/**
 * The bridge's own connections to the API. Not Node's global dispatcher: under NODE_USE_ENV_PROXY that one sends
 * requests through HTTP_PROXY, and this request carries the caller's token (the daemon's: every right of the API).
 */
const direct = new Agent();

/** The `/mcp` endpoint: answers one MCP HTTP request (a stateless server per request). */
export function createRestBridge(o: RestBridgeOptions): (req: Request) => Promise<Response> {
  const handler = createMcpHandler(
    ({ requestInfo }) => {
      const auth = requestInfo?.headers.get('authorization') ?? null;
      const server = new McpServer({ name: 'albedo', version: o.version ?? '0.0.0' }, { capabilities: { tools: {} } });
      server.registerTool(
        BRIDGE_TOOL,
        {
          title: "Albedo's HTTP API",
          description: DESCRIPTION,
          inputSchema: lenient,
          annotations: { destructiveHint: true, openWorldHint: false },
        },
        async (args, ctx) => {
          const origin = `http://127.0.0.1:${o.port()}`;
          const parsed = parseBridgeRequest(args, origin);
          if (!parsed.ok) {
            const { path, message } = parsed.problem;
            return toolError({ error: { code: 'ALBEDO_INVALID_ARGUMENT', message, path, outcome: 'not_run' } });
          }
          return forward(origin, parsed.request, auth, ctx.mcpReq.signal);
        },
      );
      return server;
    },
    // The guard refused a declared body over the API's limit already; this bounds one sent without a length.
    { legacy: 'stateless', maxRequestBodySize: MAX_BODY_BYTES },
  );
  return (req) => handler.fetch(req);
}

function toolError(content: Record<string, unknown>): CallToolResult {
  return { isError: true, structuredContent: content, content: [{ type: 'text', text: JSON.stringify(content) }] };
}

/** One request to the API; its answer as the tool's result. */
async function forward(origin: string, r: BridgeRequest, auth: string | null, cancelled: AbortSignal): Promise<CallToolResult> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (auth !== null) headers.authorization = auth;
  if (r.body !== undefined) headers['content-type'] = 'application/json';
  let res: Awaited<ReturnType<typeof fetch>>;
  try {
    res = await fetch(`${origin}${r.path}`, {
      dispatcher: direct,
      method: r.method,
      headers,
      body: r.body === undefined ? undefined : JSON.stringify(r.body),
      redirect: 'manual',
      signal: AbortSignal.any([cancelled, AbortSignal.timeout(BRIDGE_CAP_MS)]),
    });
  } catch (err) {
    const timedOut = (err as Error).name === 'TimeoutError';
    return toolError({
      error: {
        code: timedOut ? 'ALBEDO_TIMEOUT' : 'ALBEDO_CONNECTION_CLOSED',
        message: timedOut ? `the API did not answer within ${BRIDGE_CAP_MS / 60_000} minutes` : 'the request to the API failed',
        outcome: 'unknown',
      },
    });
  }
  const type = res.headers.get('content-type') ?? '';
  // An event stream (a session's events) never ends: the bridge answers once, so it does not wait on one.
  if (type.startsWith('text/event-stream')) {
    await res.body?.cancel();
    return toolError({
      status: res.status,
      error: { code: 'ALBEDO_INVALID_ARGUMENT', message: 'path: an event stream cannot be read through the bridge', path: ['path'] },
    });
  }
  const text = r.method === 'HEAD' ? '' : await res.text();
  let body: unknown = text === '' ? undefined : text;
  if (text !== '' && /^application\/([\w.+-]*\+)?json\b/i.test(type)) {
    try {
      body = JSON.parse(text);
    } catch {
      /* kept as text */
    }
  }
  if (res.status >= 200 && res.status < 300) {
    const out: Record<string, unknown> = { status: res.status };
    if (body !== undefined) out.body = body;
    return { structuredContent: out, content: [{ type: 'text', text: JSON.stringify(out) }] };
  }
  const apiError = (body as { error?: { code?: unknown } } | undefined)?.error;
  const error =
    apiError && typeof apiError === 'object' && typeof apiError.code === 'string'
      ? apiError
      : { code: 'ALBEDO_HTTP_ERROR', message: `the API answered HTTP status ${res.status}` };
  return toolError({ status: res.status, error });
}
