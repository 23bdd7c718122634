// src/extension.js against fakes of `vscode` and of vscode-languageclient's LanguageClient:
// which documents start accelc lsp, with which command, and what a setting change or a missing
// accelc does. The fake matches document filters as VS Code does for these patterns.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const Module = require('node:module');
const path = require('node:path');

const extensionPath = path.join(__dirname, '..', 'src', 'extension.js');
// As in VS Code, an unset setting reads as the default package.json declares.
const declared = require('../package.json').contributes.configuration.properties;

// `**/` is any run of folders (or none), `*` any run of characters but `/`.
function globMatches(pattern, file) {
  const body = pattern.split('**/').map((part) => part.split('*').map(
    (s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*')).join('(?:.*/)?');
  return new RegExp(`^${body}$`).test(file.replace(/^\//, ''));
}

function doc(file, languageId) {
  return { uri: { scheme: 'file', fsPath: file }, languageId };
}

// Activates a fresh copy of the extension; returns what a test drives and observes.
async function activate({ documents = [], settings = {}, startError = null } = {}) {
  const world = { documents, settings, clients: [], errors: [], onOpen: [], onConfig: [], commands: {} };
  const vscode = {
    workspace: {
      get textDocuments() { return world.documents; },
      workspaceFolders: [{ uri: { fsPath: '/ws' } }],
      getConfiguration: (section) => ({
        get: (key) => (key in world.settings ? world.settings[key] : declared[`${section}.${key}`].default),
      }),
      onDidOpenTextDocument: (f) => world.onOpen.push(f),
      onDidChangeConfiguration: (f) => world.onConfig.push(f),
    },
    languages: {
      match: (selector, d) => (selector.some((f) => f.scheme === d.uri.scheme &&
        (f.language ? f.language === d.languageId : globMatches(f.pattern, d.uri.fsPath))) ? 10 : 0),
    },
    window: {
      createOutputChannel: () => ({ dispose() {} }),
      showErrorMessage: async (message) => { world.errors.push(message); },
    },
    commands: {
      registerCommand: (id, f) => { world.commands[id] = f; },
      executeCommand: () => {},
    },
  };
  class LanguageClient {
    constructor(id, name, server, options) {
      Object.assign(this, { id, server, options, running: false });
      world.clients.push(this);
    }
    async start() {
      if (startError) throw startError;
      this.running = true;
    }
    async stop() { this.running = false; }
  }
  const load = Module._load;
  Module._load = function (request, ...rest) {
    if (request === 'vscode') return vscode;
    if (request === 'vscode-languageclient/node') return { LanguageClient, RevealOutputChannelOn: { Never: 4 } };
    return load.call(this, request, ...rest);
  };
  try {
    delete require.cache[extensionPath];
    await require(extensionPath).activate({ subscriptions: [] });
  } finally {
    Module._load = load;
  }
  world.open = async (d) => {
    world.documents.push(d);
    for (const f of world.onOpen) await f(d);
  };
  world.changeSetting = async (key, value) => {
    world.settings[key] = value;
    const changed = `accel.${key}`;
    for (const f of world.onConfig) await f({ affectsConfiguration: (s) => changed === s || changed.startsWith(`${s}.`) });
  };
  return world;
}

test('no server for YAML and JSON files that are not Accelerate or DeepSpeed configs', async () => {
  const world = await activate({ documents: [doc('/ws/.github/workflows/ci.yaml', 'yaml'), doc('/ws/package.json', 'json')] });
  assert.strictEqual(world.clients.length, 0);
});

test('a spec starts `accelc lsp` once, serving specs and the default config patterns', async () => {
  const world = await activate({ documents: [doc('/ws/specs/quickstart.accel', 'accel')] });
  assert.strictEqual(world.clients.length, 1);
  const [client] = world.clients;
  assert.deepStrictEqual(client.server, { command: 'accelc', args: ['lsp'] });
  assert.ok(client.running);
  assert.deepStrictEqual(client.options.documentSelector[0], { scheme: 'file', language: 'accel' });
  await world.open(doc('/ws/specs/resume.accel', 'accel'));
  assert.strictEqual(world.clients.length, 1);
});

test('each default config pattern starts the server', async () => {
  for (const file of ['/home/u/.cache/huggingface/accelerate/default_config.yaml', '/ws/fsdp_accelerate.yaml',
                      '/ws/configs/accelerate_ds.yml', '/ws/ds_config_zero3.json', '/ws/deepspeed_stage2.json']) {
    const world = await activate();
    await world.open(doc(file, file.endsWith('.json') ? 'json' : 'yaml'));
    assert.strictEqual(world.clients.length, 1, file);
  }
});

test('accel.configFiles replaces the patterns', async () => {
  const world = await activate({ settings: { configFiles: ['**/train/*.yaml'] } });
  await world.open(doc('/ws/default_config.yaml', 'yaml'));
  assert.strictEqual(world.clients.length, 0);
  await world.open(doc('/ws/train/big.yaml', 'yaml'));
  assert.strictEqual(world.clients.length, 1);
});

test('a changed server path restarts the server with it, relative to the workspace', async () => {
  const world = await activate({ documents: [doc('/ws/a.accel', 'accel')] });
  await world.changeSetting('server.path', 'build/bin/accelc');
  assert.strictEqual(world.clients.length, 2);
  assert.strictEqual(world.clients[0].running, false);
  assert.deepStrictEqual(world.clients[1].server, { command: '/ws/build/bin/accelc', args: ['lsp'] });
  await world.changeSetting('server.extraArgs', ['--reference-url', 'https://example.org/ref']);
  assert.deepStrictEqual(world.clients[2].server.args, ['lsp', '--reference-url', 'https://example.org/ref']);
});

test('a missing accelc is reported with the setting to fix, and retried on the next document', async () => {
  const missing = Object.assign(new Error('spawn accelc ENOENT'), { code: 'ENOENT' });
  const world = await activate({ documents: [doc('/ws/a.accel', 'accel')], startError: missing });
  assert.strictEqual(world.errors.length, 1);
  assert.match(world.errors[0], /could not start `accelc lsp`: spawn accelc ENOENT.*accel\.server\.path/);
  await world.open(doc('/ws/b.accel', 'accel'));
  assert.strictEqual(world.clients.length, 2);
});

test('the restart command starts a new server', async () => {
  const world = await activate({ documents: [doc('/ws/a.accel', 'accel')] });
  await world.commands['accel.restartServer']();
  assert.strictEqual(world.clients.length, 2);
  assert.deepStrictEqual(world.clients.map((c) => c.running), [false, true]);
});
