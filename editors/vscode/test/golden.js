// Golden scopes: each fixture under test/fixtures/ beside a `.scopes` file that lists every
// non-blank token as `line:column text scopes` (1-based, root scope left out), which a reader
// can check by eye against the fixture. test/update-goldens.js rewrites them.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { tokenize } = require('./tokenize');

const fixturesDir = path.join(__dirname, 'fixtures');

// Returns the fixture paths, sorted.
function fixtures() {
  return fs.readdirSync(fixturesDir).filter((n) => n.endsWith('.accel')).sort()
    .map((n) => path.join(fixturesDir, n));
}

function goldenPath(fixture) {
  return `${fixture}.scopes`;
}

// Returns the golden text for `source`.
async function render(source) {
  const { lines } = await tokenize(source);
  return lines.flat().filter((t) => t.text.trim() !== '')
    .map((t) => `${t.line + 1}:${t.start + 1} ${JSON.stringify(t.text)} ${t.scopes.slice(1).join(' ')}\n`)
    .join('');
}

module.exports = { fixtures, goldenPath, render };
