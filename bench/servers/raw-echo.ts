// A minimal hand-written MCP server over stdio (newline-delimited JSON-RPC),
// so that a benchmark against it measures the client, not the server.
//   --era modern|legacy   answer server/discover, or only initialize (discover gets -32601)
//   --tools N             N extra tools (tool_00000 …), listed in pages of --page (default 500)
// Tools: echo {text} → text; big {bytes} → a text of that many bytes.
import { createInterface } from 'node:readline';

const argv = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const era = flag('--era') ?? 'modern';
const extra = Number(flag('--tools') ?? 0);
const page = Number(flag('--page') ?? 500);
const modern = era === 'modern';

const tools: unknown[] = [
  { name: 'echo', description: 'Echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
  { name: 'big', description: 'A text of N bytes', inputSchema: { type: 'object', properties: { bytes: { type: 'integer' } } } },
];
for (let i = 0; i < extra; i++) {
  tools.push({
    name: `tool_${String(i).padStart(5, '0')}`,
    description: `Generated tool number ${i}, which does nothing in particular`,
    inputSchema: {
      type: 'object',
      properties: { x: { type: 'string', description: 'an argument' }, n: { type: 'integer' } },
      required: ['x'],
    },
  });
}
const out = (m: unknown): void => {
  process.stdout.write(JSON.stringify(m) + '\n');
};
const ok = (id: unknown, result: Record<string, unknown>): void =>
  out({ jsonrpc: '2.0', id, result: modern ? { resultType: 'complete', ...result } : result });

createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line) as { id?: unknown; method?: string; params?: Record<string, unknown> };
  if (m.id === undefined) return;
  switch (m.method) {
    case 'server/discover':
      if (!modern) return out({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
      return ok(m.id, {
        supportedVersions: ['2026-07-28'],
        capabilities: { tools: {} },
        ttlMs: 0,
        cacheScope: 'private',
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'raw-echo', version: '1' } },
      });
    case 'initialize':
      return ok(m.id, {
        protocolVersion: String(m.params?.protocolVersion ?? '2025-11-25'),
        capabilities: { tools: {} },
        serverInfo: { name: 'raw-echo', version: '1' },
      });
    case 'tools/list': {
      const start = Number(m.params?.cursor ?? 0);
      const slice = tools.slice(start, start + page);
      const next = start + page < tools.length ? String(start + page) : undefined;
      const cache = modern ? { ttlMs: 0, cacheScope: 'private' } : {};
      return ok(m.id, next === undefined ? { tools: slice, ...cache } : { tools: slice, nextCursor: next, ...cache });
    }
    case 'tools/call': {
      const args = (m.params?.arguments ?? {}) as { text?: string; bytes?: number };
      const text = m.params?.name === 'big' ? 'x'.repeat(Number(args.bytes ?? 0)) : String(args.text ?? '');
      return ok(m.id, { content: [{ type: 'text', text }] });
    }
    case 'ping':
      return ok(m.id, {});
    default:
      return out({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
  }
});
process.stdin.on('end', () => process.exit(0));
