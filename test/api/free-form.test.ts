// No tool lost to a profile (issue 22, item 6), end to end: a real stdio MCP
// server (the official SDK's) offers a document database's and a notes
// server's tools whose required arguments are free-form objects; a session
// in every profile advertises them all, and a call with the model's
// arguments (JSON text where the profile said so) gets the server's real
// objects there; a call with the real objects works as well; JSON text that
// does not parse is refused as not run and never reaches the server.
import t from 'tap';
import path from 'node:path';
import { normalise, PROFILES } from '../../services/catalogue/schema/normalise.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { albedoFor, fixture, newTag, rejection, tempHome } from '../helpers.ts';
import { readLog, text } from '../fixtures/composer-ports.ts';
import { sessionHome, toolOf } from '../fixtures/session-home.ts';
import { FREE_FORM_TOOLS, REAL_ARGS, said } from '../fixtures/free-form-tools.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

t.test("every profile: each tool is advertised and its call reaches the server with the server's objects", async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  const log = path.join(tempHome(t), 'calls.log');
  h.write({ db: h.stdio(fixture('free-form-server.ts'), [log]) });
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  for (const profile of PROFILES) {
    const s = await albedo.sessions.open({ profile });
    t.same(
      s.tools().filter((x) => x.description.startsWith('[server "db"')).length,
      FREE_FORM_TOOLS.length,
      `${profile}: all ${FREE_FORM_TOOLS.length} tools advertised (${s.warnings().join('; ') || 'no warnings'})`,
    );
    for (const tool of FREE_FORM_TOOLS) {
      const name = toolOf(s, 'db', tool.name);
      const r = await normalise(tool.inputSchema, profile);
      const real = REAL_ARGS[tool.name]!;
      const model = said(real, r.ok ? r.args : undefined);
      t.same(JSON.parse(text(await s.call(name, model))), real, `${profile}: ${tool.name}: the server got its own objects`);
      t.same(JSON.parse(text(await s.call(name, real))), real, `${profile}: ${tool.name}: the real objects pass unchanged`);
    }
    await s.close();
  }

  for (const profile of ['portable', 'gemini', 'openai-strict'] as const) {
    const s = await albedo.sessions.open({ profile });
    const before = readLog(log).length;
    const insert = toolOf(s, 'db', 'insert-many');
    const bad = await rejection(s.call(insert, { database: 'shop', collection: 'orders', documents: '[{"_id": 1' }));
    t.match(
      bad,
      {
        code: 'ALBEDO_INVALID_ARGUMENT',
        outcome: 'not_run',
        data: { server: 'db', tool: 'insert-many', argument: 'documents', path: ['documents'] },
      },
      `${profile}: JSON text that does not parse is refused, naming the argument`,
    );
    const kind = await rejection(s.call('db/update-many', { database: 'shop', collection: 'orders', update: '[1]' }));
    t.match(kind, { code: 'ALBEDO_INVALID_ARGUMENT', data: { path: ['update'] } }, `${profile}: an array where an object is declared`);
    t.equal(readLog(log).length, before, `${profile}: neither call reached the server`);
    await s.close();
  }
});
