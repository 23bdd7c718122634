// Tokenizes Accel source with syntaxes/accel.tmLanguage.json through vscode-textmate and
// vscode-oniguruma, the two libraries VS Code itself highlights with, so the tests see the
// scopes an editor shows.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const textmate = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const grammarPath = path.join(__dirname, '..', 'syntaxes', 'accel.tmLanguage.json');

let grammarPromise = null;

// Returns the Accel grammar, loading the Oniguruma WebAssembly once per process.
function loadGrammar() {
  if (grammarPromise === null) {
    grammarPromise = (async () => {
      const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
      await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
      const registry = new textmate.Registry({
        onigLib: Promise.resolve({
          createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
          createOnigString: (s) => new oniguruma.OnigString(s),
        }),
        loadGrammar: async (scopeName) => {
          if (scopeName !== 'source.accel') return null;
          const text = fs.readFileSync(grammarPath, 'utf8');
          return textmate.parseRawGrammar(text, grammarPath);
        },
      });
      return registry.loadGrammar('source.accel');
    })();
  }
  return grammarPromise;
}

// Returns {lines, endState}: for each line its tokens as {line, start, end, text, scopes}
// (lines and columns 0-based, scopes outermost first), and the rule stack after the last line.
async function tokenize(source) {
  const grammar = await loadGrammar();
  let state = textmate.INITIAL;
  const lines = source.split(/\r?\n/);
  const result = [];
  lines.forEach((text, line) => {
    const { tokens, ruleStack } = grammar.tokenizeLine(text, state);
    result.push(tokens.map((t, i) => {
      const end = i + 1 < tokens.length ? tokens[i + 1].startIndex : text.length;
      return { line, start: t.startIndex, end, text: text.slice(t.startIndex, end), scopes: t.scopes };
    }).filter((t) => t.end > t.start));
    state = ruleStack;
  });
  return { lines: result, endState: state };
}

module.exports = { tokenize, grammarPath, INITIAL: textmate.INITIAL };
