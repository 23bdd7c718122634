// What the extension derives from its settings, kept free of the `vscode` module so that
// node tests can check it: which documents accelc lsp serves and which command starts it.
'use strict';

const path = require('node:path');

// Returns the LSP document selector: `.accel` specs by language, config files by pattern.
// Only `file:` documents: accelc compiles each one under its path, reading imports, `extends`
// and the DeepSpeed JSON an Accelerate config names from the disk beside it.
function documentSelector(configFiles) {
  return [
    { scheme: 'file', language: 'accel' },
    ...configFiles.map((pattern) => ({ scheme: 'file', pattern })),
  ];
}

// Returns {command, args} for `accel.server.path` and `accel.server.extraArgs`. A bare name is
// looked up on PATH when started; a relative path with a slash (`build/bin/accelc`) is taken
// from `workspaceRoot`, if set, since VS Code's own working directory is not the project's.
function serverCommand(serverPath, extraArgs, workspaceRoot) {
  let command = serverPath.trim() || 'accelc';
  if (command.startsWith('~/') && process.env.HOME) {
    command = path.join(process.env.HOME, command.slice(2));
  } else if (command.includes('/') && !path.isAbsolute(command) && workspaceRoot) {
    command = path.join(workspaceRoot, command);
  }
  return { command, args: ['lsp', ...extraArgs] };
}

module.exports = { documentSelector, serverCommand };
