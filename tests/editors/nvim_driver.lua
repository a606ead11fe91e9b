-- Drives a headless Neovim for tests/editors/test_neovim_client.py. The user's side (runtimepath,
-- vim.lsp.enable) comes from the README snippet loaded with -u; this script only plays the user:
-- it opens a model file, waits for fxscope's diagnostics, asks for a hover, optionally runs
-- :FxscopeGraph, and writes what it saw as JSON to $FXSCOPE_TEST_OUT.
--
-- Inputs (environment): FXSCOPE_TEST_FILE (file to open), FXSCOPE_TEST_WAIT_FOR (diagnostics to
-- wait for, "CODE:LNUM,..." with 0-based lines), FXSCOPE_TEST_HOVER_LINE (1-based line to hover,
-- first non-blank column), FXSCOPE_TEST_GRAPH ("1": also run :FxscopeGraph at the
-- hover line), FXSCOPE_TEST_LENS_LINE (1-based class line: wait for its code lens and run it),
-- FXSCOPE_TEST_TIMEOUT (ms per wait), FXSCOPE_TEST_OUT (result path).

local out_path = assert(os.getenv('FXSCOPE_TEST_OUT'))
local timeout = tonumber(os.getenv('FXSCOPE_TEST_TIMEOUT') or '120000')
local result = { steps = {} }

local function step(name)
  table.insert(result.steps, name)
end

local function finish(code)
  local fd = assert(io.open(out_path, 'w'))
  fd:write(vim.json.encode(result))
  fd:close()
  for _, client in ipairs(vim.lsp.get_clients()) do
    client:stop()
  end
  vim.wait(10000, function()
    return #vim.lsp.get_clients() == 0
  end, 50)
  vim.cmd((code == 0) and 'qall!' or ('cquit ' .. code))
end

--- Run `action`, which should make the plugin write a graph page; the page's path or vim.NIL.
local function capture_graph(action)
  local written, failed
  result.notifications = result.notifications or {}
  local notify = vim.notify
  vim.notify = function(msg, level, opts)
    table.insert(result.notifications, msg)
    if level == vim.log.levels.ERROR then
      failed = msg
    end
    return notify(msg, level, opts)
  end
  vim.g.fxscope_graph_dir = vim.fn.fnamemodify(out_path, ':h')
  vim.g.fxscope_graph_open = function(path)
    written = path
  end
  action()
  vim.wait(timeout, function()
    return written ~= nil or failed ~= nil
  end, 50)
  vim.notify = notify
  return written or vim.NIL
end

local function run()
  result.commands = vim.fn.exists(':FxscopeGraph') == 2
  result.config_cmd = vim.lsp.config.fxscope and vim.lsp.config.fxscope.cmd or vim.NIL

  vim.cmd.edit(vim.fn.fnameescape(assert(os.getenv('FXSCOPE_TEST_FILE'))))
  local buf = vim.api.nvim_get_current_buf()
  result.filetype = vim.bo[buf].filetype
  step('opened')

  local attached = vim.wait(timeout, function()
    return #vim.lsp.get_clients({ bufnr = buf, name = 'fxscope' }) > 0
  end, 50)
  if not attached then
    result.error = 'fxscope did not attach'
    return 1
  end
  local client = vim.lsp.get_clients({ bufnr = buf, name = 'fxscope' })[1]
  result.root_dir = client.root_dir
  result.server_name = client.server_info and client.server_info.name or vim.NIL
  step('attached')

  -- Results arrive per target as each finishes: wait for every expected "CODE:LNUM" (0-based).
  local expected = vim.split(os.getenv('FXSCOPE_TEST_WAIT_FOR') or '', ',', { trimempty = true })
  local got = vim.wait(timeout, function()
    local seen = {}
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      seen[('%s:%d'):format(d.code, d.lnum)] = true
    end
    for _, key in ipairs(expected) do
      if not seen[key] then
        return false
      end
    end
    return next(seen) ~= nil
  end, 50)
  result.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(result.diagnostics, {
      lnum = d.lnum,
      col = d.col,
      end_lnum = d.end_lnum,
      end_col = d.end_col,
      severity = d.severity,
      code = d.code,
      source = d.source,
      message = d.message,
    })
  end
  if not got then
    result.error = 'no diagnostics'
    return 1
  end
  step('diagnostics')

  local hover_line = tonumber(os.getenv('FXSCOPE_TEST_HOVER_LINE') or '')
  if hover_line then
    local text = vim.api.nvim_buf_get_lines(buf, hover_line - 1, hover_line, true)[1]
    local col = (text:find('%S') or 1) - 1
    vim.api.nvim_win_set_cursor(0, { hover_line, col })
    -- Results land after the diagnostics; ask until the server has the line's nodes.
    local hover
    vim.wait(timeout, function()
      local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
      local responses = vim.lsp.buf_request_sync(buf, 'textDocument/hover', params, 10000) or {}
      for _, r in pairs(responses) do
        if r.result and r.result.contents then
          hover = r.result.contents
          return true
        end
      end
      return false
    end, 200)
    result.hover = hover or vim.NIL
    step('hover')
  end

  -- Code lenses: the plugin refreshes them; running the one at FXSCOPE_TEST_LENS_LINE draws
  -- its class's graph through the fxscope.showGraph client command.
  local lens_line = tonumber(os.getenv('FXSCOPE_TEST_LENS_LINE') or '')
  if lens_line then
    local lenses
    vim.wait(timeout, function()
      lenses = vim.lsp.codelens.get(buf)
      for _, lens in ipairs(lenses) do
        if lens.range.start.line == lens_line - 1 and lens.command then
          return true
        end
      end
      return false
    end, 100)
    result.lenses = {}
    for _, lens in ipairs(lenses or {}) do
      table.insert(result.lenses, {
        line = lens.range.start.line,
        title = lens.command and lens.command.title or vim.NIL,
        command = lens.command and lens.command.command or vim.NIL,
      })
    end
    step('lenses')
    result.lens_graph = capture_graph(function()
      vim.api.nvim_win_set_cursor(0, { lens_line, 0 })
      vim.lsp.codelens.run()
    end)
    step('lens graph')
  end

  if os.getenv('FXSCOPE_TEST_GRAPH') == '1' then
    if hover_line then
      vim.api.nvim_win_set_cursor(0, { hover_line, 0 })
    end
    result.graph = capture_graph(function()
      vim.cmd('FxscopeGraph')
    end)
    step('graph')
  end
  return 0
end

local ok, code = xpcall(run, debug.traceback)
if not ok then
  result.error = code
  code = 1
end
finish(code)
