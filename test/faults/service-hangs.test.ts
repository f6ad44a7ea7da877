// The fault matrix, service hangs (issue 25 item 4): the transport's and
// the composer's workers hung (event loop blocked for good) by the kernel's
// fault injection under ten sessions over ten real servers with calls in
// flight; the kernel's heartbeat, set short (rows.ts HANG_OPTIONS), finds them
// out and restarts them. The rows are in rows.ts; settings, catalogue and
// oauth: service-hangs-quiet.test.ts.
import t from 'tap';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { composerRow, transportRow, HANG_OPTIONS as opts } from './rows.ts';

t.setTimeout(170_000);
t.teardown(closeCatalogueStores);

t.test('a transport worker hangs: its calls are unknown, not retried; the other worker’s go through; sessions stay', (t) =>
  transportRow(t, 'hang', opts),
);
t.test('the composer hangs with a reload and an open in it: both unknown; direct calls untouched; restored', (t) =>
  composerRow(t, 'hang', opts),
);
