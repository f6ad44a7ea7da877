/**
 * `albedo status`: the daemon (pid, port, version, home), the configured
 * servers in the columns every list of servers shows (server-rows.ts: NAME
 * · TYPE · STATE · TOOLS · SIGN-IN · PROBLEM), the open sessions, and the
 * gateways with who is connected to each now (`GET /v1/gateways`), and the
 * ACP sessions (`GET /v1/acp/sessions`: attached or not, the agent, the
 * editor's servers and their states). What `GET /v1/status` answers is
 * included as `daemon.status` (a daemon without that route, without
 * gateways or without ACP, still gets a status).
 */
import type { Command } from 'commander';
import { Client } from '../client/client.ts';
import { cell, emit, safe, table, terminalWidth } from '../client/output.ts';
import { transportOf } from '../../web/shared/labels.js';
import { acpStateLabel, attachedLabel, overlayStateLabel } from '../../web/shared/acp.js';
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

/** One client of a gateway, as `--json` shows it (the API's fields). */
interface ClientLine {
  id: string;
  /** Its own name and version, as it declared them; null before it said. */
  name: string | null;
  era: string;
  transport: string;
  since: string | null;
  lastSeen: string | null;
  calls: number;
}

interface GatewayLine {
  name: string;
  kind: string;
  enabled: boolean;
  /** The codes of its problems (`server_not_configured`, `server_disabled`). */
  problems: string[];
  tokens: number;
  clients: ClientLine[];
}

/** An ACP session, as `--json` shows it (the API's fields: never an env value or a token, the API has none). */
interface AcpLine {
  id: string;
  acpSessionId: string | null;
  cwd: string;
  agent: { command: string; args: string[] };
  attached: boolean;
  state: string;
  editorMcp: boolean;
  servers: Array<{ name: string; state: string }>;
}

function acpLines(all: any[]): AcpLine[] {
  return all.map((a) => ({
    id: String(a.id),
    acpSessionId: typeof a.acpSessionId === 'string' ? a.acpSessionId : null,
    cwd: String(a.cwd),
    agent: { command: String(a.agent?.command ?? ''), args: Array.isArray(a.agent?.args) ? a.agent.args.map(String) : [] },
    attached: a.attached === true,
    state: String(a.state),
    editorMcp: a.editorMcp !== false,
    servers: (a.overlay?.servers ?? []).map((s: any) => ({ name: String(s.name), state: String(s.state) })),
  }));
}

/** A command line in one cell: words with spaces or quotes quoted, escaped and bounded by cell(). */
const commandLine = (words: string[]): string => words.map((w) => (/[\s'"\\]/.test(w) || w === '' ? JSON.stringify(w) : w)).join(' ');

/** The ACP sessions as a table: each with its attachment, state, agent and the editor's servers with their states. */
function acpTable(acp: AcpLine[]): string {
  const rows = acp.map((a) => [
    a.id,
    attachedLabel(a.attached).text,
    acpStateLabel(a.state).text,
    cell(commandLine([a.agent.command, ...a.agent.args]), 60),
    a.servers.length ? cell(a.servers.map((s) => `${s.name} (${overlayStateLabel(s.state).text})`).join(', '), 200) : '—',
  ]);
  return table(['SESSION', 'ATTACHMENT', 'STATE', 'AGENT', 'EDITOR SERVERS'], rows, terminalWidth());
}

/** A time of the API (ISO text, or ms since the epoch) as ISO text; null when it is neither. */
function isoOf(v: unknown): string | null {
  if (typeof v !== 'string' && typeof v !== 'number') return null;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

/** When, to the minute, in UTC (as the screen's tools view says when a catalogue was discovered). */
const minute = (iso: string | null): string => (iso ? `${iso.slice(0, 16).replace('T', ' ')} UTC` : '—');

function gatewayLines(all: any[]): GatewayLine[] {
  return all.map((g) => ({
    name: String(g.name),
    kind: String(g.kind),
    enabled: g.definition?.enabled !== false,
    problems: (g.problems ?? []).map((p: any) => String(p.code)),
    tokens: (g.tokens ?? []).length,
    clients: (g.clients ?? []).map((c: any) => ({
      id: String(c.id),
      name: typeof c.name === 'string' ? c.name : null,
      era: String(c.era),
      transport: String(c.transport),
      since: isoOf(c.since),
      lastSeen: isoOf(c.lastSeen),
      calls: typeof c.calls === 'number' ? c.calls : 0,
    })),
  }));
}

/** The gateways as a table, one row per connected client (a gateway without any: one row of `—`). */
function gatewaysTable(gateways: GatewayLine[]): string {
  const rows: string[][] = [];
  for (const g of gateways) {
    const name = g.enabled ? g.name : `${g.name} (off)`;
    if (!g.clients.length) rows.push([name, g.kind, '—', '—', '—', '—', '—']);
    for (const c of g.clients) {
      // The client's own words: one line, bounded, made safe.
      rows.push([name, g.kind, cell(c.name ?? '(unnamed)', 40), cell(c.era, 20), c.transport, minute(c.since), String(c.calls)]);
    }
  }
  return table(['GATEWAY', 'KIND', 'CLIENT', 'ERA', 'TRANSPORT', 'SINCE', 'CALLS'], rows, terminalWidth());
}

export function statusCommand(program: Command): void {
  program
    .command('status')
    .description('the daemon, the configured servers and the open sessions (starts the daemon if none runs)')
    .option('--json', 'print one JSON object: { daemon: { pid, port, version, home, status? }, servers: [...], sessions, gateways?, acp? }')
    .action(async (o: { json?: boolean }) => {
      const client = new Client();
      const [servers, sessions, status, gws, acps] = await Promise.all([
        client.call('GET', '/v1/mcp/servers'),
        client.call('GET', '/v1/sessions'),
        client.call('GET', '/v1/status', { accept: [404] }),
        client.call('GET', '/v1/gateways', { accept: [404] }),
        client.call('GET', '/v1/acp/sessions', { accept: [404] }),
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
      // A daemon from before gateways answers 404: its status has no gateways, rather than failing.
      const gateways = gws.status === 200 ? gatewayLines(gws.body.gateways as any[]) : null;
      const acp = acps.status === 200 ? acpLines(acps.body.sessions as any[]) : null;
      const out = {
        daemon,
        servers: lines,
        sessions: (sessions.body.sessions as unknown[]).length,
        ...(gateways ? { gateways } : {}),
        ...(acp ? { acp } : {}),
      };
      emit(!!o.json, out, () => {
        const text = [
          safe(`daemon: pid ${info.pid}, http://127.0.0.1:${info.port}, version ${info.version}, home ${client.home}`),
          `sessions: ${out.sessions} open`,
          all.length ? serversTable(all) : 'servers: none configured (albedo mcp add NAME …)',
        ];
        if (gateways) {
          const n = gateways.reduce((k, g) => k + g.clients.length, 0);
          text.push('');
          if (!gateways.length) text.push('gateways: none (albedo gateway add NAME …)');
          else text.push(`gateways: ${gateways.length}, ${n} ${n === 1 ? 'client' : 'clients'} connected`, gatewaysTable(gateways));
        }
        if (acp?.length) {
          const n = acp.filter((a) => a.attached).length;
          text.push('', `acp sessions: ${acp.length}, ${n} attached`, acpTable(acp));
        }
        return text.join('\n');
      });
    });
}
