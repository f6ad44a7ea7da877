// The fault matrix, service crashes (issue 25 item 4): the settings
// and catalogue workers crashed by the kernel's fault injection under
// ten sessions over ten real servers with calls in flight. The rows are in
// rows.ts; transport and composer: service-crashes.test.ts.
import t from 'tap';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { quietRow } from './rows.ts';

t.setTimeout(170_000);
t.teardown(closeCatalogueStores);

t.test('the settings worker crashes: calls in flight untouched, sessions stay, a reload works', (t) => quietRow(t, 'settings', 'crash'));
t.test('the catalogue worker crashes: calls in flight untouched, sessions stay, a reload works', (t) => quietRow(t, 'catalogue', 'crash'));
