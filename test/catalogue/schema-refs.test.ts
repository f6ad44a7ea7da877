// `$ref` handling never fetches anything: a loopback server that must see no
// request, `file:///etc/passwd`, the conformance suite's canary tool, and the
// ref-parser configuration on its own (without the sanitising layer in front).
import t, { type Test } from 'tap';
import http from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { fixture } from '../helpers.ts';
import { normalise, PROFILES } from '../../services/catalogue/schema/normalise.ts';
import { dereferenceLocal } from '../../services/catalogue/schema/refs.ts';
import { CHECKERS } from './provider-rules.ts';

const MARKER = 'fetched-remote-schema-marker';

async function canary(t: Test): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const srv = http.createServer((_req, res) => {
    hits++;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ type: 'object', properties: { [MARKER]: { type: 'string' } } }));
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => srv.close(() => resolve())));
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, hits: () => hits };
}

// No wait is needed before counting hits: a resolver that fetched would await
// the response, so the request would reach the server before normalise returns.

const passwd = existsSync('/etc/passwd') ? readFileSync('/etc/passwd', 'utf8') : '';

t.test('a network $ref and a file $ref are never fetched, in any profile', async (t) => {
  const { url, hits } = await canary(t);
  const schema = {
    type: 'object',
    properties: {
      remote: { $ref: `${url}/x.json` },
      remoteFragment: { $ref: `${url}/defs.json#/$defs/a` },
      file: { $ref: 'file:///etc/passwd' },
      relative: { $ref: 'passwd' },
      keep: { type: 'string' },
    },
    $id: `${url}/base/`,
    required: ['keep'],
  };
  for (const p of PROFILES) {
    const r = await normalise(schema, p);
    if (r.ok) {
      t.same(CHECKERS[p](r.schema), [], `${p}: passes the ${p} rules`);
      const text = JSON.stringify(r.schema);
      t.notOk(text.includes(MARKER), `${p}: nothing from the server`);
      if (passwd) t.notOk(text.includes('root:'), `${p}: nothing from /etc/passwd`);
      t.equal(r.notes.filter((n) => n.startsWith('ref_external ')).length, 4, `${p}: each external reference noted`);
      t.equal(
        r.schema.properties && (r.schema.properties as Record<string, unknown>).keep !== undefined,
        true,
        `${p}: the rest of the schema stays`,
      );
    } else {
      t.equal(r.code, 'strict_unsupported', `${p}: strict mode cannot say "any value" for the cut references`);
    }
  }
  t.equal(hits(), 0, 'the loopback server received no request');
});

t.test(
  "the conformance suite's lookup_user (json-schema-ref-no-deref): the local $ref is inlined, the canary is not fetched",
  async (t) => {
    const { url, hits } = await canary(t);
    const tool = JSON.parse(readFileSync(fixture('schemas/conformance.json'), 'utf8')).tools.find(
      (x: { name: string }) => x.name === 'lookup_user',
    );
    const schema = JSON.parse(JSON.stringify(tool.inputSchema).replace('{{CANARY}}', `${url}/canary/profile-schema.json`));
    for (const p of PROFILES) {
      const r = await normalise(schema, p);
      t.ok(r.ok, `${p}: accepted`);
      if (p === 'openai-strict')
        t.match(r, { args: { props: { profile: { plan: { json: 'any' } } } } }, 'strict: the cut canary is JSON text');
      if (!r.ok) continue;
      const props = r.schema.properties as Record<string, Record<string, unknown>>;
      t.equal(props.id.type, 'string', `${p}: #/$defs/userId inlined`);
      t.notOk(JSON.stringify(r.schema).includes(MARKER), `${p}: the canary's schema is not in the output`);
    }
    t.equal(hits(), 0, 'the canary URL was never requested');
  },
);

t.test('the ref-parser options alone (no sanitising in front) resolve no external reference', async (t) => {
  const { url, hits } = await canary(t);
  const schema = {
    type: 'object',
    properties: { a: { $ref: `${url}/x.json` }, b: { $ref: 'file:///etc/passwd' }, c: { $ref: '#/$defs/c' } },
    $defs: { c: { type: 'integer' } },
  };
  const out = (await dereferenceLocal(structuredClone(schema))) as { properties: Record<string, Record<string, unknown>> };
  t.same(out.properties.c, { type: 'integer' }, 'the same-document reference is inlined');
  t.equal(out.properties.a.$ref, `${url}/x.json`, 'the network reference is left as it was');
  t.equal(out.properties.b.$ref, 'file:///etc/passwd', 'the file reference is left as it was');
  t.equal(hits(), 0, 'no request reached the server');
});

t.test('a cycle through $ref siblings and a root $ref terminate, cut once', async (t) => {
  const schemas = [
    { $ref: '#/$defs/r', $defs: { r: { type: 'object', properties: { self: { $ref: '#/$defs/r' } } } } },
    { type: 'object', properties: { a: { $ref: '#/properties/a' } } },
    {
      type: 'object',
      properties: { n: { $ref: '#/$defs/n', description: 'x' } },
      $defs: { n: { type: 'object', properties: { m: { $ref: '#/$defs/n', title: 'y' } } } },
    },
  ];
  for (const s of schemas) {
    for (const p of PROFILES) {
      const r = await normalise(s, p);
      if (r.ok) t.same(CHECKERS[p](r.schema), [], `${p}: passes`);
      else t.ok(['strict_unsupported', 'required_unsupported'].includes(r.code), `${p}: refused with ${r.code}`);
    }
  }
});
