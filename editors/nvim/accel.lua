-- Neovim (0.7 or later) support for Accel: `.accel` files get the `accel` filetype, and
-- `accelc lsp` is started for them and for Accelerate YAML / DeepSpeed JSON configs
-- (docs/lsp.md). Put this file in your runtime path's `plugin/` folder, or `require` it from
-- your init.lua with `accelc` on PATH (or set vim.g.accelc_path).
vim.cmd([[autocmd BufRead,BufNewFile *.accel setfiletype accel]])

local function start(buffer)
  local accelc = vim.g.accelc_path or 'accelc'
  local name = vim.api.nvim_buf_get_name(buffer)
  local root = vim.fs and vim.fs.dirname(name) or vim.fn.fnamemodify(name, ':p:h')
  local client = vim.lsp.start_client({
    name = 'accelc',
    cmd = { accelc, 'lsp' },
    root_dir = root,
  })
  if client then
    vim.lsp.buf_attach_client(buffer, client)
  end
  return client
end

vim.api.nvim_create_autocmd('FileType', {
  pattern = { 'accel', 'yaml', 'json' },
  callback = function(args)
    start(args.buf)
  end,
})

return { start = start }
