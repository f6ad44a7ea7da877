// The fault matrix, the OAuth worker crashed and hung mid-sign-in (issue 25
// item 4), under ten sessions over ten real servers with calls in flight,
// against a real authorization server (oidc-provider, oauth-stack.ts). The
// rows are in rows.ts.
import t from 'tap';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { oauthRow, HANG_OPTIONS } from './rows.ts';

t.setTimeout(170_000);
t.teardown(closeCatalogueStores);

t.test('the oauth worker crashes mid-sign-in: the sign-in is unknown, no token; sessions untouched', (t) => oauthRow(t, 'crash'));
t.test('the oauth worker hangs mid-sign-in: the sign-in is unknown, no token; sessions untouched', (t) =>
  oauthRow(t, 'hang', HANG_OPTIONS),
);
