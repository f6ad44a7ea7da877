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
  /** One connection for every session that composes it (absent: stdio no, HTTP yes; docs/config.md). */
  share: z.boolean().optional(),
  startupTimeoutMs: z.number().int().positive().max(600_000).default(30_000),
  callTimeoutMs: z.number().int().positive().max(3_600_000).default(60_000),
});
export type StdioServerInput = z.input<typeof stdioServerSchema>;
export type StdioServerConfig = z.output<typeof stdioServerSchema>;

/** Header names Albedo sets itself; a config may not override them. */
export const RESERVED_HEADERS = new Set([
  'accept',
  'content-type',
  'content-length',
  'host',
  'connection',
  'transfer-encoding',
  'last-event-id',
  'mcp-protocol-version',
  'mcp-session-id',
  'mcp-method',
  'mcp-name',
]);
const headerName = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'an HTTP header name (an RFC 9110 token)')
  .refine((n) => !RESERVED_HEADERS.has(n.toLowerCase()) && !n.toLowerCase().startsWith('mcp-param-'), {
    message: 'Albedo sets this header itself',
  });

/** A URL Albedo may POST to: http or https, no userinfo (secrets belong in headers), no fragment. */
export const serverUrl = z.string().superRefine((value, ctx) => {
  // What was typed, said back — but not a value that may carry a user name and password (`ftp://u:p@h`, `u:p@h`).
  const typed = value.includes('@') ? 'the URL' : JSON.stringify(value);
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    ctx.addIssue({ code: 'custom', message: `${typed} is not a URL` });
    return;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    const what = value.includes('@')
      ? `the URL must be http or https, not ${u.protocol.slice(0, -1)}`
      : `${typed} must be an http or https URL`;
    ctx.addIssue({ code: 'custom', message: what });
  }
  if (u.username || u.password)
    ctx.addIssue({
      code: 'custom',
      message: 'the URL must not carry a user name or password; put credentials in a header or bearerTokenEnvVar',
    });
  if (value.includes('#')) ctx.addIssue({ code: 'custom', message: 'the URL must not have a fragment (#...)' });
});

/** A secret named, never inlined in a config file: an environment variable, or a file whose contents are the value. */
const secretRef = z.union([z.strictObject({ env: envName }), z.strictObject({ file: z.string().min(1) })]);
const secretValue = z.union([z.string().min(1), secretRef]);
const httpsUrl = z
  .string()
  .url()
  .refine((u) => u.startsWith('https://'), { message: 'must be an https URL' });

/**
 * OAuth for an HTTP server (MCP basic/authorization). Every field is
 * optional: with none, a server that answers 401 asks the user to sign in
 * (authorization code + PKCE, Dynamic Client Registration).
 */
export const oauthConfigSchema = z
  .strictObject({
    /**
     * `authorization_code` (a user signs in, the default); `client_credentials` (the client is the subject: secret or private-key
     * JWT); `jwt_bearer` (a workload identity assertion, RFC 7523); `token_exchange` (enterprise-managed: the IdP's ID token is
     * exchanged for an ID-JAG first).
     */
    grant: z.enum(['authorization_code', 'client_credentials', 'jwt_bearer', 'token_exchange']).default('authorization_code'),
    /** A client registered beforehand; without one, a Client ID Metadata Document URL or Dynamic Client Registration is used. */
    clientId: z.string().min(1).optional(),
    clientSecret: secretValue.optional(),
    /** A private key (PKCS#8 PEM) for `private_key_jwt` client authentication. */
    privateKey: secretValue.optional(),
    signingAlg: z.enum(['ES256', 'ES384', 'ES512', 'RS256', 'PS256', 'EdDSA']).optional(),
    /** The https URL of this client's Client ID Metadata Document, used as client_id where the authorization server supports it. */
    clientMetadataUrl: httpsUrl.optional(),
    /** The workload identity JWT for `jwt_bearer`. */
    assertion: secretValue.optional(),
    /**
     * Enterprise-managed authorization (`token_exchange`): the identity provider's token endpoint,
     * its client id, and the user's ID token.
     */
    idp: z.strictObject({ tokenEndpoint: serverUrl, clientId: z.string().min(1).optional(), idToken: secretValue }).optional(),
    /** Scopes to ask for when neither a challenge nor the resource metadata names any. */
    scope: z.string().optional(),
    /** Proof of possession (RFC 9449): `auto` uses DPoP when the authorization server advertises it. */
    dpop: z.union([z.boolean(), z.literal('auto')]).default('auto'),
    /** The loopback callback port; busy → an ephemeral port (and a new registration). */
    callbackPort: z.number().int().min(0).max(65_535).default(33_418),
  })
  .superRefine((c, ctx) => {
    if (c.grant === 'client_credentials' && !c.clientId)
      ctx.addIssue({ code: 'custom', path: ['clientId'], message: 'client_credentials needs a clientId' });
    if (c.grant === 'client_credentials' && !c.clientSecret && !c.privateKey)
      ctx.addIssue({ code: 'custom', path: ['clientSecret'], message: 'client_credentials needs a clientSecret or a privateKey' });
    if (c.grant === 'jwt_bearer' && !c.assertion)
      ctx.addIssue({ code: 'custom', path: ['assertion'], message: 'jwt_bearer needs an assertion' });
    if (c.grant === 'token_exchange' && !c.idp) ctx.addIssue({ code: 'custom', path: ['idp'], message: 'token_exchange needs idp' });
    if (c.grant === 'token_exchange' && !c.clientId)
      ctx.addIssue({ code: 'custom', path: ['clientId'], message: 'token_exchange needs a clientId' });
    if (c.clientSecret && c.privateKey)
      ctx.addIssue({ code: 'custom', path: ['privateKey'], message: 'give either clientSecret or privateKey, not both' });
    if ((c.clientSecret || c.privateKey) && !c.clientId)
      ctx.addIssue({ code: 'custom', path: ['clientId'], message: 'a client secret or key needs its clientId' });
  });
export type OAuthConfigInput = z.input<typeof oauthConfigSchema>;
export type OAuthConfig = z.output<typeof oauthConfigSchema>;

/** OAuth settings with every secret looked up, as the transport and oauth services receive them. Never logged. */
export interface ResolvedOAuth {
  grant: OAuthConfig['grant'];
  clientId?: string;
  clientSecret?: string;
  privateKey?: string;
  signingAlg?: string;
  clientMetadataUrl?: string;
  assertion?: string;
  idp?: { tokenEndpoint: string; clientId?: string; idToken: string };
  scope?: string;
  dpop: boolean | 'auto';
  callbackPort: number;
}

export const httpServerSchema = z
  .strictObject({
    type: z.literal('http').default('http'),
    url: serverUrl,
    /** OAuth settings; a server that answers 401 asks for a sign-in even without them. */
    oauth: oauthConfigSchema.optional(),
    /** Extra request headers, each a literal or `{ env: NAME }`. */
    headers: z.record(headerName, envValue).default({}),
    /** The bearer token is read from this environment variable and sent as `Authorization: Bearer …`. */
    bearerTokenEnvVar: envName.optional(),
    isolate: z.boolean().default(false),
    share: z.boolean().optional(),
    startupTimeoutMs: z.number().int().positive().max(600_000).default(30_000),
    callTimeoutMs: z.number().int().positive().max(3_600_000).default(60_000),
  })
  .refine((c) => !(c.bearerTokenEnvVar && Object.keys(c.headers).some((h) => h.toLowerCase() === 'authorization')), {
    message: 'give either bearerTokenEnvVar or an Authorization header, not both',
    path: ['bearerTokenEnvVar'],
  })
  .refine((c) => !(c.oauth && (c.bearerTokenEnvVar || Object.keys(c.headers).some((h) => h.toLowerCase() === 'authorization'))), {
    message: 'give either oauth or a fixed Authorization (bearerTokenEnvVar or header), not both',
    path: ['oauth'],
  });
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
  /** OAuth, unless the config gives a fixed Authorization header: where its credentials live and how to get them. */
  auth: ResolvedAuth | null;
}

export interface ResolvedAuth {
  /** The server's name: its record is `mcp.<name>.oauth` in creds.json. */
  name: string;
  /** creds.json; null keeps credentials in the worker's memory (no sign-in across processes). */
  credsPath: string | null;
  oauth: ResolvedOAuth;
}
export type ResolvedServer = ResolvedStdioServer | ResolvedHttpServer;

/**
 * Server names that are refused: a name is a key of creds.json
 * (`mcp.<name>.oauth`) and of maps across the daemon, and these three are
 * Object.prototype's own, so one of them as a key is the classic way to
 * reach the prototype. Every other string stays a valid name (the default
 * for an HTTP server is its host and path, e.g. `h.example.com/mcp`, which a
 * bare `http://__proto__/` would make `__proto__`).
 */
export const RESERVED_SERVER_NAMES: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** Why `name` cannot name a server, or undefined when it can. */
export function serverNameProblem(name: string): string | undefined {
  if (RESERVED_SERVER_NAMES.has(name)) {
    return (
      `the server name ${JSON.stringify(name)} is reserved (it is a property of every JavaScript object); ` + 'give the server another name'
    );
  }
  return undefined;
}

/** Describes a zod error as one line: `args.0: expected string`. */
export function describeZodError(err: z.ZodError): string {
  return err.issues
    .map((i) => {
      // A bad record key nests the key's own issues: say what is wrong with the key.
      const inner = (i as { issues?: Array<{ message: string }> }).issues;
      const message = i.code === 'invalid_key' && inner?.length ? `bad key: ${inner.map((x) => x.message).join(', ')}` : i.message;
      return `${i.path.length ? i.path.join('.') : '(root)'}: ${message}`;
    })
    .join('; ');
}
