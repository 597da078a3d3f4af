-- The Redis API and sandbox, built once per Lua state (see mod.rs).
-- Runs with the real globals table `G`; scripts only ever see `env`, a
-- read-only view of it, so nothing here is reachable from user code except
-- through the functions it installs.
local G, env, impl = ...
local rawpcall, rawset_, rawget_, setmt = G.pcall, G.rawset, G.rawget, G.setmetatable
local type_, tostring_, error_, select_, unpack_ = G.type, G.tostring, G.error, G.select, G.unpack
local dbg = G.debug
local internal = '=[redis]'

-- Tables scripts must not modify (Redis makes them read-only in its Lua fork).
local protected = setmt({}, { __mode = 'k' })

local function ro_newindex()
  error_('Attempt to modify a readonly table', 2)
end

local real = setmt({}, { __mode = 'k' })
local function readonly(t)
  local p = setmt({}, { __index = t, __newindex = ro_newindex, __metatable = false })
  protected[p] = true
  real[p] = t
  return p
end

-- Errors raised by Rust functions arrive as mlua error values: their text.
local function errvalue(e)
  if type_(e) == 'userdata' then
    return impl.errstr(e)
  end
  return e
end

-- C trampolines (see `trampoline` in mod.rs): they keep the caller's frame
-- on tail calls, so errors can name the script line.
local cwrap = impl.cwrap
-- A Rust library function failing like a C one calling luaL_error: the
-- message gets the position of the Lua code that called it.
local function wrap(f)
  return cwrap(f, 1)
end
local function api(f)
  return cwrap(f, 0)
end

local function wraplib(lib)
  local t = {}
  for k, v in G.pairs(lib) do
    if type_(v) == 'function' then
      t[k] = wrap(v)
    else
      t[k] = v
    end
  end
  return t
end

-- Redis's __redis__err__handler: turns any error into an error table and
-- records where the script was when it failed.
local function errhandler(err)
  if type_(err) == 'userdata' then
    err = errvalue(err)
    -- SCRIPT KILL's error is raised by the Rust hook; Redis raises it as
    -- an error table.
    if err == impl.killed then
      err = { err = err }
    end
  end
  local lvl = 2
  local i = dbg.getinfo(lvl, 'nSl')
  while i and (i.what == 'C' or i.source == internal) do
    lvl = lvl + 1
    i = dbg.getinfo(lvl, 'nSl')
  end
  if type_(err) ~= 'table' then
    err = { err = 'ERR ' .. tostring_(err) }
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end

local function raise(msg)
  error_({ err = msg })
end

local redis = {}
local function call(...)
  return impl.call(...)
end
redis.call = cwrap(call, 2)
redis.pcall = cwrap(call, 3)
function redis.sha1hex(...)
  if select_('#', ...) ~= 1 then
    raise('ERR wrong number of arguments')
  end
  return impl.sha1hex((...))
end
function redis.error_reply(...)
  local e = ...
  if select_('#', ...) ~= 1 or type_(e) ~= 'string' then
    return { err = 'ERR wrong number or type of arguments' }
  end
  return { err = impl.errtext(e) }
end
function redis.status_reply(...)
  local s = ...
  if select_('#', ...) ~= 1 or type_(s) ~= 'string' then
    return { err = 'ERR wrong number or type of arguments' }
  end
  return { ok = s }
end
function redis.log(...)
  local n = select_('#', ...)
  if n < 2 then
    raise('ERR redis.log() requires two arguments or more.')
  end
  local level = ...
  if G.tonumber(level) == nil then
    raise('ERR First argument must be a number (log level).')
  end
  level = impl.toint(level)
  if level < 0 or level > 3 then
    raise('ERR Invalid debug level.')
  end
  local parts = {}
  for j = 2, n do
    local v = select_(j, ...)
    local tv = type_(v)
    if tv == 'string' or tv == 'number' then
      parts[#parts + 1] = tostring_(v)
    end
  end
  impl.log(level, G.table.concat(parts, ' '))
end
function redis.setresp(...)
  if select_('#', ...) ~= 1 then
    raise('ERR redis.setresp() requires one argument.')
  end
  local resp = impl.toint((...))
  if resp ~= 2 and resp ~= 3 then
    raise('ERR RESP version must be 2 or 3.')
  end
  impl.setresp(resp)
end
function redis.set_repl(...)
  if select_('#', ...) ~= 1 then
    raise('ERR redis.set_repl() requires two arguments.')
  end
  local flags = impl.toint((...))
  if flags < 0 or flags > 3 then
    raise('ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.')
  end
end
function redis.replicate_commands()
  return true
end
function redis.breakpoint()
  return false
end
function redis.debug() end
function redis.acl_check_cmd(...)
  if select_('#', ...) == 0 then
    raise('ERR Please specify at least one argument for this redis lib call')
  end
  if not impl.cmd_exists(...) then
    raise('ERR Invalid command passed to redis.acl_check_cmd()')
  end
  return true
end
function redis.register_function(...)
  return impl.register_function(...)
end
for _, name in G.ipairs({ 'sha1hex', 'log', 'setresp', 'set_repl', 'acl_check_cmd', 'register_function' }) do
  redis[name] = api(redis[name])
end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.REDIS_VERSION_NUM = impl.version_num
redis.REDIS_VERSION = impl.version

-- Redis's pcall: an error table with an `err` field comes back as its text.
local function fixpcall(ok, ...)
  if ok then
    return ok, ...
  end
  local e = errvalue((...))
  if type_(e) == 'table' then
    local m = rawget_(e, 'err')
    if type_(m) == 'string' or type_(m) == 'number' then
      e = m
    end
  end
  return false, e
end
G.pcall = function(...)
  return fixpcall(rawpcall(...))
end
G.rawset = function(t, k, v)
  if protected[t] then
    error_('Attempt to modify a readonly table', 0)
  end
  return rawset_(t, k, v)
end
G.setmetatable = function(t, m)
  if protected[t] then
    error_('Attempt to modify a readonly table', 0)
  end
  return setmt(t, m)
end
-- Iteration sees through the read-only views to the tables behind them.
local next_, pairs_, ipairs_ = G.next, G.pairs, G.ipairs
G.next = function(t, k)
  return next_(real[t] or t, k)
end
G.pairs = function(t)
  return pairs_(real[t] or t)
end
G.ipairs = function(t)
  return ipairs_(real[t] or t)
end
G.math.random = wrap(impl.math_random)
G.math.randomseed = wrap(impl.math_randomseed)

G.redis = readonly(redis)
for _, name in G.ipairs({ 'cjson', 'bit', 'struct', 'cmsgpack' }) do
  if impl[name] then
    G[name] = readonly(wraplib(impl[name]))
  end
end
for _, name in ipairs_({ 'string', 'math', 'table', 'coroutine' }) do
  G[name] = readonly(G[name])
end
G.getmetatable('').__index = G.string
G.loadfile, G.dofile, G.print, G.debug, G.module, G.require, G.package = nil, nil, nil, nil, nil, nil, nil
G.os, G.io = nil, nil

-- Globals: reads of unknown names fail, writes always fail.
setmt(G, {
  __index = function(_, k)
    error_("Script attempted to access nonexistent global variable '" .. tostring_(k) .. "'", 2)
  end,
})
setmt(env, { __index = G, __newindex = ro_newindex, __metatable = false })
protected[env] = true
G._G = env

return errhandler, readonly
