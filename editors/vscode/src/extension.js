// The VS Code client of `accelc lsp`: starts the server for `.accel` specs and for the
// Accelerate YAML and DeepSpeed JSON files that `accel.configFiles` names, and restarts it when
// a setting changes. Highlighting needs none of this: it is the grammar in syntaxes/.
'use strict';

const vscode = require('vscode');
const { LanguageClient, RevealOutputChannelOn } = require('vscode-languageclient/node');
const { documentSelector, serverCommand } = require('./settings');

let client = null;
let outputChannel = null;

function readSettings() {
  const config = vscode.workspace.getConfiguration('accel');
  const folders = vscode.workspace.workspaceFolders;
  return {
    server: serverCommand(config.get('server.path', 'accelc'), config.get('server.extraArgs', []),
                          folders && folders.length ? folders[0].uri.fsPath : undefined),
    selector: documentSelector(config.get('configFiles', [])),
  };
}

// The extension activates on every YAML and JSON file (the patterns are the user's, so the
// activation events cannot list them); the server starts only once a document it serves opens.
function servesAnOpenDocument(selector) {
  return vscode.workspace.textDocuments.some((d) => vscode.languages.match(selector, d) > 0);
}

async function start() {
  const { server, selector } = readSettings();
  if (client !== null || !servesAnOpenDocument(selector)) return;
  client = new LanguageClient('accel', 'Accel', server, {
    documentSelector: selector,
    outputChannel,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
  });
  try {
    await client.start();
  } catch (error) {
    client = null;
    const choice = await vscode.window.showErrorMessage(
      `Accel: could not start \`${server.command} lsp\`: ${error.message}. ` +
        'Set accel.server.path to the accelc executable.',
      'Open Settings');
    if (choice === 'Open Settings') {
      vscode.commands.executeCommand('workbench.action.openSettings', 'accel.server');
    }
  }
}

async function stop() {
  const running = client;
  client = null;
  if (running !== null) await running.stop();
}

async function restart() {
  await stop();
  await start();
}

function activate(context) {
  outputChannel = vscode.window.createOutputChannel('Accel');
  context.subscriptions.push(
    outputChannel,
    vscode.workspace.onDidOpenTextDocument(() => start()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('accel.server') || e.affectsConfiguration('accel.configFiles')) {
        restart();
      }
    }),
    vscode.commands.registerCommand('accel.restartServer', restart),
    { dispose: () => stop() });
  return start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate };
