// Rewrites the golden scopes of test/fixtures/ from the grammar as it is. Writing needs
// `--write`, so that a golden never changes by accident; without it, lists the stale ones.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { fixtures, goldenPath, render } = require('./golden');

(async () => {
  const write = process.argv.includes('--write');
  let stale = 0;
  for (const fixture of fixtures()) {
    const golden = goldenPath(fixture);
    const text = await render(fs.readFileSync(fixture, 'utf8'));
    if (fs.existsSync(golden) && fs.readFileSync(golden, 'utf8') === text) continue;
    stale++;
    if (write) fs.writeFileSync(golden, text);
    console.log(`${write ? 'wrote' : 'stale'}: ${path.relative(process.cwd(), golden)}`);
  }
  if (!write && stale > 0) {
    console.log('run `npm run update-goldens -- --write` to rewrite them, then review the diff');
    process.exitCode = 1;
  }
})();
