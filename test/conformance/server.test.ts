// The pinned conformance suite's server scenarios (server.ts) against the
// fixture backend the gateway will front (fixtures/conformance-server.ts),
// directly over HTTP, in both era legs: every scenario a leg runs must pass
// with no failed or warning check. The allow-list of scenarios the official
// SDK server cannot pass is empty. The runner itself must report a server
// that fails; and the fixture must serve the same catalogue over stdio in
// both eras, since that is how the gateway will run it.
import t from 'tap';
import { createServer } from 'node:net';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { NODE, fixture, httpFixture, newTag } from '../helpers.ts';
import { ERAS, regressions, runServerSuite, table } from './server.ts';
import { startAuthProxy } from './auth-proxy.ts';
import type { ServerSuiteResult } from './server.ts';

t.setTimeout(20 * 60_000);

const SCRIPT = fixture('conformance-server.ts');

/** Scenarios each leg must have run: the suite's selection for the era, as pinned (0.2.0-alpha.12). */
const CARRIED = [
  'completion-complete',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-image',
  'tools-call-audio',
  'tools-call-embedded-resource',
  'tools-call-mixed-content',
  'tools-call-error',
  'tools-call-with-progress',
  'json-schema-2020-12',
  'server-sse-multiple-streams',
  'resources-list',
  'resources-read-text',
  'resources-read-binary',
  'resources-templates-read',
  'prompts-list',
  'prompts-get-simple',
  'prompts-get-with-args',
  'prompts-get-embedded-resource',
  'prompts-get-with-image',
  'dns-rebinding-protection',
];
const EXPECTED: Record<string, string[]> = {
  '2025-11-25': [
    ...CARRIED,
    'server-initialize',
    'server-session-lifecycle',
    'logging-set-level',
    'ping',
    'tools-call-with-logging',
    'tools-call-sampling',
    'tools-call-elicitation',
    'elicitation-sep1034-defaults',
    'server-sse-polling',
    'elicitation-sep1330-enums',
    'resources-subscribe',
    'resources-unsubscribe',
  ],
  '2026-07-28': [
    ...CARRIED,
    'server-stateless',
    'sep-2164-resource-not-found',
    'caching',
    'http-header-validation',
    'http-custom-header-server-validation',
    ...[
      'basic-elicitation',
      'basic-sampling',
      'basic-list-roots',
      'request-state',
      'multiple-input-requests',
      'multi-round',
      'missing-input-response',
      'non-tool-request',
      'result-type',
      'unsupported-methods',
      'tampered-state',
      'capability-check',
      'ignore-extra-params',
      'validate-input',
    ].map((s) => `input-required-result-${s}`),
  ],
};

/** Scenarios the official SDK server cannot pass, each with the check that fails and why. None today. */
const ALLOWED_FAILURES: Record<string, string> = {};

let direct: ServerSuiteResult | undefined;

t.test('every server scenario of both eras passes against the SDK backend', async (t) => {
  const backend = await httpFixture(t, newTag(), SCRIPT, ['--http']);
  const r = await runServerSuite({ url: backend.url });
  direct = r;
  t.same(
    r.legs.map((l) => l.specVersion),
    ERAS,
    'one leg per era',
  );
  for (const leg of r.legs) {
    const names = leg.scenarios.map((s) => s.scenario).sort();
    t.same(names, [...EXPECTED[leg.specVersion]!].sort(), `${leg.specVersion}: the suite's selection for the era ran, each once`);
    for (const s of leg.scenarios) {
      if (ALLOWED_FAILURES[s.scenario]) continue;
      const what = `${s.passed} checks passed; exit ${s.exitCode}; ${s.problems.join('; ')}`;
      t.ok(s.exitCode === 0 && s.passed > 0 && s.failed === 0 && s.warnings === 0, `${s.scenario}@${leg.specVersion}: ${what}`);
    }
  }
  t.same(r.unknown, [], 'no unknown scenario');
  t.ok(
    r.excluded.length > 0 && r.excluded.every((s) => s.startsWith('tasks-') || s.startsWith('sep-2640-')),
    `only extension scenarios are left out: ${r.excluded.join(', ')}`,
  );
  t.same(regressions(r, r), [], 'a run loses nothing against itself');
  t.comment(`\n${table(r)}`);
  const runs = r.legs.reduce((n, l) => n + l.scenarios.length, 0);
  t.comment(`${runs} scenario runs in ${Math.round(r.ms / 1000)} s`);
  if (r.failures.length) t.comment(r.tail);
});

t.test('the runner reports a server that fails its scenarios', async (t) => {
  // A loopback port nobody listens on: every request of the scenario fails.
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const r = await runServerSuite({
    url: `http://127.0.0.1:${port}/mcp`,
    specVersions: ['2025-11-25'],
    scenarios: ['ping', 'tools-list', 'no-such'],
  });
  t.same(r.failures.sort(), ['ping@2025-11-25', 'tools-list@2025-11-25'], 'both scenarios fail');
  for (const s of r.legs[0]!.scenarios)
    t.ok(s.failedChecks.length > 0, `${s.scenario}: failed checks named (${s.failedChecks.join(', ')})`);
  t.same(r.unknown, ['no-such'], 'a scenario no leg includes is reported');
  if (direct) {
    const lost = regressions(direct, r);
    t.ok(
      lost.includes('ping@2025-11-25') && lost.includes('tools-list@2025-11-25'),
      'what the backend passed and this run did not is a regression',
    );
  }
});

t.test('the fixture serves the same catalogue over stdio, in both eras', async (t) => {
  const eras: Array<['legacy' | 'auto', string]> = [
    ['legacy', '2025-11-25'],
    ['auto', '2026-07-28'],
  ];
  for (const [mode, version] of eras) {
    const client = new Client({ name: 'conformance-stdio-check', version: '1.0.0' }, { versionNegotiation: { mode } });
    await client.connect(new StdioClientTransport({ command: NODE, args: [SCRIPT, '--stdio'], stderr: 'ignore' }));
    t.teardown(() => client.close());
    t.equal(client.getNegotiatedProtocolVersion(), version, `${mode}: ${version}`);
    const tools = (await client.listTools()).tools.map((x) => x.name);
    t.ok(tools.includes('test_simple_text') && tools.includes('test_input_required_result_elicitation'), `${mode}: ${tools.length} tools`);
    const res = await client.callTool({ name: 'test_simple_text', arguments: {} });
    t.match(res, { content: [{ type: 'text' }] }, `${mode}: a tool call answers`);
    const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
    t.ok(prompts.includes('test_prompt_with_arguments'), `${mode}: prompts listed`);
    await client.close();
  }
});

t.test('a server behind a bearer token is run through auth-proxy.ts, SSE included', async (t) => {
  const token = 'conformance-proxy-token';
  const backend = await httpFixture(t, newTag(), SCRIPT, ['--http', '--bearer', token]);
  const proxy = await startAuthProxy({ target: backend.url, token });
  t.teardown(() => proxy.close());
  // Resumable SSE (2025 sessions), the listen stream (2026), and a Host the target must see unchanged.
  const scenarios = ['server-sse-polling', 'server-stateless', 'dns-rebinding-protection', 'tools-list'];
  const bare = await runServerSuite({ url: backend.url, scenarios: ['tools-list'] });
  t.same(bare.failures.sort(), ['tools-list@2025-11-25', 'tools-list@2026-07-28'], 'without the proxy: refused (401)');
  const r = await runServerSuite({ url: proxy.url, scenarios });
  const ran = r.legs.flatMap((l) => l.scenarios.map((s) => `${s.scenario}@${l.specVersion}`)).sort();
  t.same(
    ran,
    ['dns-rebinding-protection@2025-11-25', 'dns-rebinding-protection@2026-07-28', 'server-sse-polling@2025-11-25'].concat(
      'server-stateless@2026-07-28',
      'tools-list@2025-11-25',
      'tools-list@2026-07-28',
    ),
    'each scenario ran in the legs that include it',
  );
  t.same(r.failures, [], `through the proxy: every scenario passes\n${r.tail}`);
});
