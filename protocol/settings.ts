/**
 * `$ALBEDO_HOME/extensions.json` and the typed secrets kept for its servers
 * in creds.json: zod schemas and types, no side effects.
 *
 * A server entry is the transport's config (protocol/config.ts: the stdio
 * and http schemas, reused) with the file's own rules on top: secrets are
 * named, never inlined (`{ "env": "VAR" }` or `{ "file": PATH }`), plus the
 * host's fields `enabled`, `enabledTools`, `disabledTools`.
 */
import { z } from 'zod';
import { stdioServerSchema, httpServerSchema, oauthConfigSchema, serverNameProblem } from './config.ts';
import { gatewayNameProblem, gatewaySchema, type Gateway } from './gateway.ts';

/** The variable-name and header-name rules of protocol/config.ts, taken from its schemas so the two never drift. */
const envName = stdioServerSchema.shape.env.unwrap().keyType;
const headerName = httpServerSchema.shape.headers.unwrap().keyType;

/** `{ file: PATH }` as protocol/config.ts spells it for OAuth secrets. */
const fileRef = oauthConfigSchema.shape.clientSecret.unwrap().options[1].options[1];

const INLINED =
  'secrets are named, never inlined: write { "env": "VAR" } or { "file": "PATH" }, or store the value in creds.json (putServer)';

/** A secret named in extensions.json: one environment variable of the daemon, or a file whose contents are the value. */
export const namedSecretSchema = z.union([z.strictObject({ env: envName }), fileRef], {
  error: (iss) => (iss.input === null || typeof iss.input !== 'object' ? INLINED : 'expected { "env": "VAR" } or { "file": "PATH" }'),
});
export type NamedSecret = z.output<typeof namedSecretSchema>;

const toolNames = z.array(z.string().min(1, 'a tool name must not be empty'));

/** The host's fields every server entry has beside the transport's. */
const hostFields = {
  /** A disabled server is kept in the file but never dialled. */
  enabled: z.boolean().default(true),
  /** When given, only these tools are advertised. */
  enabledTools: toolNames.optional(),
  /** Never advertised (applied after `enabledTools`). */
  disabledTools: toolNames.default([]),
  /**
   * In a deferred session (session option `tools`), advertised from the
   * start instead of found through `mcp_search_tools`: `true` for every tool
   * of the server, or a list of its raw tool names. Absent: none.
   */
  alwaysLoad: z.union([z.boolean(), toolNames]).optional(),
  /** The most a result of this server may put in the model's context, in estimated tokens (the rest is kept to read by page). */
  resultBudget: z.number().int().min(100).max(1_000_000).optional(),
};

/** A stdio server in extensions.json: env values are named secrets. */
export const settingsStdioSchema = stdioServerSchema.extend({
  env: z.record(envName, namedSecretSchema).default({}),
  ...hostFields,
});

/** An http server in extensions.json: header values and OAuth secrets are named, never literal. */
export const settingsHttpSchema = httpServerSchema.safeExtend(hostFields).superRefine((c, ctx) => {
  for (const [name, v] of Object.entries(c.headers)) {
    if (typeof v === 'string') ctx.addIssue({ code: 'custom', path: ['headers', name], message: INLINED });
  }
  const o = c.oauth;
  const literal: Array<[Array<string>, unknown]> = [
    [['oauth', 'clientSecret'], o?.clientSecret],
    [['oauth', 'privateKey'], o?.privateKey],
    [['oauth', 'assertion'], o?.assertion],
    [['oauth', 'idp', 'idToken'], o?.idp?.idToken],
  ];
  for (const [path, v] of literal) if (typeof v === 'string') ctx.addIssue({ code: 'custom', path, message: INLINED });
});

export type SettingsStdioServer = z.output<typeof settingsStdioSchema>;
export type SettingsHttpServer = z.output<typeof settingsHttpSchema>;
export type SettingsServer = SettingsStdioServer | SettingsHttpServer;
export type SettingsServerInput = z.input<typeof settingsStdioSchema> | z.input<typeof settingsHttpSchema>;

/** `mcp.retryMs`: how long after preparation the first come-back probe may run (then doubling, capped at 20×). */
export const DEFAULT_RETRY_MS = 30_000;

export const mcpSectionSchema = z.strictObject({
  /** Validated entry by entry (see parseSettingsDocument), so each error names its server. */
  servers: z.record(z.string(), z.unknown()).optional(),
  retryMs: z.number().int().positive().max(86_400_000).default(DEFAULT_RETRY_MS),
});

/** A gateway's name as a record key: checked (gatewayNameProblem) before zod builds an object with it. */
const gatewayKey = z.string().superRefine((n, ctx) => {
  const problem = gatewayNameProblem(n);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/**
 * A change to the settings outside `mcp.servers` (`settings/apply`, `sections`), as a merge patch: a value sets
 * `mcp.retryMs` or one extension's default in `enabled`, `null` removes the key (its default applies), a key
 * left out is kept. `gateways`: each named gateway replaced by the definition given (written as given: defaults
 * stay implicit), or removed by `null`. Other keys of these sections, and every other section, are kept as they are.
 */
export const sectionsPatchSchema = z.strictObject({
  retryMs: mcpSectionSchema.shape.retryMs.unwrap().nullable().optional(),
  enabled: z.strictObject({ mcp: z.boolean().nullable().optional(), 'editor-mcp': z.boolean().nullable().optional() }).optional(),
  gateways: z.record(gatewayKey, gatewaySchema.nullable()).optional(),
});
export type SectionsPatch = z.input<typeof sectionsPatchSchema>;

/** Which extensions are on by default; other extensions' keys are theirs and are kept as they are. */
export const enabledSectionSchema = z.looseObject({
  mcp: z.boolean().default(true),
  'editor-mcp': z.boolean().default(true),
});

export interface ExtensionsEnabled {
  mcp: boolean;
  'editor-mcp': boolean;
}

/** The settings in force: every server entry and gateway validated, defaults filled in. `servers` and `gateways` have no prototype. */
export interface Settings {
  servers: Record<string, SettingsServer>;
  retryMs: number;
  enabled: ExtensionsEnabled;
  /** The top-level `gateways` section (protocol/gateway.ts), in file order. A server it names need not exist. */
  gateways: Record<string, Gateway>;
}

/**
 * One validation error: the server it is about (null: outside `mcp.servers`), the field path inside
 * it (from the top of the document when `server` is null), what was expected. Never a value.
 * `gateway`: the gateway it is about (its path is then `["gateways", NAME, …]`).
 */
export interface SettingsIssue {
  server: string | null;
  gateway?: string;
  path: Array<string | number>;
  message: string;
}

/**
 * Why a server cannot be resolved now (`ALBEDO_INVALID_CONFIG`, `data: { server, path, reason }`):
 * - `missing_env`: a named variable is not set (or empty where a value is required: a bearer token)
 * - `missing_file` / `unreadable_file` / `empty_file` / `file_too_large`: a `{ file }` secret
 * - `missing_cwd`: the working directory does not exist
 * - `conflict`: a secret stored in creds.json collides with the entry (the same env name, a second Authorization)
 * - `credentials_for_other_url`: the stored secrets were saved for another URL and are never sent to this one
 * - `invalid_credentials`: creds.json or this server's stored secrets cannot be read
 * - `invalid`: the transport's own checks refused the resolved config (a value with a line break, NUL in args)
 */
export type ResolveReason =
  | 'missing_env'
  | 'missing_file'
  | 'unreadable_file'
  | 'empty_file'
  | 'file_too_large'
  | 'missing_cwd'
  | 'conflict'
  | 'credentials_for_other_url'
  | 'invalid_credentials'
  | 'invalid';

export interface ResolveProblem {
  server: string;
  path: Array<string | number>;
  reason: ResolveReason;
  message: string;
}

const secretText = z
  .string()
  .min(1)
  .refine((v) => !/[\r\n\0]/.test(v), { message: 'must not contain a line break or NUL' });

/**
 * The typed secrets of one server, as putServer takes them: each field absent
 * keeps what is stored, `null` removes it. An env entry set to `null` removes
 * that entry.
 */
export const secretsPatchSchema = z.strictObject({
  /** http: sent as `Authorization: Bearer <token>`. */
  bearerToken: z
    .string()
    .min(1)
    .regex(/^[^\s\0]+$/, 'a bearer token has no whitespace')
    .nullable()
    .optional(),
  /** http: one custom header. */
  header: z.strictObject({ name: headerName, value: secretText }).nullable().optional(),
  /** stdio: environment entries. */
  env: z
    .record(
      envName,
      z
        .string()
        .refine((v) => !v.includes('\0'), { message: 'must not contain NUL' })
        .nullable(),
    )
    .nullable()
    .optional(),
  /** http: a client registered beforehand with the authorization server. */
  oauthClient: z
    .strictObject({ clientId: z.string().min(1), clientSecret: z.string().min(1).optional() })
    .nullable()
    .optional(),
  /**
   * http: `null` signs out — the OAuth tokens go (the record stays, `signed_out`, with its client registrations, which hold no
   * user token). Only `null`: tokens come from a sign-in, never from a patch.
   */
  oauth: z.null().optional(),
});
export type SecretsPatch = z.input<typeof secretsPatchSchema>;

/** What creds.json holds under `mcp.<server>.secrets`. `url` binds an http server's secrets to the URL they were saved for. */
export const storedSecretsSchema = z.strictObject({
  url: z.string().optional(),
  bearerToken: z.string().min(1).optional(),
  header: z.strictObject({ name: headerName, value: z.string() }).optional(),
  env: z.record(envName, z.string()).optional(),
  oauthClient: z.strictObject({ clientId: z.string().min(1), clientSecret: z.string().min(1).optional() }).optional(),
  updatedAt: z.number().optional(),
});
export type StoredSecrets = z.output<typeof storedSecretsSchema>;

/** Which typed secrets a server has, never their values. */
export interface SecretsSummary {
  bearerToken: boolean;
  /** The custom header's name. */
  header: string | null;
  env: string[];
  oauthClient: boolean;
}

/** C0 and C1 control characters and DEL: invisible, or able to move a terminal's cursor, in a name shown everywhere. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Why `name` cannot name a server in extensions.json: protocol/config.ts's
 * rule; not empty; not `.` or `..` (a path segment every URL and path
 * resolver takes as a step, so the name cannot be addressed); no control
 * character.
 */
export function settingsNameProblem(name: string): string | undefined {
  if (name === '') return 'a server name must not be empty';
  if (name === '.' || name === '..')
    return `the server name ${JSON.stringify(name)} is a path step, not a name; give the server another name`;
  if (CONTROL.test(name)) return 'a server name must not contain a control character';
  return serverNameProblem(name);
}
