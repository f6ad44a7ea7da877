/**
 * A service module is compiled against the contract of the service it names
 * (`defineService('host', ...)`); started under another service's name it
 * would answer messages it was never checked against, so its worker refuses
 * to start.
 */
import t from 'tap';
import { Kernel } from '../../kernel/kernel.ts';
import { fixture } from '../helpers.ts';

const MODULE = fixture('services/drain-host.ts');

t.test('a module runs under the service name it was defined for', async (t) => {
  const k = new Kernel();
  t.teardown(() => k.stop(2_000));
  k.start({ name: 'host', module: MODULE });
  t.same(await k.call('host', 'host/drain', { ids: [] }), {});
});

t.test('a module started under another service name does not start', async (t) => {
  const k = new Kernel();
  t.teardown(() => k.stop(2_000));
  const lost: Array<{ service: string; cause?: string }> = [];
  k.on('kernel', 'service/lost', (e) => lost.push(e));
  k.start({ name: 'catalogue', module: MODULE, restart: { intensity: 0 } });
  const err = await k.call('catalogue', 'catalogue/profiles', {}).catch((e: unknown) => e);
  t.match(err, { code: 'ALBEDO_SERVICE_FAILED', outcome: 'not_run' }, 'the call is refused: its worker never became ready');
  t.match(lost, [{ service: 'catalogue', cause: 'uncaught_exception' }], 'the start failed once, as a defect');
});
