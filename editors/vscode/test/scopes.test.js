// What the grammar scopes, one construct at a time, with the source beside the scope it must
// get; and that the corpus check (check.js) reports what it claims to.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { tokenize } = require('./tokenize');
const { problems, findProblems } = require('./check');

// Returns the scopes (without the root) of the token holding the first character of `text`'s
// `nth` occurrence (0-based) in `source`; a `text` that starts or ends with a word character
// matches whole words only (`is` is not found in `distributed_type`).
async function scopesOf(source, text, nth = 0) {
  const escaped = text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = new RegExp(`${/^\w/.test(text) ? '(?<!\\w)' : ''}${escaped}${/\w$/.test(text) ? '(?!\\w)' : ''}`, 'g');
  const lines = source.split('\n');
  let seen = 0;
  for (let line = 0; line < lines.length; line++) {
    for (const match of lines[line].matchAll(pattern)) {
      if (seen++ < nth) continue;
      const { lines: tokens } = await tokenize(source);
      const token = tokens[line].find((t) => t.start <= match.index && match.index < t.end);
      return token.scopes.slice(1);
    }
  }
  throw new Error(`${JSON.stringify(text)} is not in the source`);
}

// Asserts that the character at `column` (0-based) of a one-line `source` carries `scope`.
async function expectScopeAt(source, column, scope) {
  const { lines } = await tokenize(source);
  const token = lines[0].find((t) => t.start <= column && column < t.end);
  assert.ok(token.scopes.includes(scope), `column ${column} of ${JSON.stringify(source)}: ${token.scopes.join(' ')}; expected ${scope}`);
}

// Asserts that `text` in `source` carries `scope` (among others, outermost first).
async function expectScope(source, text, scope, nth = 0) {
  const scopes = await scopesOf(source, text, nth);
  assert.ok(scopes.includes(scope), `${JSON.stringify(text)} in ${JSON.stringify(source)}: ${scopes.join(' ')}; expected ${scope}`);
}

test('numbers: integers, floats, durations and sizes with their units', async () => {
  await expectScope('x = 1_000', '1_000', 'constant.numeric.integer.accel');
  await expectScope('x = 2e-5', '2e-5', 'constant.numeric.float.accel');
  await expectScope('x = 2.5E3', '2.5E3', 'constant.numeric.float.accel');
  await expectScopeAt('t = 60s', 4, 'constant.numeric.duration.accel');
  await expectScopeAt('t = 60s', 6, 'constant.numeric.duration.accel');
  await expectScopeAt('t = 60s', 6, 'keyword.other.unit.duration.accel');
  await expectScopeAt('t = 250ms', 7, 'keyword.other.unit.duration.accel');
  await expectScopeAt('m = 10GB', 4, 'constant.numeric.size.accel');
  await expectScopeAt('m = 10GiB', 6, 'keyword.other.unit.size.accel');
  await expectScopeAt('m = 1_024KiB', 5, 'constant.numeric.size.accel');
});

test('numbers run into letters are one invalid token, as in Accel.g4', async () => {
  for (const bad of ['10Gb', '5sec', '1.5s', '2.5E3x', '1_']) {
    const { lines } = await tokenize(`x = ${bad}`);
    const token = lines[0].find((t) => t.start === 4);
    assert.strictEqual(token.text, bad);
    assert.ok(token.scopes.includes('invalid.illegal.number.accel'), `${bad}: ${token.scopes.join(' ')}`);
  }
});

test('strings, escapes, and a string cut off by the end of the line', async () => {
  await expectScope('s = "a\\"b"', 'a', 'string.quoted.double.accel');
  await expectScope('s = "a\\"b"', '\\"', 'constant.character.escape.accel');
  await expectScope('s = "a\\"b"', 'b', 'string.quoted.double.accel');
  await expectScopeAt('s = "\\n\\t\\\\"', 5, 'constant.character.escape.accel');
  await expectScopeAt('s = "\\n\\t\\\\"', 7, 'constant.character.escape.accel');
  await expectScopeAt('s = "\\n\\t\\\\"', 9, 'constant.character.escape.accel');
  await expectScopeAt('s = "\\n\\t\\\\"', 11, 'punctuation.definition.string.end.accel');
  // Accel knows only \\ \" \n \t (A1004 for others).
  await expectScopeAt('s = "x\\qy"', 6, 'invalid.illegal.unknown-escape.accel');
  await expectScope('s = "open\nt = 1', '"open', 'invalid.illegal.unterminated-string.accel');
  // The next line is not swallowed by the open string.
  await expectScope('s = "open\nt = 1', '1', 'constant.numeric.integer.accel');
});

test('comments: line, block across lines, doc comments, suppressions', async () => {
  await expectScope('// plain', 'plain', 'comment.line.double-slash.accel');
  await expectScope('/// a doc comment', 'doc', 'comment.line.documentation.accel');
  await expectScope('/// uses `x_y`', '`x_y`', 'markup.inline.raw.accel');
  // Accel.g4 makes every comment that starts with three slashes a doc comment.
  await expectScope('//// four', 'four', 'comment.line.documentation.accel');
  await expectScope('x = 1 /* a\n b */ y = 2', 'b */', 'comment.block.accel');
  await expectScope('x = 1 /* a\n b */ y = 2', 'y', 'variable.other.property.accel');
  await expectScope('x = 1 // accelc-ignore[DS-019, A2003]: why', 'DS-019', 'constant.other.rule-id.accel');
  await expectScope('x = 1 // accelc-ignore[DS-019, A2003]: why', 'A2003', 'constant.other.rule-id.accel');
});

test('declarations name what they declare', async () => {
  const schema = [
    'import "base.accel" as base',
    'enum OffloadDevice { NONE = "none", cpu }',
    'open record DeepSpeedFp16Config {',
    '  enabled: bool | Auto? = auto  from env A_B, C_D  where enabled != false  key "fp16"',
    '  rule DS-019 warning "needs `x`" for accelerate, trainer:',
    '    enabled implies len(x) > 0',
    '}',
    'job small extends quickstart {',
    '  key = "not a keyword here"',
    '}',
    'let base_lr = 2e-5',
  ].join('\n');
  await expectScope(schema, 'import', 'keyword.control.import.accel');
  await expectScope(schema, 'base.accel', 'string.quoted.double.accel');
  await expectScope(schema, 'base', 'entity.name.namespace.accel', 1);
  await expectScope(schema, 'enum', 'storage.type.enum.accel');
  await expectScope(schema, 'OffloadDevice', 'entity.name.type.enum.accel');
  await expectScope(schema, 'NONE', 'variable.other.enummember.accel');
  await expectScope(schema, 'cpu', 'variable.other.enummember.accel');
  await expectScope(schema, 'open', 'storage.modifier.open.accel');
  await expectScope(schema, 'record', 'storage.type.record.accel');
  await expectScope(schema, 'DeepSpeedFp16Config', 'entity.name.type.record.accel');
  await expectScope(schema, 'enabled', 'entity.name.variable.field.accel');
  await expectScope(schema, 'bool', 'support.type.primitive.accel');
  await expectScope(schema, 'Auto', 'entity.name.type.accel');
  await expectScope(schema, '?', 'keyword.operator.optional.accel');
  await expectScope(schema, 'auto', 'constant.other.enum.accel');
  await expectScope(schema, 'from', 'keyword.other.from.accel');
  await expectScope(schema, 'A_B', 'variable.other.environment.accel');
  await expectScope(schema, 'C_D', 'variable.other.environment.accel');
  await expectScope(schema, 'where', 'keyword.other.where.accel');
  await expectScope(schema, '!=', 'keyword.operator.comparison.accel');
  await expectScope(schema, 'false', 'constant.language.boolean.accel');
  await expectScope(schema, 'key', 'keyword.other.key.accel');
  await expectScope(schema, 'rule', 'storage.type.rule.accel');
  await expectScope(schema, 'DS-019', 'constant.other.rule-id.accel');
  await expectScope(schema, 'warning', 'keyword.other.severity.accel');
  await expectScope(schema, 'for', 'keyword.other.for.accel');
  await expectScope(schema, 'trainer', 'support.constant.tool.accel');
  await expectScope(schema, 'implies', 'keyword.operator.word.accel');
  await expectScope(schema, 'len', 'support.function.builtin.accel');
  await expectScope(schema, 'job', 'storage.type.job.accel');
  await expectScope(schema, 'small', 'entity.name.type.job.accel');
  await expectScope(schema, 'extends', 'storage.modifier.extends.accel');
  await expectScope(schema, 'quickstart', 'entity.other.inherited-class.accel');
  // Declaration and modifier words are reserved only where they start one (Accel.g4's `ident`).
  await expectScope(schema, 'key =', 'variable.other.property.accel');
  await expectScope(schema, 'let', 'storage.type.let.accel');
  await expectScope(schema, 'base_lr', 'entity.name.constant.accel');
});

test('job bodies: fields, record values, enum members, expressions', async () => {
  const spec = [
    'job j {',
    '  compute { distributed_type = MULTI_CPU }',
    '  accelerator.mixed_precision = no',
    '  model = MLP { hidden = [64, 64] }',
    '  ok = x is not set or y in [A, B]',
    '}',
  ].join('\n');
  await expectScope(spec, 'compute', 'variable.other.property.accel');
  await expectScope(spec, 'distributed_type', 'variable.other.property.accel');
  await expectScope(spec, 'MULTI_CPU', 'constant.other.enum.accel');
  await expectScope(spec, 'accelerator', 'variable.other.property.accel');
  await expectScope(spec, '.', 'punctuation.accessor.accel');
  await expectScope(spec, 'mixed_precision', 'variable.other.property.accel');
  await expectScope(spec, 'no', 'constant.other.enum.accel');
  await expectScope(spec, 'MLP', 'entity.name.type.accel');
  await expectScope(spec, '[', 'punctuation.section.brackets.begin.accel');
  await expectScope(spec, 'x is', 'variable.other.accel');
  await expectScope(spec, 'is', 'keyword.operator.word.accel');
  await expectScope(spec, 'set', 'keyword.operator.word.accel');
  await expectScope(spec, 'in', 'keyword.operator.word.accel');
  await expectScope(spec, '{', 'punctuation.section.braces.begin.accel');
  await expectScope(spec, '}', 'punctuation.section.braces.end.accel');
});

test('the corpus check reports invalid tokens, unscoped text and unclosed constructs', async () => {
  assert.deepStrictEqual(await problems('job j {\n  x = 1\n}\n'), []);
  assert.deepStrictEqual(await problems('x = 10Gb'), ['1:5 "10Gb" is invalid.illegal.number.accel']);
  assert.deepStrictEqual(await problems('x = @'), ['1:5 "@" is invalid.illegal.character.accel']);
  assert.deepStrictEqual(await problems('x = 1 /* open'), ['a construct is still open at the end (depth 2)']);
  // No pattern of a sound grammar leaves text unscoped; a token list shows the check sees it.
  const unscoped = [[{ line: 0, start: 4, end: 5, text: 'y', scopes: ['source.accel'] },
                     { line: 0, start: 5, end: 6, text: ' ', scopes: ['source.accel'] }]];
  assert.deepStrictEqual(findProblems(unscoped, { depth: 1 }), ['1:5 "y" has no scope']);
});
