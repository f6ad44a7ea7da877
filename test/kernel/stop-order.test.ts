// The kernel stops services in the reverse of their dependencies
// (ServiceSpec.dependsOn), as an OTP supervisor stops its children: a
// dependent's stop hook still reaches what it depends on, and each service
// stops only once every service depending on it has. Services with no order
// between them, or a cycle of dependsOn, still stop.
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Kernel, type ServiceSpec } from '../../kernel/kernel.ts';
import { fixture, rejection, tempHome } from '../helpers.ts';

const RECORDER = fixture('services/stop-recorder.ts');

function recorder(name: string, log: string, calls: string[] = [], dependsOn?: string[]): ServiceSpec {
  const spec: ServiceSpec = { name, module: RECORDER, options: { log, calls } };
  if (dependsOn) spec.dependsOn = dependsOn;
  return spec;
}

const lines = (log: string): string[] => readFileSync(log, 'utf8').trim().split('\n');

async function ready(k: Kernel, names: string[]): Promise<void> {
  await Promise.all(names.map((n) => k.callAny(n, 'recorder/ping', null)));
}

t.test('dependents stop first, and their stop hooks still reach what they depend on', async (t) => {
  const log = path.join(tempHome(t), 'stops.log');
  const k = new Kernel();
  // Started in an order that is not the dependency order: the stop order comes from dependsOn alone.
  k.start(recorder('top', log, ['mid', 'base'], ['mid', 'base', 'client']));
  k.start(recorder('base', log));
  k.start(recorder('mid', log, ['base'], ['base']));
  await ready(k, ['top', 'mid', 'base']);
  const stopping = k.stop(5_000);
  const late = await rejection(k.callAny('base', 'recorder/ping', null));
  t.equal(late.code, 'ALBEDO_CLOSED', "the embedder's own calls are refused once the stop has begun");
  t.equal(late.outcome, 'not_run');
  await stopping;
  t.same(lines(log), [
    'top called mid: answered',
    'top called base: answered',
    'top stopped',
    'mid called base: answered',
    'mid stopped',
    'base stopped',
  ]);
  await k.stop(5_000);
  t.same(lines(log).length, 6, 'a second stop does nothing more');
});

t.test('a service already stopped refuses a call from a worker as closed; unrelated services stop together', async (t) => {
  const log = path.join(tempHome(t), 'stops.log');
  const k = new Kernel();
  // `a` calls `b` at its stop without declaring it: nothing orders them, so `b` may be gone (closed) or not yet.
  k.start(recorder('a', log, ['b']));
  k.start(recorder('b', log));
  await ready(k, ['a', 'b']);
  await k.stop(5_000);
  const got = lines(log);
  t.same(got.filter((l) => l.endsWith('stopped')).sort(), ['a stopped', 'b stopped']);
  t.match(
    got.find((l) => l.startsWith('a called b')),
    /^a called b: (answered|ALBEDO_CLOSED)$/,
  );
});

t.test('a cycle of dependsOn does not hold the stop up', async (t) => {
  const log = path.join(tempHome(t), 'stops.log');
  const k = new Kernel();
  k.start(recorder('x', log, [], ['y']));
  k.start(recorder('y', log, [], ['x']));
  await ready(k, ['x', 'y']);
  await k.stop(5_000);
  t.same(lines(log).sort(), ['x stopped', 'y stopped']);
});
