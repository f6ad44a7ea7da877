/**
 * Gateways: named compositions the daemon serves as one MCP server
 * (`gateways` in extensions.json, docs/gateway.md). Schemas and types only.
 *
 * A gateway either composes (`servers`, `profile`, `tools`, budgets: an
 * ordinary session behind it) or passes one configured server through under
 * its own tool, resource and prompt names (`server`).
 */
import { z } from 'zod';
import { sessionOptionsSchema } from './composer.ts';

/**
 * A gateway's name: it is a path segment of `/mcp/gateways/{name}` and an
 * argument of `albedo gateway NAME`, so it is kept to what needs no quoting
 * or encoding anywhere: a letter or digit, then letters, digits, `_` and `-`.
 */
export const GATEWAY_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** `albedo gateway NAME` serves NAME, so the names of its subcommands (and their aliases) cannot be gateways'. */
export const RESERVED_GATEWAY_NAMES: readonly string[] = ['add', 'list', 'ls', 'remove', 'rm', 'token', 'help'];

export function gatewayNameProblem(name: string): string | undefined {
  if (!GATEWAY_NAME.test(name)) return 'a gateway name is 1 to 64 letters, digits, "_" or "-", starting with a letter or digit';
  if (RESERVED_GATEWAY_NAMES.includes(name)) return `"${name}" is a subcommand of albedo gateway, not a gateway name`;
  return undefined;
}

const s = sessionOptionsSchema.shape;

/** One gateway as extensions.json holds it. */
export const gatewaySchema = z
  .strictObject({
    /** Pass-through: this configured server alone, under its own names. Excludes every composition field. */
    server: z.string().min(1).max(1_000).optional(),
    /** Composition: which configured servers (all enabled ones when absent). */
    servers: s.servers,
    profile: s.profile,
    tools: s.tools,
    contextBudget: s.contextBudget,
    resultBudget: s.resultBudget,
    /** A switched-off gateway is kept but answers nobody (404). */
    enabled: z.boolean().default(true),
  })
  .superRefine((g, ctx) => {
    if (g.server === undefined) return;
    for (const k of ['servers', 'profile', 'tools', 'contextBudget'] as const) {
      if (g[k] !== undefined) ctx.addIssue({ code: 'custom', path: [k], message: `a pass-through gateway (server) takes no ${k}` });
    }
  });
export type Gateway = z.output<typeof gatewaySchema>;
export type GatewayInput = z.input<typeof gatewaySchema>;

/** The session label that marks a gateway's session, so a restarted daemon finds it among the restored ones. */
export const gatewayLabel = (name: string): string => `gateway:${name}`;
