// The adapter's pure pieces: the 4 MiB writer bound over a real pipe whose reader stops reading, the command line,
// session/new's checks, load/resume's defaults, the capabilities the editor is told, daemon errors as JSON-RPC errors,
// and the pinned ACP v1 schema (an SDK upgrade that changes it fails here, loudly).
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { RequestError } from '@agentclientprotocol/sdk';
import { BoundedWriter, WRITER_BOUND } from '../../bin/acp/writer.ts';
import { agentArgv, attachParams, editorInitialize, newSessionParams, rpcError } from '../../bin/acp/params.ts';
import { CliError } from '../../bin/client/errors.ts';
import { fixture } from '../helpers.ts';

t.test('the installed SDK speaks exactly the pinned ACP v1 schema', async (t) => {
  // The package's root, from its main entry (dist/v1/stable/acp.js): its exports do not name package.json.
  const installed = fileURLToPath(new URL('../../../', import.meta.resolve('@agentclientprotocol/sdk')));
  const pkg = JSON.parse(readFileSync(installed + 'package.json', 'utf8')) as { version: string };
  t.same(
    JSON.parse(readFileSync(installed + 'schema/v1/schema.json', 'utf8')),
    JSON.parse(readFileSync(fixture('acp/schema-v1.json'), 'utf8')),
    `@agentclientprotocol/sdk ${pkg.version}: schema/v1/schema.json equals test/fixtures/acp/schema-v1.json`,
  );
});

t.test('the writer cuts the editor side once more than 4 MiB wait, and drops what comes after', async (t) => {
  // A real pipe to a process that never reads it.
  const reader = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e6)'], { stdio: ['pipe', 'ignore', 'ignore'] });
  t.teardown(() => void reader.kill('SIGKILL'));
  const cuts: string[] = [];
  const w = new BoundedWriter(reader.stdin!, (why) => cuts.push(why));
  const chunk = new Uint8Array(64 * 1024).fill(120);
  let written = 0;
  while (!w.cutReason) {
    w.write(chunk);
    written += chunk.length;
    // The message being taken, the bound behind it, and the one message that found the bound not yet passed.
    t.ok(w.pending <= WRITER_BOUND + 2 * chunk.length, 'never more than the bound and two messages waiting');
  }
  t.same(cuts, ['overflow'], 'cut once, for overflow');
  t.ok(written > WRITER_BOUND, `cut after ${written} bytes were offered`);
  t.ok(reader.stdin!.destroyed, 'the editor side (the pipe) is closed');
  w.write(chunk);
  t.same(cuts, ['overflow'], 'a later write is dropped, not an error');
  await w.flushed();
});

t.test('the writer passes everything to an editor that reads, and is cut by a write error', async (t) => {
  const cat = spawn('cat', [], { stdio: ['pipe', 'pipe', 'ignore'] });
  const got: Buffer[] = [];
  cat.stdout!.on('data', (c: Buffer) => got.push(c));
  const cuts: string[] = [];
  const w = new BoundedWriter(cat.stdin!, (why) => cuts.push(why));
  const ws = w.stream().getWriter();
  for (let i = 0; i < 200; i++) await ws.write(new TextEncoder().encode(`{"n":${i}}\n`)); // each resolves at once
  await w.flushed();
  cat.stdin!.end();
  await new Promise((r) => cat.once('close', r));
  t.equal(Buffer.concat(got).toString().split('\n').filter(Boolean).length, 200, 'all lines arrived');
  t.same(cuts, [], 'never cut');

  const gone = spawn('true', [], { stdio: ['pipe', 'ignore', 'ignore'] });
  await new Promise((r) => gone.once('exit', r));
  const w2 = new BoundedWriter(gone.stdin!, (why) => cuts.push(why));
  for (let i = 0; i < 100 && !w2.cutReason; i++) {
    w2.write(new Uint8Array(1024));
    await new Promise((r) => setImmediate(r));
  }
  t.same(cuts, ['error'], 'EPIPE: the editor is gone');
});

t.test('albedo acp -- AGENT [ARGS…]', async (t) => {
  t.same(agentArgv(['--', 'gemini', '--experimental-acp', '--', 'x']), { command: 'gemini', args: ['--experimental-acp', '--', 'x'] });
  for (const bad of [[], ['--'], ['gemini'], ['--', '']]) {
    const e = (() => {
      try {
        agentArgv(bad);
      } catch (err) {
        return err as CliError;
      }
    })();
    t.equal(e?.code, 'ALBEDO_INVALID_ARGUMENT', JSON.stringify(bad));
    t.equal(e?.exit, 2);
  }
});

const codeOf = (f: () => unknown): number | undefined => {
  try {
    f();
  } catch (e) {
    return (e as RequestError).code;
  }
  return undefined;
};

t.test('session/new needs an absolute cwd and an mcpServers array (-32602)', async (t) => {
  t.same(newSessionParams({ cwd: '/w', mcpServers: [] }), { cwd: '/w', mcpServers: [] });
  t.equal(
    codeOf(() => newSessionParams({ cwd: 'rel', mcpServers: [] })),
    -32602,
  );
  t.equal(
    codeOf(() => newSessionParams({ cwd: '/w' })),
    -32602,
  );
  t.equal(
    codeOf(() => newSessionParams({ cwd: '/w', mcpServers: null })),
    -32602,
  );
  t.equal(
    codeOf(() => newSessionParams(null)),
    -32602,
  );
});

t.test('session/load and resume: omitted or null lists default to []', async (t) => {
  t.same(attachParams({ sessionId: 's', cwd: '/w' }, 'session/resume').mcpServers, []);
  t.same(attachParams({ sessionId: 's', cwd: '/w', mcpServers: null }, 'session/load').mcpServers, []);
  t.same(
    attachParams({ sessionId: 's', cwd: '/w', mcpServers: [{ name: 'a', command: '/bin/a', args: null, env: null }] }, 'session/load')
      .mcpServers,
    [{ name: 'a', command: '/bin/a', args: [], env: [] }],
  );
  t.same(attachParams({ sessionId: 's', cwd: '/w', mcpServers: [{ name: 'a', command: '/bin/a' }] }, 'session/load').mcpServers, [
    { name: 'a', command: '/bin/a', args: [], env: [] },
  ]);
  t.same(
    attachParams({ sessionId: 's', cwd: '/w', mcpServers: [{ type: 'http', name: 'h', url: 'http://x', headers: null }] }, 'session/load')
      .mcpServers,
    [{ type: 'http', name: 'h', url: 'http://x', headers: [] }],
    'an http server keeps its type (the daemon refuses it), headers defaulted',
  );
  t.equal(
    codeOf(() => attachParams({ cwd: '/w' }, 'session/load')),
    -32602,
    'no sessionId',
  );
  t.equal(
    codeOf(() => attachParams({ sessionId: 's', cwd: 'w' }, 'session/load')),
    -32602,
    'relative cwd',
  );
  t.equal(
    codeOf(() => attachParams({ sessionId: 's', cwd: '/w', mcpServers: 3 }, 'session/load')),
    -32602,
  );
});

t.test('initialize: the editor is told http and sse are off; the agent’s http flag is kept for the daemon', async (t) => {
  const r = editorInitialize({ protocolVersion: 1, agentCapabilities: { loadSession: true, mcpCapabilities: { http: true, sse: true } } });
  t.same(r.result, { protocolVersion: 1, agentCapabilities: { loadSession: true, mcpCapabilities: { http: false, sse: false } } });
  t.equal(r.agentHttp, true);
  t.same(editorInitialize({ protocolVersion: 1 }), {
    result: { protocolVersion: 1, agentCapabilities: { mcpCapabilities: { http: false, sse: false } } },
    agentHttp: false,
  });
});

t.test('daemon errors reach the editor with their code and path in data', async (t) => {
  const bad = rpcError(new CliError('ALBEDO_INVALID_ARGUMENT', 'cwd differs', 2, ['body', 'cwd']));
  t.equal(bad.code, -32602);
  t.same(bad.data, { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body', 'cwd'] });
  const held = rpcError(new CliError('ALBEDO_ATTACHMENT_HELD', 'held', 1));
  t.equal(held.code, -32603);
  t.same(held.data, { code: 'ALBEDO_ATTACHMENT_HELD' });
  const same = new RequestError(-32001, 'x');
  t.equal(rpcError(same), same, 'an agent’s error passes unchanged');
});
