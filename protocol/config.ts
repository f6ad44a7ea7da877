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

export const serverConfigSchema = stdioServerSchema;
export type ServerConfigInput = StdioServerInput;
export type ServerConfig = StdioServerConfig;

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
export type ResolvedServer = ResolvedStdioServer;

/** Describes a zod error as one line: `args.0: expected string`. */
export function describeZodError(err: z.ZodError): string {
  return err.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('; ');
}
