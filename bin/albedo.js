#!/usr/bin/env node
// The `albedo` command's entry: plain JavaScript that any Node can parse, so
// an old Node says which Node is needed instead of failing on the `.ts`
// extension. Albedo runs TypeScript by Node's type stripping (on by default
// from Node 22.18). `bin/albedo.ts` is a link to this file, so
// `node bin/albedo.ts` gets the same check; the program is bin/main.ts.
/* eslint-disable */
const features = /** @type {{ typescript?: string | false }} */ (process.features);
if (!features.typescript) {
  const [major, minor] = process.versions.node.split('.').map(Number);
  const why = major > 22 || (major === 22 && minor >= 18) ? 'its type stripping is switched off' : 'it is too old';
  process.stderr.write(
    'albedo: ALBEDO_NODE_TOO_OLD: albedo needs Node.js 22.18 or newer with TypeScript type ' +
      'stripping on; this is Node ' +
      process.version +
      ' and ' +
      why +
      '. In a clone, `npm ci` brings Node 22: ' +
      'run `npx albedo …` or `npm run albedo -- …`, which put it first on PATH.\n',
  );
  process.exit(1);
}
import('./main.ts');
