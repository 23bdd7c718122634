// Every .accel file the project ships (specs/, stdlib/) and every lit test that expects no
// errors (no `fail_` prefix) highlights with no problem that check.js looks for.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { problems } = require('./check');
const { repoRoot, accelFiles } = require('./paths');

const shipped = [...accelFiles(path.join(repoRoot, 'specs')), ...accelFiles(path.join(repoRoot, 'stdlib'))];
const litClean = accelFiles(path.join(repoRoot, 'tests', 'lit')).filter((f) => !path.basename(f).startsWith('fail_'));

test('the corpus is there', () => {
  // A wrong root would find nothing and pass every check below.
  assert.ok(shipped.some((f) => f.endsWith(path.join('specs', 'quickstart.accel'))), `no specs under ${repoRoot}`);
  assert.ok(shipped.filter((f) => f.includes(`${path.sep}stdlib${path.sep}`)).length >= 8);
  assert.ok(litClean.length >= 50, `only ${litClean.length} lit files`);
});

for (const file of [...shipped, ...litClean]) {
  test(`highlights ${path.relative(repoRoot, file)} cleanly`, async () => {
    assert.deepStrictEqual(await problems(fs.readFileSync(file, 'utf8')), []);
  });
}
