/**
 * Server configuration as the embedding API and the config file give it,
 * validated with zod, and the resolved form the transport service receives.
 * Secrets in the config file are named (`{ "env": "VAR" }`), never inlined;
 * the embedding API may also pass literal strings.
 */
import { z } from 'zod';

const envValue = z.union([z.string(), z.strictObject({ env: z.string().min(1) })]);
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name (letters, digits, _)');

export const stdioServerSchema = z.strictObject({
  type: z.literal('stdio').default('stdio'),
  command: z.string().min(1, 'command must not be empty'),
  args: z.array(z.string()).default([]),
  cwd: z.string().min(1).optional(),
  env: z.record(envName, envValue).default({}),
  /** Give this server a transport worker of its own. */
  isolate: z.boolean().default(false),
  startupTimeoutMs: z.number().int().positive().max(600_000).default(30_000),
  callTimeoutMs: z.number().int().positive().max(3_600_000).default(60_000),
});
export type StdioServerInput = z.input<typeof stdioServerSchema>;
export type StdioServerConfig = z.output<typeof stdioServerSchema>;

/** Header names Albedo sets itself; a config may not override them. */
export const RESERVED_HEADERS = new Set([
  'accept', 'content-type', 'content-length', 'host', 'connection', 'transfer-encoding', 'last-event-id',
  'mcp-protocol-version', 'mcp-session-id', 'mcp-method', 'mcp-name',
]);
const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'an HTTP header name (an RFC 9110 token)')
  .refine((n) => !RESERVED_HEADERS.has(n.toLowerCase()) && !n.toLowerCase().startsWith('mcp-param-'), { message: 'Albedo sets this header itself' });

/** A URL Albedo may POST to: http or https, no userinfo (secrets belong in headers), no fragment. */
export const serverUrl = z.string().superRefine((value, ctx) => {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    ctx.addIssue({ code: 'custom', message: `not a URL: ${JSON.stringify(value)}` });
    return;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') ctx.addIssue({ code: 'custom', message: `the URL must be http or https, not ${u.protocol.slice(0, -1)}` });
  if (u.username || u.password) ctx.addIssue({ code: 'custom', message: 'the URL must not carry a user name or password; put credentials in a header or bearerTokenEnvVar' });
  if (value.includes('#')) ctx.addIssue({ code: 'custom', message: 'the URL must not have a fragment (#...)' });
});

export const httpServerSchema = z.strictObject({
  type: z.literal('http').default('http'),
  url: serverUrl,
  /** Extra request headers, each a literal or `{ env: NAME }`. */
  headers: z.record(headerName, envValue).default({}),
  /** The bearer token is read from this environment variable and sent as `Authorization: Bearer …`. */
  bearerTokenEnvVar: envName.optional(),
  isolate: z.boolean().default(false),
  startupTimeoutMs: z.number().int().positive().max(600_000).default(30_000),
  callTimeoutMs: z.number().int().positive().max(3_600_000).default(60_000),
}).refine((c) => !(c.bearerTokenEnvVar && Object.keys(c.headers).some((h) => h.toLowerCase() === 'authorization')), { message: 'give either bearerTokenEnvVar or an Authorization header, not both', path: ['bearerTokenEnvVar'] });
export type HttpServerInput = z.input<typeof httpServerSchema>;
export type HttpServerConfig = z.output<typeof httpServerSchema>;

/** A stdio server, or an HTTP one (`type: "http"`, or just a `url`). */
export const serverConfigSchema = z.preprocess(
  (v) => (v && typeof v === 'object' && !Array.isArray(v) && !('type' in v) ? { ...v, type: 'url' in v ? 'http' : 'stdio' } : v),
  z.discriminatedUnion('type', [stdioServerSchema, httpServerSchema]),
);
export type ServerConfigInput = StdioServerInput | HttpServerInput;
export type ServerConfig = StdioServerConfig | HttpServerConfig;

/** What the transport service spawns: every value resolved, nothing left to look up. */
export interface ResolvedStdioServer {
  type: 'stdio';
  command: string;
  args: string[];
  cwd: string;
  /** The whole child environment: HOME, PATH, TMPDIR and the named values. */
  env: Record<string, string>;
  startupTimeoutMs: number;
  callTimeoutMs: number;
  /** A stable digest of what identifies this server (command, args, cwd, env names), for the era cache. */
  fingerprint: string;
}

/** An HTTP server with every header value looked up. */
export interface ResolvedHttpServer {
  type: 'http';
  url: string;
  /** Extra headers, Authorization included when bearerTokenEnvVar named a token. Never logged. */
  headers: Record<string, string>;
  startupTimeoutMs: number;
  callTimeoutMs: number;
  /** A digest of the URL and the header names (not values), for the era cache. */
  fingerprint: string;
}
export type ResolvedServer = ResolvedStdioServer | ResolvedHttpServer;

/** Describes a zod error as one line: `args.0: expected string`. */
export function describeZodError(err: z.ZodError): string {
  return err.issues.map((i) => {
    // A bad record key nests the key's own issues: say what is wrong with the key.
    const inner = (i as { issues?: Array<{ message: string }> }).issues;
    const message = i.code === 'invalid_key' && inner?.length ? `bad key: ${inner.map((x) => x.message).join(', ')}` : i.message;
    return `${i.path.length ? i.path.join('.') : '(root)'}: ${message}`;
  }).join('; ');
}
