// The corpus check, on text: one message per problem, each naming its line and column (1-based).
//   - a token with an `invalid.*` scope (the grammar marks exactly what Accel.g4 rejects:
//     numbers run into letters, unterminated strings, stray characters);
//   - non-blank text left with only the root scope `source.accel`: every word, number,
//     operator and bracket gets a scope of its own, so a pattern that stops matching shows up;
//   - a multi-line construct (block comment, enum body, rule header) still open at the end,
//     so one bad pattern cannot swallow the rest of a file unnoticed.
'use strict';

const { tokenize } = require('./tokenize');

// `lines` and `endState` as tokenize() returns them.
function findProblems(lines, endState) {
  const found = [];
  for (const token of lines.flat()) {
    const where = `${token.line + 1}:${token.start + 1} ${JSON.stringify(token.text)}`;
    const invalid = token.scopes.find((s) => s.startsWith('invalid.'));
    if (invalid) found.push(`${where} is ${invalid}`);
    else if (token.scopes.length === 1 && token.text.trim() !== '') found.push(`${where} has no scope`);
  }
  if (endState.depth !== 1) found.push(`a construct is still open at the end (depth ${endState.depth})`);
  return found;
}

async function problems(source) {
  const { lines, endState } = await tokenize(source);
  return findProblems(lines, endState);
}

module.exports = { problems, findProblems };
