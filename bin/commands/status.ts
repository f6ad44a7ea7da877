/**
 * `albedo status`: the daemon (pid, port, version, home), the configured
 * servers in the columns every list of servers shows (server-rows.ts: NAME
 * · TYPE · STATE · TOOLS · SIGN-IN · PROBLEM), and the open sessions. What
 * `GET /v1/status` answers is included as `daemon.status` (a daemon without
 * that route still gets a status).
 */
import type { Command } from 'commander';
import { Client } from '../client/client.ts';
import { emit, safe } from '../client/output.ts';
import { transportOf } from '../../web/shared/labels.js';
import { serversTable } from '../client/server-rows.ts';

interface ServerLine {
  name: string;
  type: 'http' | 'stdio';
  enabled: boolean;
  state: string | null;
  tools: number | null;
  auth: string | null;
  /** The code of its lastError. */
  lastError: string | null;
  /** Its lastError's message, whole. */
  problem: string | null;
}

export function statusCommand(program: Command): void {
  program
    .command('status')
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
      const all = servers.body.servers as any[];
      const lines: ServerLine[] = all.map((s) => ({
        name: s.name,
        type: transportOf(s.config),
        enabled: s.enabled,
        state: typeof s.state === 'string' ? s.state : null,
        tools: s.tools,
        auth: typeof s.auth?.state === 'string' ? s.auth.state : null,
        lastError: s.lastError?.code ?? null,
        problem: typeof s.lastError?.message === 'string' ? s.lastError.message : null,
      }));
      const out = { daemon, servers: lines, sessions: (sessions.body.sessions as unknown[]).length };
      emit(!!o.json, out, () =>
        [
          safe(`daemon: pid ${info.pid}, http://127.0.0.1:${info.port}, version ${info.version}, home ${client.home}`),
          `sessions: ${out.sessions} open`,
          all.length ? serversTable(all) : 'servers: none configured (albedo mcp add NAME …)',
        ].join('\n'),
      );
    });
}
