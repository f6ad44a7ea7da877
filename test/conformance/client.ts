/**
 * Albedo's client under test for the MCP conformance suite
 * (@modelcontextprotocol/conformance): `node test/conformance/client.ts URL`.
 *
 * It reads MCP_CONFORMANCE_SCENARIO (what to do), MCP_CONFORMANCE_CONTEXT
 * (scenario data, e.g. the tool calls of http-custom-headers) and
 * MCP_CONFORMANCE_PROTOCOL_VERSION (informative: Albedo detects the era
 * itself, as it does for every server). Everything goes through the public
 * embedding API: connect (era detection, discovery), then the scenario's
 * operations. The handlers answer what servers ask of a client: elicitation
 * accepts with the schema's defaults, sampling returns a fixed message,
 * roots lists none.
 *
 * Auth scenarios run the way a host would: a call that fails with
 * ALBEDO_NEEDS_SIGN_IN leads to one sign-in and one more try. The "browser"
 * requests the authorization URL without following the redirect and hands
 * the callback URL back as if the user had pasted it. Scenario context
 * (pre-registered clients, keys, workload and IdP tokens) becomes the
 * server's `oauth` config, as a user would write it.
 *
 * Exit 0 when the scenario's operations succeeded, 1 otherwise. The suite
 * judges the wire traffic, not this exit code (except in single-scenario runs).
 * ALBEDO_CONFORMANCE_LOG=FILE appends each failure (scenario: code: message)
 * to FILE, since the suite keeps only the checks of a scenario.
 */
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { createAlbedo } from '../../api/albedo.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import type { OAuthConfigInput } from '../../protocol/config.ts';

const DEADLINE_MS = Number(process.env.ALBEDO_CONFORMANCE_DEADLINE_MS ?? 25_000);

const url = process.argv.at(-1);
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
let context: Record<string, unknown> = {};
try {
  context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as Record<string, unknown>;
} catch {
  fail(`MCP_CONFORMANCE_CONTEXT is not JSON: ${process.env.MCP_CONFORMANCE_CONTEXT}`);
}
if (!url || !/^https?:\/\//.test(url)) fail(`usage: client.ts URL (got ${JSON.stringify(url)})`);

// The runner may not be able to kill us (it spawns through a shell): keep our own deadline.
setTimeout(() => fail(`scenario ${scenario} did not finish within ${DEADLINE_MS} ms`), DEADLINE_MS).unref();

function fail(message: string): never {
  process.stderr.write(`albedo conformance client: ${message}\n`);
  if (process.env.ALBEDO_CONFORMANCE_LOG) appendFileSync(process.env.ALBEDO_CONFORMANCE_LOG, `${scenario}: ${message}\n`);
  process.exit(1);
}

/** Accepts an elicitation with every default the requested schema names. */
function defaultsOf(params: Record<string, unknown>): Record<string, unknown> {
  const props = (params.requestedSchema as { properties?: Record<string, { default?: unknown }> } | undefined)?.properties ?? {};
  const content: Record<string, unknown> = {};
  for (const [k, p] of Object.entries(props)) if (p && p.default !== undefined) content[k] = p.default;
  return content;
}

/** The scenario's credentials as a user's oauth config. */
function oauthConfig(): OAuthConfigInput {
  // A hosted Client ID Metadata Document (the suite's fixed URL), used where the AS supports them.
  const base: OAuthConfigInput = { clientMetadataUrl: 'https://conformance-test.local/client-metadata.json', callbackPort: 0 };
  const s = (k: string): string | undefined => (typeof context[k] === 'string' ? (context[k] as string) : undefined);
  switch (String(context.name ?? scenario).replace(/^auth\//, '')) {
    case 'client-credentials-jwt':
      return {
        ...base,
        grant: 'client_credentials',
        clientId: s('client_id'),
        privateKey: s('private_key_pem'),
        signingAlg: (s('signing_algorithm') ?? 'ES256') as 'ES256',
      };
    case 'client-credentials-basic':
      return { ...base, grant: 'client_credentials', clientId: s('client_id'), clientSecret: s('client_secret') };
    case 'pre-registration':
      return { ...base, clientId: s('client_id'), clientSecret: s('client_secret') };
    case 'enterprise-managed-authorization':
      return {
        ...base,
        grant: 'token_exchange',
        clientId: s('client_id'),
        clientSecret: s('client_secret'),
        idp: { tokenEndpoint: s('idp_token_endpoint')!, clientId: s('idp_client_id'), idToken: s('idp_id_token')! },
      };
    case 'wif-jwt-bearer':
      return { ...base, grant: 'jwt_bearer', clientId: s('client_id'), assertion: s('valid_jwt') };
    default:
      return base;
  }
}

/** The browser: asks for the authorization URL, does not follow the redirect, returns where it points (the "pasted" callback). */
async function browser(req: { url: string }): Promise<string> {
  const res = await request(req.url, { method: 'GET' });
  await res.body.dump();
  const location = res.headers.location;
  const loc = Array.isArray(location) ? location[0] : location;
  if (res.statusCode < 300 || res.statusCode >= 400 || !loc)
    throw new Error(`the authorization endpoint answered HTTP ${res.statusCode} without a redirect`);
  return new URL(loc, req.url).toString();
}

const home = mkdtempSync(path.join(os.tmpdir(), 'albedo-conformance-'));
process.on('exit', () => rmSync(home, { recursive: true, force: true }));

const albedo = await createAlbedo({
  home,
  authorize: browser,
  transportWorkers: 1,
  clientInfo: { name: 'albedo-conformance-client', version: '0.1.0' },
  handlers: {
    elicitation: (p) => {
      const content = defaultsOf(p);
      // MRTR scenarios ask for a confirmation without defaults.
      if (!Object.keys(content).length) content.confirmed = true;
      return { action: 'accept', content };
    },
    sampling: () => ({
      role: 'assistant',
      content: { type: 'text', text: 'Albedo conformance client reply' },
      model: 'albedo-conformance',
      stopReason: 'endTurn',
    }),
    roots: () => ({ roots: [] }),
  },
});

let code = 0;
try {
  // The suite runs every scenario's client at once: leave room for a loaded machine, inside our own deadline.
  const budget = Math.max(10_000, Math.floor((DEADLINE_MS - 2_000) / 2));
  const name = (scenario || 'server').replace(/[^A-Za-z0-9_-]/g, '_');
  const config = { url: url!, startupTimeoutMs: budget, callTimeoutMs: budget, oauth: oauthConfig() };
  /** A sign-in and one more try when the server wants one, as a host would do after asking the user; twice at most. */
  const authed = async <T>(op: () => Promise<T>): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await op();
      } catch (err) {
        if (!AlbedoError.is(err) || err.code !== 'ALBEDO_NEEDS_SIGN_IN' || attempt >= 2) throw err;
        process.stderr.write(`albedo conformance client: ${err.message}; signing in\n`);
        await albedo.signIn(config, { name, timeoutMs: budget });
      }
    }
  };
  const c = await authed(() => albedo.connect(config, { name }));
  for (const w of c.warnings) process.stderr.write(`warning: ${w}\n`);
  const tools = c.catalogue.tools;
  const has = (name: string): boolean => tools.some((t) => t.name === name);
  switch (scenario) {
    case 'initialize':
    case 'request-metadata':
    case 'json-schema-ref-no-deref':
      break; // connecting (discovery or initialize, then the lists) is the whole scenario
    case 'tools_call':
      if (has('add_numbers')) await c.callTool('add_numbers', { a: 5, b: 3 });
      break;
    case 'elicitation-sep1034-client-defaults':
      await c.callTool('test_client_elicitation_defaults', {});
      break;
    case 'sse-retry':
      await c.callTool('test_reconnection', {});
      break;
    case 'sep-2322-client-request-state':
      for (const t of tools) await c.callTool(t.name, {});
      break;
    case 'http-standard-headers': {
      if (tools[0]) await c.callTool(tools[0].name, {});
      const r = c.catalogue.resources[0];
      if (r) await c.readResource(r.uri);
      const p = c.catalogue.prompts[0];
      if (p) await c.getPrompt(p.name, {});
      break;
    }
    case 'http-custom-headers':
      for (const call of (context.toolCalls as Array<{ name: string; arguments: Record<string, unknown> }> | undefined) ?? [])
        await c.callTool(call.name, call.arguments);
      break;
    case 'http-invalid-tool-headers':
      // Tools with invalid x-mcp-header annotations were left out of the catalogue.
      for (const t of tools) await c.callTool(t.name, { region: 'us-west1' });
      break;
    case 'json-schema-2020-12-preservation': {
      const focal = tools.find((t) => t.name === 'json_schema_2020_12_tool');
      if (!focal) throw new Error('json_schema_2020_12_tool is not in the catalogue');
      await c.callTool('json_schema_echo', { schema: focal.inputSchema });
      break;
    }
    default:
      // Auth scenarios and others: the generic flow of a host.
      if (has('test-tool')) await authed(() => c.callTool('test-tool', {}));
  }
  await c.close();
} catch (err) {
  const e = AlbedoError.is(err) ? `${err.code}: ${err.message}` : String((err as Error)?.stack ?? err);
  process.stderr.write(`albedo conformance client: ${scenario}: ${e}\n`);
  if (process.env.ALBEDO_CONFORMANCE_LOG) appendFileSync(process.env.ALBEDO_CONFORMANCE_LOG, `${scenario}: ${e}\n`);
  code = 1;
} finally {
  await albedo.close();
}
process.exit(code);
