// The composer's own call path (the one a call takes while its server is
// not open yet, and the one a restarted composer serves) resolves names and
// checks arguments as the owner's direct path does (issue 26, items 4 and
// 5): same forms, same refusals, with the argument named in `data`.
import t from 'tap';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { EVERYTHING, albedoFor, newTag, rejection, server, tempHome } from '../helpers.ts';
import { FakeClock, FakeSettings, composerFor, entry, text } from '../fixtures/composer-ports.ts';

t.setTimeout(120_000);
t.teardown(closeCatalogueStores);

t.test("names and argument checks in the composer's session", async (t) => {
  const tag = newTag();
  const settings = new FakeSettings([entry('everything', server(tag, EVERYTHING, ['stdio']))]);
  const a = await albedoFor(t, tag, { home: tempHome(t), transportWorkers: 1 });
  const { composer } = composerFor(t, a, settings, new FakeClock());
  const s = await composer.open({});

  t.equal(text(await s.call('echo', { message: 'raw' })), 'Echo: raw', 'a raw tool name');
  t.equal(text(await s.call('mcp_everything_echo', { message: 'no hash' })), 'Echo: no hash', 'without its hash');
  const missing = await rejection(s.call('everything/echo', {}));
  t.match(missing, {
    code: 'ALBEDO_INVALID_ARGUMENT',
    outcome: 'not_run',
    data: { server: 'everything', tool: 'echo', argument: 'message', keyword: 'required' },
  });
  const typed = await rejection(s.call('everything/get-sum', { a: 1, b: 'two' }));
  t.match(typed, { code: 'ALBEDO_INVALID_ARGUMENT', data: { argument: 'b', pointer: '/b', keyword: 'type' } });
  t.match(typed.message, /b must be a number/);
  const resource = await rejection(s.call('everything/read_resource', { uri: 42 }));
  t.match(resource, { code: 'ALBEDO_INVALID_ARGUMENT', data: { tool: 'read_resource', argument: 'uri', keyword: 'type' } });
  const typo = await rejection(s.call('everything/get-summ', { a: 1, b: 2 }));
  t.match(typo, { code: 'ALBEDO_NOT_FOUND', data: { server: 'everything', tool: 'get-summ' } });
  t.match(typo.message, /did you mean mcp_everything_get_sum_\w+ \(everything\/get-sum\)\?/);
  await s.close();
});
