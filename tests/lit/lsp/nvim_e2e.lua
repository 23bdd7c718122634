-- Driven by nvim_e2e.py: opens the spec with a typo in Neovim's own LSP client, waits for
-- accelc's diagnostic, applies its code action, writes the file and quits. Reports what it
-- saw in $ACCEL_NVIM_REPORT; any failure quits with status 1.
local report = io.open(os.getenv('ACCEL_NVIM_REPORT'), 'w')
local function fail(message)
  report:write('FAIL ' .. message .. '\n')
  report:close()
  vim.cmd('cquit 1')
end

vim.g.accelc_path = os.getenv('ACCELC')
local plugin = dofile(os.getenv('ACCEL_NVIM_PLUGIN'))
vim.cmd('edit ' .. vim.fn.fnameescape(os.getenv('ACCEL_SPEC')))
local buffer = vim.api.nvim_get_current_buf()
if vim.bo[buffer].filetype ~= 'accel' then fail('filetype ' .. vim.bo[buffer].filetype) end

if not vim.wait(10000, function() return #vim.diagnostic.get(buffer) > 0 end, 20) then
  fail('no diagnostics within 10 s')
end
local diagnostic = vim.diagnostic.get(buffer)[1]
local lsp_code = diagnostic.user_data and diagnostic.user_data.lsp and diagnostic.user_data.lsp.code
report:write(string.format('diagnostic %s at %d:%d: %s\n', tostring(diagnostic.code or lsp_code),
  diagnostic.lnum + 1, diagnostic.col + 1, diagnostic.message))

vim.api.nvim_win_set_cursor(0, { diagnostic.lnum + 1, diagnostic.col })
local params = vim.lsp.util.make_range_params()
params.context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(buffer) }
local responses = vim.lsp.buf_request_sync(buffer, 'textDocument/codeAction', params, 10000)
local applied = 0
for _, response in pairs(responses or {}) do
  for _, action in ipairs(response.result or {}) do
    report:write('action ' .. action.title .. '\n')
    vim.lsp.util.apply_workspace_edit(action.edit, 'utf-16')
    applied = applied + 1
  end
end
if applied ~= 1 then fail('expected one code action, got ' .. applied) end
vim.cmd('write')

if not vim.wait(10000, function() return #vim.diagnostic.get(buffer) == 0 end, 20) then
  fail('diagnostics remain after the fix')
end
report:write('diagnostics cleared\n')
report:close()
vim.cmd('qall!')
