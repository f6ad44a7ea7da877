// read_resource's export through the daemon's HTTP API (issue 25, item 6), against the real `albedo daemon` and real
// servers (server-everything, test/fixtures/blob-server.ts): POST /v1/sessions takes `cwd` (refused at body.cwd when
// it is not an existing directory outside the home) and the session shows it; its read_resource advertises `export`
// and `file`; a call with them writes the blob to a file the daemon creates in that directory, and the result names
// it instead of carrying the base64. Refusals keep their status, with `data.export` and the argument's path: an
// existing file (400, not read), no working directory (400), invalid base64 from the server (502, read, nothing left).
// An ACP session's working directory is its editor's workspace.
import t from 'tap';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { EVERYTHING, NODE, fixture, newTag, tempDir, tempHome } from '../helpers.ts';
import { blobBytes } from '../fixtures/blob-data.ts';
import { entry, startDaemon } from './harness.ts';

t.setTimeout(170_000);

t.test('a session with cwd over HTTP: blobs exported to files there, refusals said with their reason', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const work = tempDir(t, 'export-http-work-');
  const log = path.join(tempDir(t, 'export-http-log-'), 'reads');
  writeFileSync(log, '');
  const servers = { blobs: entry(NODE, [fixture('blob-server.ts'), log]), everything: entry(NODE, [EVERYTHING, 'stdio']) };
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers } }));
  const d = await startDaemon(t, home, { tag });
  const reads = (): string[] => readFileSync(log, 'utf8').split('\n').filter(Boolean);

  for (const cwd of ['relative', path.join(work, 'missing'), home]) {
    const bad = await d.call('POST', '/v1/sessions', { body: { cwd } });
    t.match(bad, { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body', 'cwd'] } } }, `cwd ${cwd} refused`);
  }

  const open = await d.call('POST', '/v1/sessions', { body: { cwd: work } });
  t.equal(open.status, 201, open.text);
  t.equal(open.body.cwd, work, 'the session shows its working directory');
  const id = open.body.id as string;
  const calls = `/v1/sessions/${id}/calls`;
  const tools = (await d.call('GET', `/v1/sessions/${id}/tools`)).body.tools as Array<Record<string, any>>;
  const read = tools.find((x) => x.server === 'blobs' && x.kind === 'read_resource')!;
  t.match(read.inputSchema.properties, { export: { type: 'boolean' }, file: { type: 'string' } }, 'export advertised');

  const n = 300_000;
  const ok = await d.call('POST', calls, {
    body: { name: read.name, arguments: { uri: `blob://bytes/${n}`, export: true, file: 'shot.png' } },
  });
  t.equal(ok.status, 200, ok.text);
  t.ok(readFileSync(path.join(work, 'shot.png')).equals(blobBytes(n)), 'the daemon wrote the bytes in the working directory');
  t.match(ok.body.result, {
    contents: [{ uri: `blob://bytes/${n}`, mimeType: 'text/plain', text: /shot\.png/ }],
    _meta: { 'albedo/export': [{ path: path.join(work, 'shot.png'), file: 'shot.png', bytes: n, mimeType: 'image/png' }] },
  });
  t.ok(ok.text.length < 2_000, 'no base64 in the answer');

  const ev = await d.call('POST', calls, {
    body: { name: 'everything/read_resource', arguments: { uri: 'demo://resource/dynamic/blob/3', export: true } },
  });
  t.equal(ev.status, 200, ev.text);
  t.match(readFileSync(path.join(work, 'resource-3.txt'), 'utf8'), /^Resource 3: /, "server-everything's blob");

  const before = reads().length;
  const taken = await d.call('POST', calls, {
    body: { name: read.name, arguments: { uri: 'blob://bytes/10', export: true, file: 'shot.png' } },
  });
  t.match(taken, {
    status: 400,
    body: {
      error: {
        code: 'ALBEDO_INVALID_ARGUMENT',
        outcome: 'not_run',
        path: ['body', 'arguments', 'file'],
        data: { export: 'exists', file: path.join(work, 'shot.png'), read: false },
      },
    },
  });
  t.ok(readFileSync(path.join(work, 'shot.png')).equals(blobBytes(n)), 'the existing file is intact');
  const outside = await d.call('POST', calls, { body: { name: read.name, arguments: { uri: 'blob://bytes/10', file: '../x.png' } } });
  t.match(outside, { status: 400, body: { error: { path: ['body', 'arguments', 'file'], data: { export: 'outside', read: false } } } });
  t.equal(reads().length, before, 'neither was read');

  const bad = await d.call('POST', calls, {
    body: { name: read.name, arguments: { uri: 'blob://bad/100000', export: true, file: 'bad.png' } },
  });
  t.match(bad, {
    status: 502,
    body: { error: { code: 'ALBEDO_INVALID_RESPONSE', outcome: 'not_run', data: { export: 'invalid_base64', read: true } } },
  });
  t.same(readdirSync(work).sort(), ['resource-3.txt', 'shot.png'], 'nothing left of the failed export');

  // An ACP session: the editor's workspace is its working directory.
  const workspace = tempDir(t, 'export-http-acp-');
  const acp = await d.call('POST', '/v1/acp/sessions', {
    body: { cwd: workspace, mcpServers: [], agent: { command: '/usr/bin/env', args: ['agent', '--acp'] } },
  });
  t.equal(acp.status, 201, acp.text);
  t.match((await d.call('GET', `/v1/sessions/${acp.body.id}`)).body, { cwd: workspace });
  const viaAcp = await d.call('POST', `/v1/sessions/${acp.body.id}/calls`, {
    body: { name: 'blobs/read_resource', arguments: { uri: 'blob://bytes/1000', export: true } },
  });
  t.equal(viaAcp.status, 200, viaAcp.text);
  t.ok(readFileSync(path.join(workspace, 'resource-1000.png')).equals(blobBytes(1000)), "written in the editor's workspace");

  const plain = await d.call('POST', '/v1/sessions', { body: {} });
  t.notOk('cwd' in plain.body);
  const none = await d.call('POST', `/v1/sessions/${plain.body.id}/calls`, {
    body: { name: 'blobs/read_resource', arguments: { uri: 'blob://bytes/10', export: true } },
  });
  t.match(none, {
    status: 400,
    body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', data: { export: 'no_working_directory', read: false } } },
  });
});
