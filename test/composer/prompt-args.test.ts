// get_prompt through a session in every provider profile, with the real
// normaliser: the model finds each argument among the properties of
// `arguments` (by its name, or by the server's name its description gives
// when it had to be renamed), and session.call reaches the real server's
// prompts/get with the server's names, strict mode's nulls dropped.
import t from 'tap';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { nameOf } from '../../services/catalogue/names.ts';
import { normalise, PROFILES } from '../../services/catalogue/schema/normalise.ts';
import { EVERYTHING, albedoFor, newTag, rejection, server, tempHome, waitNoLeftovers } from '../helpers.ts';
import { FakeClock, FakeSettings, composerFor, entry } from '../fixtures/composer-ports.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

type S = Record<string, any>;
const FIXTURE = new URL('../fixtures/prompt-args-server.ts', import.meta.url).pathname;
const define = (o: S, k: string, v: unknown): void => {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
};

/** The property the model would use for the server's argument `name`: its own name, or the one whose description names it. */
function propertyFor(argProps: S, name: string): string {
  if (Object.hasOwn(argProps, name)) return name;
  const said = `The server's argument ${JSON.stringify(name)}.`;
  const found = Object.keys(argProps).filter((k) => (argProps[k].description as string).startsWith(said));
  if (found.length !== 1) throw new Error(`no single property names ${JSON.stringify(name)}`);
  return found[0]!;
}

/** The model's arguments: `given` under the properties found for them; every other property null when the schema requires all (strict). */
function modelArgs(schema: S, prompt: string, given: Array<[string, string]>): S {
  const argSchema = schema.properties.arguments;
  const args: S = {};
  for (const [n, v] of given) define(args, propertyFor(argSchema.properties, n), v);
  if (argSchema.additionalProperties === false) for (const k of argSchema.required) if (!Object.hasOwn(args, k)) define(args, k, null);
  return JSON.parse(JSON.stringify({ name: prompt, arguments: args })) as S;
}

const textOf = (r: unknown): string =>
  (r as { messages: Array<{ content: { text?: string } }> }).messages.map((m) => m.content.text ?? '').join('\n');

t.test('every profile: session.call on get_prompt fills in the prompt with the arguments the model gave', async (t) => {
  const tag = newTag();
  const albedo = await albedoFor(t, tag, { home: tempHome(t), transportWorkers: 1 });
  const settings = new FakeSettings([entry('everything', server(tag, EVERYTHING, ['stdio'])), entry('hostile', server(tag, FIXTURE))]);
  const { composer } = composerFor(t, albedo, settings, new FakeClock(), { normalise: (s, p) => normalise(s, p as never) });
  const hostile: Array<[string, string]> = [
    ['a-b', '1'],
    ['a.b', '2'],
    ['a b', '3'],
    ['a_b', '4'],
    ['__proto__', '5'],
    ['город', '6'],
    ['🙂', '7'],
  ];
  for (const profile of PROFILES) {
    const s = await composer.open({ profile });
    const tool = (server: string) => {
      const name = nameOf({ server, kind: 'get_prompt' });
      const found = s.tools().find((x) => x.name === name);
      if (!found) throw new Error(`${profile}: ${server}'s get_prompt is not advertised: ${s.warnings().join('; ')}`);
      return found;
    };
    const everything = tool('everything');
    const r = await s.call(
      everything.name,
      modelArgs(everything.inputSchema, 'args-prompt', [
        ['city', 'Tromsø'],
        ['state', 'Troms'],
      ]),
    );
    t.match(textOf(r), /Tromsø, Troms/, `${profile}: server-everything's prompt came back with both arguments applied`);
    const h = tool('hostile');
    const echoed = JSON.parse(textOf(await s.call(h.name, modelArgs(h.inputSchema, 'echo', hostile)))) as Array<[string, string]>;
    t.same(echoed.sort(), [...hostile].sort(), `${profile}: each renamed argument reached the server under its own name, and only those`);
    const bad = { name: 'args-prompt', arguments: { city: 42 } };
    const refused = await rejection(s.call(everything.name, bad));
    t.match(refused, { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run' }, `${profile}: a non-string value is not run`);
    await s.close();
  }
  await composer.close();
  t.same(await waitNoLeftovers(tag), [], 'no server outlived its session');
});
