// The fault matrix, service hangs (issue 25 item 4): the settings
// and catalogue workers hung by the kernel's fault injection under ten
// sessions over ten real servers with calls in flight; the kernel's
// heartbeat, set short, finds them out. The rows are in rows.ts; transport
// and composer: service-hangs.test.ts.
import t from 'tap';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { quietRow, HANG_OPTIONS as opts } from './rows.ts';

t.setTimeout(170_000);
t.teardown(closeCatalogueStores);

t.test('the settings worker hangs: calls in flight untouched, sessions stay, a reload works', (t) => quietRow(t, 'settings', 'hang', opts));
t.test('the catalogue worker hangs: calls in flight untouched, sessions stay, a reload works', (t) =>
  quietRow(t, 'catalogue', 'hang', opts),
);
