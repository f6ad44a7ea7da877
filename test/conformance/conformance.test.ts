// The pinned MCP conformance suite against Albedo's client, all four legs
// (see run.ts). Every non-auth scenario must pass; auth scenarios are the
// baseline's expected failures until OAuth sign-in lands.
import t from 'tap';
import { LEGS, runLeg } from './run.ts';

t.setTimeout(15 * 60_000);

const NON_AUTH: Record<string, string[]> = {
  'suite all': ['initialize', 'tools_call', 'elicitation-sep1034-client-defaults', 'sse-retry', 'request-metadata', 'sep-2322-client-request-state', 'http-standard-headers', 'http-custom-headers', 'http-invalid-tool-headers', 'json-schema-ref-no-deref', 'json-schema-2020-12-preservation'],
  'suite all @2026-07-28': ['tools_call', 'request-metadata', 'sep-2322-client-request-state', 'http-standard-headers', 'http-custom-headers', 'http-invalid-tool-headers', 'json-schema-ref-no-deref', 'json-schema-2020-12-preservation'],
  'requirements 2025-11-25': ['initialize', 'tools_call', 'elicitation-sep1034-client-defaults', 'sse-retry', 'json-schema-2020-12-preservation'],
  'requirements 2026-07-28': ['tools_call', 'request-metadata', 'sep-2322-client-request-state', 'http-standard-headers', 'http-custom-headers', 'http-invalid-tool-headers', 'json-schema-ref-no-deref', 'json-schema-2020-12-preservation'],
};

for (const leg of LEGS) {
  t.test(`conformance ${leg.name}`, async (t) => {
    const r = await runLeg(leg);
    t.equal(r.exitCode, 0, `the leg passes against the baseline\n${r.exitCode === 0 ? '' : r.tail}`);
    t.same(r.nonAuthFailures, [], 'no non-auth scenario has a failed or warning check');
    for (const name of NON_AUTH[leg.name]!) {
      const s = r.scenarios.find((x) => x.scenario === name);
      t.ok(s && s.passed > 0 && s.failed === 0 && s.warnings === 0, `${name}: ${s ? `${s.passed} checks passed ${s.problems.join('; ')}` : 'not run'}`);
    }
    t.comment(`${leg.name}: checks ${r.checks.passed} passed, ${r.checks.failed} failed (auth only)`);
  });
}
