-- fxscope for Neovim: the :FxscopeGraph command, and code lenses for the fxscope server (kept
-- fresh; running one draws that class's graph).
--
--   :FxscopeGraph [TARGET] [MODULE]
--       Writes the FX graph of TARGET (default: the class under the cursor) as one self-contained
--       HTML file (`fxscope graph TARGET --format html`) and opens it. MODULE limits the drawing
--       to one module path (e.g. blocks.0.attn). The graph is traced from the files on disk.
--
-- Options (set before the plugin loads or any time after):
--   vim.g.fxscope_graph_dir   directory for the HTML files (default: stdpath('cache')/fxscope)
--   vim.g.fxscope_graph_open  function(path) that opens the file (default: vim.ui.open)
--   vim.g.fxscope_codelens    false disables the automatic code lens refresh

if vim.g.loaded_fxscope then
  return
end
vim.g.loaded_fxscope = true

local ROOT_MARKERS = { 'pyproject.toml', '.git' }

--- The fxscope executable: the first word of the server's configured cmd, so a virtualenv's
--- server and its graph command are the same installation.
---@return string
local function program()
  local ok, config = pcall(function()
    return vim.lsp.config.fxscope
  end)
  if ok and type(config) == 'table' and type(config.cmd) == 'table' and type(config.cmd[1]) == 'string' then
    return config.cmd[1]
  end
  return 'fxscope'
end

--- The workspace root of a buffer: the running fxscope client's root, else the nearest marker.
---@param buf integer
---@return string
local function workspace_root(buf)
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = buf, name = 'fxscope' })) do
    if client.root_dir then
      return client.root_dir
    end
  end
  return vim.fs.root(buf, ROOT_MARKERS) or vim.fn.getcwd()
end

--- `path` relative to `root` with '/' separators, or nil when it is outside.
---@param root string
---@param path string
---@return string?
local function relative(root, path)
  root = vim.fs.normalize(vim.fn.resolve(root))
  path = vim.fs.normalize(vim.fn.resolve(path))
  local prefix = root:sub(-1) == '/' and root or (root .. '/')
  if path:sub(1, #prefix) == prefix then
    return path:sub(#prefix + 1)
  end
  return nil
end

--- The name of the top-level class enclosing the cursor (or the next one when the cursor is
--- above every class), or nil.
---@param buf integer
---@return string?
local function class_at_cursor(buf)
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  for i = row, 1, -1 do
    local name = lines[i]:match('^class%s+([%a_][%w_]*)')
    if name then
      return name
    end
    if i < row and lines[i]:match('^[%a_@]') and not lines[i]:match('^class') then
      break -- a top-level def or statement between the cursor and any class above
    end
  end
  for i = row + 1, #lines do
    local name = lines[i]:match('^class%s+([%a_][%w_]*)')
    if name then
      return name
    end
  end
  return nil
end

--- A file name for a target id: 'zoo/model.py::Net' -> 'zoo_model.py__Net.html'.
---@param target string
---@param module string?
---@return string
local function html_name(target, module)
  local name = target .. (module and module ~= '' and ('@' .. module) or '')
  return (name:gsub('[^%w%._@-]', '_')) .. '.html'
end

---@param path string
local function open_file(path)
  local opener = vim.g.fxscope_graph_open
  if type(opener) == 'function' then
    opener(path)
    return
  end
  local _, err = vim.ui.open(path)
  if err then
    vim.notify(('fxscope: wrote %s (could not open it: %s)'):format(path, err), vim.log.levels.WARN)
  end
end

--- Write the graph of `target` (a target id; `module` limits it to one module path) in the
--- workspace `root` as an HTML page, and open it.
---@param target string
---@param module string?
---@param root string
local function draw(target, module, root)
  local dir = vim.g.fxscope_graph_dir or vim.fs.joinpath(vim.fn.stdpath('cache'), 'fxscope')
  vim.fn.mkdir(dir, 'p')
  local out = vim.fs.joinpath(dir, html_name(target, module))
  local cmd = { program(), 'graph', target, '--root', root, '--format', 'html' }
  if module and module ~= '' then
    vim.list_extend(cmd, { '--module', module })
  end
  vim.notify(('fxscope: drawing %s'):format(target), vim.log.levels.INFO)
  vim.system(cmd, { cwd = root, text = true }, function(res)
    vim.schedule(function()
      if res.code ~= 0 or res.stdout == '' then
        local why = vim.trim(res.stderr ~= '' and res.stderr or ('exit code ' .. res.code))
        vim.notify(('fxscope graph %s failed: %s'):format(target, why), vim.log.levels.ERROR)
        return
      end
      local fd = assert(io.open(out, 'wb'))
      fd:write(res.stdout)
      fd:close()
      open_file(out)
      vim.api.nvim_exec_autocmds('User', { pattern = 'FxscopeGraphWritten', data = { path = out, target = target } })
    end)
  end)
end

--- :FxscopeGraph [TARGET] [MODULE]
---@param opts { fargs: string[] }
local function graph_command(opts)
  local buf = vim.api.nvim_get_current_buf()
  local root = workspace_root(buf)
  local target, module = opts.fargs[1], opts.fargs[2]
  if not target then
    local file = vim.api.nvim_buf_get_name(buf)
    local rel = file ~= '' and relative(root, file) or nil
    local class = class_at_cursor(buf)
    if not rel or not class then
      vim.notify('fxscope: no class under the cursor; use :FxscopeGraph TARGET', vim.log.levels.ERROR)
      return
    end
    target = rel .. '::' .. class
  end
  draw(target, module, root)
end

-- The server's code lenses (`traced · 42 nodes`) carry the command fxscope.showGraph with
-- (target id, module path or nil, workspace folder URI): running a lens (vim.lsp.codelens.run())
-- draws that graph as an HTML page too.
vim.lsp.commands['fxscope.showGraph'] = function(command, ctx)
  local args = command.arguments or {}
  local target, module, folder = args[1], args[2], args[3]
  if type(target) ~= 'string' then
    vim.notify('fxscope: the lens names no target', vim.log.levels.ERROR)
    return
  end
  local root
  if type(folder) == 'string' then
    root = vim.uri_to_fname(folder)
  else
    root = workspace_root(ctx and ctx.bufnr or vim.api.nvim_get_current_buf())
  end
  draw(target, type(module) == 'string' and module or nil, root)
end

vim.api.nvim_create_user_command('FxscopeGraph', graph_command, {
  nargs = '*',
  desc = 'fxscope: write the FX graph of TARGET (default: the class under the cursor) as HTML and open it',
})

-- Neovim shows code lenses only when asked: refresh fxscope's class summaries when a buffer is
-- entered or saved and whenever fxscope publishes new results (its diagnostics change).
local group = vim.api.nvim_create_augroup('fxscope', { clear = true })
vim.api.nvim_create_autocmd('LspAttach', {
  group = group,
  callback = function(args)
    local client = vim.lsp.get_client_by_id(args.data.client_id)
    if not client or client.name ~= 'fxscope' or vim.g.fxscope_codelens == false then
      return
    end
    if not client:supports_method('textDocument/codeLens', args.buf) then
      return
    end
    local function refresh()
      if vim.api.nvim_buf_is_valid(args.buf) and #vim.lsp.get_clients({ bufnr = args.buf, name = 'fxscope' }) > 0 then
        vim.lsp.codelens.refresh({ bufnr = args.buf })
      end
    end
    vim.api.nvim_create_autocmd({ 'BufEnter', 'BufWritePost', 'DiagnosticChanged' }, {
      group = group,
      buffer = args.buf,
      callback = refresh,
    })
    refresh()
  end,
})
