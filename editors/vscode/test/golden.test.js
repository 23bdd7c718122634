// Each fixture tokenizes to exactly its checked-in golden scopes (test/golden.js).
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { fixtures, goldenPath, render } = require('./golden');

test('there are fixtures', () => {
  assert.ok(fixtures().length >= 3);
});

for (const fixture of fixtures()) {
  test(`${path.basename(fixture)} matches its golden scopes`, async () => {
    const golden = goldenPath(fixture);
    assert.ok(fs.existsSync(golden), `${golden} is missing; run npm run update-goldens -- --write`);
    const actual = await render(fs.readFileSync(fixture, 'utf8'));
    assert.strictEqual(actual, fs.readFileSync(golden, 'utf8'),
                       `scopes of ${path.basename(fixture)} changed; if that is intended, run npm run update-goldens -- --write and review the diff`);
  });
}
