-- fxscope language server for Neovim 0.11+: shows which lines of PyTorch model code torch.fx
-- cannot trace, and the graph nodes each traced line produced.
--
-- Put this directory (clients/neovim) on 'runtimepath' and enable the server:
--
--   vim.opt.runtimepath:append('/path/to/fxscope/clients/neovim')
--   vim.lsp.enable('fxscope')
--
-- Override any field with vim.lsp.config() before or after enabling, e.g. a virtualenv's server:
--
--   vim.lsp.config('fxscope', { cmd = { '/path/to/venv/bin/fxscope', 'serve' } })
--
-- fxscope imports and runs the workspace's model code (in isolated worker processes): enable it
-- only for projects you trust.

-- Client-side behaviour. Tracing settings (timeout, workers, debounce) default to the workspace's
-- [tool.fxscope] table; set them here only to override it for this editor.
--   enable      false stops tracing without stopping the server
--   traceOn     'type' re-traces the unsaved buffer while typing, 'save' only on write
--   debounce    milliseconds between the last edit and the re-trace
--   workers     parallel traces; timeout: seconds per target
--   codeLens    class summaries above each nn.Module (see :help vim.lsp.codelens)
--   inlayHints  the same summary as an inlay hint at the class line
local settings = {
  enable = true,
  traceOn = 'type',
  codeLens = true,
  inlayHints = false,
}

---@type vim.lsp.Config
return {
  cmd = { 'fxscope', 'serve' },
  filetypes = { 'python' },
  -- The nearest pyproject.toml holds [tool.fxscope]; a repository without one is rooted at .git.
  root_markers = { 'pyproject.toml', '.git' },
  -- Answered to workspace/configuration (section "fxscope") and sent once at start-up.
  settings = { fxscope = settings },
  init_options = { fxscope = vim.deepcopy(settings) },
}
