// Gateways driven by clients other than the SDK's own: the MCP Inspector's CLI
// (@modelcontextprotocol/inspector-cli, a 2025-era client on the official SDK 1.x)
// and Albedo's own `albedo probe`, each both ways in: `/mcp/gateways/NAME` over HTTP
// with a gateway token, and `albedo gateway NAME` as the stdio command a host runs.
// Each lists exactly the tools the gateway's session advertises (GET
// /v1/sessions/{id}/tools of the session labelled `gateway:NAME#…`) and calls one.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { EVERYTHING, NODE, ROOT, newTag, tempHome } from '../helpers.ts';
import { entry, sdkServer, startDaemon, type Daemon } from '../daemon/harness.ts';

t.setTimeout(170_000);

/** The command a host's config runs (the plain-JavaScript entry, as installed). */
const ALBEDO = path.join(ROOT, 'bin', 'albedo.js');
const INSPECTOR_DIR = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'inspector-cli');
const INSPECTOR = path.join(INSPECTOR_DIR, 'build', 'cli.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], env: Record<string, string | undefined>, cwd = ROOT): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * The Inspector's CLI as its README runs it. Its launcher spawns `node` from PATH, so Node 22 goes first; it
 * reads its own package.json by a path relative to the working directory, so it runs from its build folder.
 * Options go before `--` (a variadic `--tool-arg` would swallow the command after it otherwise).
 */
function inspector(args: string[], env: Record<string, string | undefined> = process.env): Promise<Run> {
  const PATH = `${path.dirname(NODE)}${path.delimiter}${env.PATH ?? ''}`;
  return run(NODE, [INSPECTOR, '--cli', ...args], { ...env, PATH }, path.join(INSPECTOR_DIR, 'build'));
}

async function daemonWith(t: Test): Promise<{ d: Daemon; tag: string; home: string }> {
  const tag = newTag();
  const home = tempHome(t);
  const servers = { sdk: sdkServer(), everything: entry(NODE, [EVERYTHING, 'stdio']) };
  const gateways = { all: {}, sdk: { server: 'sdk' } };
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers }, gateways }), { mode: 0o600 });
  return { d: await startDaemon(t, home, { tag }), tag, home };
}

/** The tool names the session behind gateway `name` advertises (its label is `gateway:NAME#<digest>`). */
async function sessionTools(t: Test, d: Daemon, name: string): Promise<string[]> {
  const list = await d.call('GET', '/v1/sessions');
  t.equal(list.status, 200, 'sessions listed');
  const mine = (list.body.sessions as Array<{ id: string; label?: string }>).filter((s) => s.label?.startsWith(`gateway:${name}#`));
  t.equal(mine.length, 1, `one session behind gateway ${name}`);
  const tools = await d.call('GET', `/v1/sessions/${encodeURIComponent(mine[0]!.id)}/tools`);
  t.equal(tools.status, 200, 'its tools');
  return (tools.body.tools as Array<{ name: string }>).map((x) => x.name).sort();
}

/** What a failed run said (the Inspector's deprecation banner is on stderr every time). */
const why = (r: Run): string => (r.code === 0 ? '' : `: ${r.stderr}`);

const names = (tools: Array<{ name: string }>): string[] => tools.map((x) => x.name).sort();

t.test('the MCP Inspector CLI lists and calls a composed gateway, over HTTP with a gateway token and over stdio', async (t) => {
  const { d, tag, home } = await daemonWith(t);
  const minted = await d.call('POST', '/v1/gateways/all/tokens');
  t.equal(minted.status, 201, 'a gateway token');
  const url = `http://127.0.0.1:${d.info.port}/mcp/gateways/all`;
  // The path does not end in /mcp, so the transport is named (the Inspector would guess SSE).
  const http = ['--transport', 'http', '--header', `Authorization: Bearer ${minted.body.token}`];
  const viaHttp = await inspector([url, ...http, '--method', 'tools/list']);
  t.equal(viaHttp.code, 0, `HTTP tools/list exits 0${why(viaHttp)}`);
  const listed = names(JSON.parse(viaHttp.stdout).tools);
  // The session opens at the gateway's first client: its tools are read after.
  const advertised = await sessionTools(t, d, 'all');
  t.ok(advertised.length > 2, 'the session advertises tools');
  t.same(listed, advertised, 'HTTP: exactly the tools the gateway session advertises');
  const echo = listed.find((n) => /^mcp_sdk_echo_/.test(n));
  t.ok(echo, 'the sdk server’s echo under its stable name');
  const call = await inspector([url, ...http, '--tool-arg', 'text=from the inspector', '--method', 'tools/call', '--tool-name', echo!]);
  t.equal(call.code, 0, `HTTP tools/call exits 0${why(call)}`);
  t.equal(JSON.parse(call.stdout).content[0].text, 'from the inspector', 'HTTP: the call went through');

  // stdio: the command a host's config runs; the daemon's home in the child's environment.
  const env = { ...process.env, ALBEDO_HOME: home, TEST_SERVER_TAG: tag };
  const cmd = ['--', NODE, ALBEDO, 'gateway', 'all'];
  const viaStdio = await inspector(['-e', `ALBEDO_HOME=${home}`, '--method', 'tools/list', ...cmd], env);
  t.equal(viaStdio.code, 0, `stdio tools/list exits 0${why(viaStdio)}`);
  t.same(names(JSON.parse(viaStdio.stdout).tools), advertised, 'stdio: exactly the tools the gateway session advertises');
  const called = await inspector(
    ['-e', `ALBEDO_HOME=${home}`, '--tool-arg', 'text=over stdio', '--method', 'tools/call', '--tool-name', echo!, ...cmd],
    env,
  );
  t.equal(called.code, 0, `stdio tools/call exits 0${why(called)}`);
  t.equal(JSON.parse(called.stdout).content[0].text, 'over stdio', 'stdio: the call went through');
  t.same(await sessionTools(t, d, 'all'), advertised, 'still one session, the same tools');
  t.notOk(d.lines.join('\n').includes(minted.body.token), 'the token is in no log line');
});

t.test('the MCP Inspector CLI through a pass-through gateway: the server’s own tools', async (t) => {
  const { d, tag, home } = await daemonWith(t);
  const url = `http://127.0.0.1:${d.info.port}/mcp/gateways/sdk`;
  const http = ['--transport', 'http', '--header', `Authorization: Bearer ${d.info.token}`];
  const viaHttp = await inspector([url, ...http, '--method', 'tools/list']);
  t.equal(viaHttp.code, 0, `HTTP tools/list exits 0${why(viaHttp)}`);
  const listed = names(JSON.parse(viaHttp.stdout).tools);
  t.ok(listed.includes('echo') && listed.includes('add'), 'the server’s own names');
  const sum = await inspector([url, ...http, '--tool-arg', 'a=2', 'b=3', '--method', 'tools/call', '--tool-name', 'add']);
  t.equal(sum.code, 0, `HTTP tools/call exits 0${why(sum)}`);
  t.same(JSON.parse(sum.stdout).structuredContent, { sum: 5 }, 'HTTP: the structured result passed through');
  const env = { ...process.env, ALBEDO_HOME: home, TEST_SERVER_TAG: tag };
  const viaStdio = await inspector(['--method', 'tools/list', '--', NODE, ALBEDO, 'gateway', 'sdk'], env);
  t.equal(viaStdio.code, 0, `stdio tools/list exits 0${why(viaStdio)}`);
  t.same(names(JSON.parse(viaStdio.stdout).tools), listed, 'stdio: the same tools');
});

t.test('albedo probe lists and calls a composed gateway, by URL with a bearer and as a stdio command', async (t) => {
  const { d, tag, home } = await daemonWith(t);
  const minted = await d.call('POST', '/v1/gateways/all/tokens');
  t.equal(minted.status, 201, 'a gateway token');
  const url = `http://127.0.0.1:${d.info.port}/mcp/gateways/all`;
  // The probe keeps its era verdicts for a URL in a home: one of its own, not the daemon's.
  const probeHome = tempHome(t);
  const env = { ...process.env, ALBEDO_HOME: probeHome, GW_TOKEN: minted.body.token as string };
  const viaHttp = await run(NODE, [ALBEDO, 'probe', '--json', '--url', url, '--bearer-env', 'GW_TOKEN'], env);
  t.equal(viaHttp.code, 0, `probe --url exits 0${why(viaHttp)}`);
  const out = JSON.parse(viaHttp.stdout);
  const listed = names(out.tools);
  const advertised = await sessionTools(t, d, 'all');
  t.same(listed, advertised, 'HTTP: exactly the tools the gateway session advertises');
  const echo = listed.find((n) => /^mcp_sdk_echo_/.test(n))!;
  t.ok(echo, 'the echo tool');
  const header = ['--header', `Authorization: Bearer ${minted.body.token}`];
  const call = await run(NODE, [ALBEDO, 'probe', '--json', '--url', url, ...header, '--call', echo, '--args', '{"text":"probed"}'], env);
  t.equal(call.code, 0, `probe --url --call exits 0${why(call)}`);
  t.equal(JSON.parse(call.stdout).result.content[0].text, 'probed', 'HTTP: the call went through');
  const refused = await run(NODE, [ALBEDO, 'probe', '--json', '--url', url, '--header', 'Authorization: Bearer albgw_wrong'], env);
  t.not(refused.code, 0, 'a wrong token: the probe fails');

  // stdio: the probe runs the command as a host would, the daemon's home in its environment.
  const cmd = ['--env', `ALBEDO_HOME=${home}`, '--env', `TEST_SERVER_TAG=${tag}`, '--', NODE, ALBEDO, 'gateway', 'all'];
  const viaStdio = await run(NODE, [ALBEDO, 'probe', '--json', ...cmd], { ...process.env, ALBEDO_HOME: probeHome });
  t.equal(viaStdio.code, 0, `probe -- albedo gateway exits 0${why(viaStdio)}`);
  t.same(names(JSON.parse(viaStdio.stdout).tools), advertised, 'stdio: exactly the tools the gateway session advertises');
  const stdioCall = await run(NODE, [ALBEDO, 'probe', '--json', '--call', echo, '--args', '{"text":"piped"}', ...cmd], {
    ...process.env,
    ALBEDO_HOME: probeHome,
  });
  t.equal(stdioCall.code, 0, `stdio --call exits 0${why(stdioCall)}`);
  t.equal(JSON.parse(stdioCall.stdout).result.content[0].text, 'piped', 'stdio: the call went through');
  t.notOk(d.lines.join('\n').includes(minted.body.token), 'the token is in no log line');
});
