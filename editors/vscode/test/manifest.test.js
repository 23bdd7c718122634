// package.json and language-configuration.json: what they point at exists and agrees with the
// grammar, and the indentation rules indent and outdent Accel's blocks.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { tokenize } = require('./tokenize');

const root = path.join(__dirname, '..');
const manifest = require('../package.json');
const config = JSON.parse(fs.readFileSync(path.join(root, 'language-configuration.json'), 'utf8'));

test('package.json contributes the accel language with its grammar and configuration', () => {
  const [language] = manifest.contributes.languages;
  assert.strictEqual(language.id, 'accel');
  assert.deepStrictEqual(language.extensions, ['.accel']);
  assert.ok(fs.existsSync(path.join(root, language.configuration)));
  const [grammar] = manifest.contributes.grammars;
  assert.strictEqual(grammar.language, 'accel');
  const raw = JSON.parse(fs.readFileSync(path.join(root, grammar.path), 'utf8'));
  assert.strictEqual(raw.scopeName, grammar.scopeName);
  assert.ok(fs.existsSync(path.join(root, manifest.main)));
});

test('the comment tokens toggle what the grammar reads as comments', async () => {
  const line = `${config.comments.lineComment} x`;
  const block = `${config.comments.blockComment[0]} x ${config.comments.blockComment[1]} y = 1`;
  const { lines: [lineTokens] } = await tokenize(line);
  assert.ok(lineTokens.every((t) => t.scopes.includes('comment.line.double-slash.accel')));
  const { lines: [blockTokens] } = await tokenize(block);
  assert.ok(blockTokens.find((t) => t.text === ' x ').scopes.includes('comment.block.accel'));
  assert.ok(!blockTokens.find((t) => t.text === 'y').scopes.some((s) => s.startsWith('comment')));
});

test('a line that opens a block indents the next; a closing bracket outdents', () => {
  const increase = new RegExp(config.indentationRules.increaseIndentPattern);
  const decrease = new RegExp(config.indentationRules.decreaseIndentPattern);
  for (const opens of ['job j {', '  compute {', '  model = MLP { // the model', '  hidden = [', '    len(']) {
    assert.ok(increase.test(opens), opens);
  }
  for (const stays of ['  init_process_group { timeout = 60s }', '  x = 1 // {', '  hidden = [64, 64]', '  s = "{"']) {
    assert.ok(!increase.test(stays), stays);
  }
  for (const closes of ['}', '  ]', '  ) and x']) assert.ok(decrease.test(closes), closes);
  assert.ok(!decrease.test('  x = 1 }'));
});

test('Enter in a doc comment continues it', () => {
  const rule = config.onEnterRules.find((r) => new RegExp(r.beforeText).test('  /// Where offloaded state lives.'));
  assert.strictEqual(rule.action.appendText, '/// ');
  assert.ok(!new RegExp(rule.beforeText).test('  x = 1 // not a doc comment'));
});
