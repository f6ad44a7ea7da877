// The fault matrix, service crashes (issue 25 item 4): the transport's and
// the composer's workers crashed by the kernel's fault injection under ten
// sessions over ten real servers with calls in flight. The rows are in
// rows.ts; settings, catalogue and oauth: service-crashes-quiet.test.ts.
import t from 'tap';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { composerRow, transportRow } from './rows.ts';

t.setTimeout(170_000);
t.teardown(closeCatalogueStores);

t.test('a transport worker crashes: its calls are unknown, not retried; the other worker’s go through; sessions stay', (t) =>
  transportRow(t, 'crash'),
);
t.test('the composer crashes with a reload and an open in it: both unknown; direct calls untouched; restored', (t) =>
  composerRow(t, 'crash'),
);
