// The pinned MCP conformance suite against Albedo's client, all four legs
// (see run.ts), OAuth included: every scenario must pass with no failed or
// warning check, and the expected-failures baseline is empty. Each leg runs
// its scenarios one CLI process each, a few at a time, so that the verdict
// does not depend on how busy the machine is.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { LEGS, runLeg } from './run.ts';

t.setTimeout(20 * 60_000);

const NON_AUTH: Record<string, string[]> = {
  'suite all': [
    'initialize',
    'tools_call',
    'elicitation-sep1034-client-defaults',
    'sse-retry',
    'request-metadata',
    'sep-2322-client-request-state',
    'http-standard-headers',
    'http-custom-headers',
    'http-invalid-tool-headers',
    'json-schema-ref-no-deref',
    'json-schema-2020-12-preservation',
  ],
  'suite all @2026-07-28': [
    'tools_call',
    'request-metadata',
    'sep-2322-client-request-state',
    'http-standard-headers',
    'http-custom-headers',
    'http-invalid-tool-headers',
    'json-schema-ref-no-deref',
    'json-schema-2020-12-preservation',
  ],
  'requirements 2025-11-25': [
    'initialize',
    'tools_call',
    'elicitation-sep1034-client-defaults',
    'sse-retry',
    'json-schema-2020-12-preservation',
  ],
  'requirements 2026-07-28': [
    'tools_call',
    'request-metadata',
    'sep-2322-client-request-state',
    'http-standard-headers',
    'http-custom-headers',
    'http-invalid-tool-headers',
    'json-schema-ref-no-deref',
    'json-schema-2020-12-preservation',
  ],
};

/** Auth scenarios each leg must have run (and passed): the extensions run under `--suite all` and the requirement sets. */
const AUTH_CORE = [
  'metadata-default',
  'metadata-var1',
  'metadata-var2',
  'metadata-var3',
  'basic-cimd',
  'scope-from-www-authenticate',
  'scope-from-scopes-supported',
  'scope-omitted-when-undefined',
  'scope-step-up',
  'scope-retry-limit',
  'token-endpoint-auth-basic',
  'token-endpoint-auth-post',
  'token-endpoint-auth-none',
  'pre-registration',
];
const AUTH_DRAFT = [
  'resource-mismatch',
  'offline-access-scope',
  'offline-access-not-supported',
  'authorization-server-migration',
  'iss-supported',
  'iss-not-advertised',
  'iss-supported-missing',
  'iss-wrong-issuer',
  'iss-unexpected',
  'iss-normalized',
  'metadata-issuer-mismatch',
];
const AUTH_EXT = [
  'client-credentials-jwt',
  'client-credentials-basic',
  'enterprise-managed-authorization',
  'dpop',
  'dpop-nonce',
  'wif-jwt-bearer',
];
const AUTH: Record<string, string[]> = {
  'suite all': [...AUTH_CORE, ...AUTH_DRAFT, ...AUTH_EXT, '2025-03-26-oauth-metadata-backcompat', '2025-03-26-oauth-endpoint-fallback'],
  'suite all @2026-07-28': [...AUTH_CORE, ...AUTH_DRAFT],
  // The requirement sets force every listed scenario onto their revision's wire, the (unscored) extensions included.
  'requirements 2025-11-25': [...AUTH_CORE, ...AUTH_EXT],
  'requirements 2026-07-28': [...AUTH_CORE, ...AUTH_DRAFT, ...AUTH_EXT],
};

t.test('the expected-failures baseline is empty', async (t) => {
  const entries = readFileSync(new URL('./expected-failures.yaml', import.meta.url), 'utf8')
    .split('\n')
    .filter((l) => /^\s*-\s*\S/.test(l));
  t.same(entries, [], 'no scenario is excused');
});

t.test('a leg fails when a client fails its scenario, or a scenario yields no verdict', async (t) => {
  // A client that exits at once, and a scenario the suite does not have (its CLI run writes no checks.json).
  const r = await runLeg(LEGS[0]!, { scenarios: ['auth/metadata-default', 'no-such-scenario'], command: 'exec /bin/false' });
  t.not(r.exitCode, 0, 'the leg fails');
  t.same(r.failures, ['auth/metadata-default', 'no-such-scenario'], 'both scenarios are failures');
  t.ok(r.checks.failed >= 2, `failed checks counted (${r.checks.failed})`);
  t.same(
    r.scenarios.map((s) => [s.scenario, s.exitCode !== 0]),
    [
      ['auth/metadata-default', true],
      ['no-such-scenario', true],
    ],
    'each CLI run failed',
  );
});

for (const leg of LEGS) {
  t.test(`conformance ${leg.name}`, async (t) => {
    const r = await runLeg(leg);
    t.equal(r.exitCode, 0, `the leg passes\n${r.exitCode === 0 ? '' : r.tail}`);
    const names = r.scenarios.map((s) => s.scenario);
    t.same(
      names.filter((n, i) => names.indexOf(n) !== i),
      [],
      'each scenario ran once',
    );
    t.same(r.failures, [], `no scenario has a failed or warning check\n${r.failures.length ? r.tail : ''}`);
    for (const name of [...NON_AUTH[leg.name]!, ...AUTH[leg.name]!.map((n) => `auth/${n}`)]) {
      const s = r.scenarios.find((x) => x.scenario === name);
      const what = s ? `${s.passed} checks passed ${s.problems.join('; ')}` : 'not run';
      t.ok(s && s.passed > 0 && s.failed === 0 && s.warnings === 0, `${name}: ${what}`);
    }
    t.comment(
      `${leg.name}: ${r.scenarios.length} scenarios; ` +
        `checks ${r.checks.passed} passed, ${r.checks.failed} failed, ${r.checks.warnings} warnings; ${Math.round(r.ms / 1000)} s`,
    );
  });
}
