// Where the tests find the repository's .accel files: ACCEL_SOURCE_DIR when test/run.sh runs a
// copy of this package outside the checkout, else the checkout this package sits in.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const repoRoot = process.env.ACCEL_SOURCE_DIR || path.resolve(__dirname, '..', '..', '..');

// Returns the paths of the `.accel` files under `dir`, sorted, recursing into subfolders.
function accelFiles(dir) {
  const found = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...accelFiles(full));
    else if (entry.name.endsWith('.accel')) found.push(full);
  }
  return found.sort();
}

module.exports = { repoRoot, accelFiles };
