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
 * Exit 0 when the scenario's operations succeeded, 1 otherwise. The suite
 * judges the wire traffic, not this exit code (except in single-scenario runs).
 */
import { createAlbedo } from '../../api/albedo.ts';
import { AlbedoError } from '../../protocol/errors.ts';

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
  process.exit(1);
}

/** Accepts an elicitation with every default the requested schema names. */
function defaultsOf(params: Record<string, unknown>): Record<string, unknown> {
  const props = ((params.requestedSchema as { properties?: Record<string, { default?: unknown }> } | undefined)?.properties) ?? {};
  const content: Record<string, unknown> = {};
  for (const [k, p] of Object.entries(props)) if (p && p.default !== undefined) content[k] = p.default;
  return content;
}

const albedo = await createAlbedo({
  home: null,
  transportWorkers: 1,
  clientInfo: { name: 'albedo-conformance-client', version: '0.1.0' },
  handlers: {
    elicitation: (p) => {
      const content = defaultsOf(p);
      // MRTR scenarios ask for a confirmation without defaults.
      if (!Object.keys(content).length) content.confirmed = true;
      return { action: 'accept', content };
    },
    sampling: () => ({ role: 'assistant', content: { type: 'text', text: 'Albedo conformance client reply' }, model: 'albedo-conformance', stopReason: 'endTurn' }),
    roots: () => ({ roots: [] }),
  },
});

let code = 0;
try {
  // The suite runs every scenario's client at once: leave room for a loaded machine, inside our own deadline.
  const budget = Math.max(10_000, Math.floor((DEADLINE_MS - 2_000) / 2));
  const c = await albedo.connect({ url, startupTimeoutMs: budget, callTimeoutMs: budget }, { name: scenario || 'server' });
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
      for (const call of (context.toolCalls as Array<{ name: string; arguments: Record<string, unknown> }> | undefined) ?? []) await c.callTool(call.name, call.arguments);
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
      if (has('test-tool')) await c.callTool('test-tool', {});
  }
  await c.close();
} catch (err) {
  const e = AlbedoError.is(err) ? `${err.code}: ${err.message}` : String((err as Error)?.stack ?? err);
  process.stderr.write(`albedo conformance client: ${scenario}: ${e}\n`);
  code = 1;
} finally {
  await albedo.close();
}
process.exit(code);
