/**
 * `albedo status`: the daemon (pid, port, version, home), each configured
 * server in a line (enabled, tools in its saved catalogue, sign-in state
 * where the daemon reports one, why it cannot be prepared), and the open
 * sessions. What `GET /v1/status` answers is included as `daemon.status`
 * (a daemon without that route still gets a status).
 */
import type { Command } from 'commander';
import { Client } from '../client/client.ts';
import { emit, safe, table } from '../client/output.ts';

interface ServerLine {
  name: string;
  enabled: boolean;
  state: string | null;
  tools: number | null;
  auth: string | null;
  lastError: string | null;
}

export function statusCommand(program: Command): void {
  program.command('status')
    .description('the daemon, the configured servers and the open sessions (starts the daemon if none runs)')
    .option('--json', 'print one JSON object: { daemon: { pid, port, version, home, status? }, servers: [...], sessions }')
    .action(async (o: { json?: boolean }) => {
      const client = new Client();
      const [servers, sessions, status] = await Promise.all([
        client.call('GET', '/v1/mcp/servers'),
        client.call('GET', '/v1/sessions'),
        client.call('GET', '/v1/status', { accept: [404] }),
      ]);
      const info = client.info!;
      const daemon: Record<string, unknown> = { pid: info.pid, port: info.port, version: info.version, home: client.home };
      if (status.status === 200) daemon.status = status.body;
      const lines: ServerLine[] = (servers.body.servers as any[]).map((s) => ({
        name: s.name,
        enabled: s.enabled,
        state: typeof s.state === 'string' ? s.state : null,
        tools: s.tools,
        auth: typeof s.auth?.state === 'string' ? s.auth.state : null,
        lastError: s.lastError?.code ?? null,
      }));
      const out = { daemon, servers: lines, sessions: (sessions.body.sessions as unknown[]).length };
      emit(!!o.json, out, () => [
        safe(`daemon: pid ${info.pid}, http://127.0.0.1:${info.port}, version ${info.version}, home ${client.home}`),
        `sessions: ${out.sessions} open`,
        lines.length
          ? table(['SERVER', 'ENABLED', 'STATE', 'TOOLS', 'AUTH', 'PROBLEM'], lines.map((l) => [
            l.name, l.enabled ? 'yes' : 'no', l.state ?? '-', l.tools === null ? '-' : String(l.tools), l.auth ?? '-', l.lastError ?? '',
          ]))
          : 'servers: none configured (albedo mcp add NAME …)',
      ].join('\n'));
    });
}
