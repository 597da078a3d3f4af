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
-- impl.rt(op, raise, ...): the run's Rust entry point (RT_* in mod.rs);
-- nil outside a script invocation.
local function call(...)
  return impl.rt(0, ...)
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
    raise('ERR Invalid log level.')
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
  impl.rt(1, false, resp)
end
function redis.set_repl(...)
  if not impl.rt then
    raise('ERR redis.set_repl can only be called inside a script invocation')
  end
  if select_('#', ...) ~= 1 then
    raise('ERR redis.set_repl() requires two arguments.')
  end
  local flags = impl.toint((...))
  if flags < 0 or flags > 3 then
    raise('ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.')
  end
  impl.rt(2, false, flags)
end
function redis.replicate_commands()
  return true
end
function redis.breakpoint()
  return impl.ldb_breakpoint()
end
function redis.debug(...)
  impl.ldb_debug(...)
end
function redis.acl_check_cmd(...)
  if select_('#', ...) == 0 then
    raise('ERR Please specify at least one argument for this redis lib call')
  end
  local allowed = impl.rt(3, false, ...)
  if allowed == nil then
    raise('ERR Invalid command passed to redis.acl_check_cmd()')
  elseif type_(allowed) == 'string' then
    raise(allowed)
  end
  return allowed
end
for _, name in G.ipairs({ 'sha1hex', 'log', 'setresp', 'set_repl', 'acl_check_cmd' }) do
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
-- As rawget reads Redis's read-only tables (flagged, not proxied).
G.rawget = function(t, k)
  return rawget_(real[t] or t, k)
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
-- Redis 8.0's sandboxed os library holds os.clock alone.
G.os = { clock = G.os.clock }
for _, name in ipairs_({ 'string', 'math', 'table', 'coroutine', 'os' }) do
  G[name] = readonly(G[name])
end
G.getmetatable('').__index = G.string
-- Redis's Lua never loads precompiled bytecode (crafted bytecode can crash
-- the VM): its parser reads every chunk as source, so a binary chunk fails
-- as text would, with the same message (chunk id as luaO_chunkid makes it).
local loadstring_ = G.loadstring
G.loadstring = function(s, name)
  if type_(s) == 'string' and s:byte(1) == 27 then
    local src = name or s
    src = src:match('^[^%z]*')
    local line = src:match('^[^\n\r]*')
    local limit = 60 - 17
    if #line > limit then line = line:sub(1, limit) end
    if #line < #src then line = line .. '...' end
    return nil, '[string "' .. line .. '"]:1: unexpected symbol near \'char(27)\''
  end
  return loadstring_(s, name)
end
G.loadfile, G.dofile, G.print, G.debug, G.module, G.require, G.package = nil, nil, nil, nil, nil, nil, nil
G.io = nil

-- Globals: reads of unknown names fail, writes always fail.
setmt(G, {
  __index = function(_, k)
    error_("Script attempted to access nonexistent global variable '" .. tostring_(k) .. "'", 2)
  end,
})
-- getmetatable(_G) answers a read-only table, as Redis's read-only globals
-- do (so `getmetatable(_G).__index = …` fails as a modification), without
-- handing out the real metatable, whose __index is the real globals.
local shown_mt = readonly({})
setmt(env, { __index = G, __newindex = ro_newindex, __metatable = shown_mt })
protected[env] = true
G._G = env

-- Functions (FUNCTION LOAD / FCALL). Like Redis 7.0, a library's code
-- runs once at load time with globals that hold nothing but a small
-- `redis` (register_function, log, the version); the functions it
-- registers later run with the full sandbox. All libraries share one
-- environment, `fenv`, whose lookups switch on `loading`: closures keep the
-- environment of the chunk that made them, so swapping the chunk's
-- environment afterwards would not reach them.
local loading = false
local pending = nil
local strfind, strlower = G.string.find, G.string.lower
local function nonexistent(k)
  error_("Script attempted to access nonexistent global variable '" .. tostring_(k) .. "'", 3)
end
-- A read-only table whose missing fields fail like missing globals (Redis's
-- error metatable on the load-time tables).
local function strict(t)
  local p = setmt({}, {
    __index = function(_, k)
      local v = rawget_(t, k)
      if v == nil then
        nonexistent(k)
      end
      return v
    end,
    __newindex = ro_newindex,
    __metatable = false,
  })
  protected[p] = true
  real[p] = t
  return p
end

local flag_bits = { ['no-writes'] = 1, ['allow-oom'] = 2, ['allow-stale'] = 4, ['no-cluster'] = 8,
  ['allow-cross-slot-keys'] = 16 }
local function read_flags(t)
  local bits, j = 0, 1
  while true do
    local f = t[j]
    if f == nil then
      return bits
    end
    local tf = type_(f)
    if tf ~= 'string' and tf ~= 'number' then
      return nil
    end
    local b = flag_bits[strlower(tostring_(f))]
    if b == nil then
      return nil
    end
    if bits % (2 * b) < b then
      bits = bits + b
    end
    j = j + 1
  end
end
local function as_string(v)
  local tv = type_(v)
  if tv == 'string' or tv == 'number' then
    return tostring_(v)
  end
  return nil
end

local function register_function(...)
  local n = select_('#', ...)
  if n < 1 or n > 2 then
    raise('ERR wrong number of arguments to redis.register_function')
  end
  local name, cb, flags, desc
  if n == 1 then
    local t = ...
    if type_(t) ~= 'table' then
      raise('ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).')
    end
    for k, v in pairs_(t) do
      if type_(k) ~= 'string' and type_(k) ~= 'number' then
        raise('ERR named argument key given to redis.register_function is not a string')
      end
      local key = strlower(tostring_(k))
      if key == 'function_name' then
        name = as_string(v)
        if name == nil then
          raise('ERR function_name argument given to redis.register_function must be a string')
        end
      elseif key == 'description' then
        desc = as_string(v)
        if desc == nil then
          raise('ERR description argument given to redis.register_function must be a string')
        end
      elseif key == 'callback' then
        if type_(v) ~= 'function' then
          raise('ERR callback argument given to redis.register_function must be a function')
        end
        cb = v
      elseif key == 'flags' then
        if type_(v) ~= 'table' then
          raise('ERR flags argument to redis.register_function must be a table representing function flags')
        end
        flags = read_flags(v)
        if flags == nil then
          raise('ERR unknown flag given')
        end
      else
        raise('ERR unknown argument given to redis.register_function')
      end
    end
    if name == nil then
      raise('ERR redis.register_function must get a function name argument')
    end
    if cb == nil then
      raise('ERR redis.register_function must get a callback argument')
    end
  else
    local a, b = ...
    name = as_string(a)
    if name == nil then
      raise('ERR first argument to redis.register_function must be a string')
    end
    if type_(b) ~= 'function' then
      raise('ERR second argument to redis.register_function must be a function')
    end
    cb = b
  end
  if pending == nil then
    raise('ERR redis.register_function can only be called on FUNCTION LOAD command')
  end
  if not strfind(name, '^[%w_]+$') then
    raise('ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long')
  end
  for _, f in ipairs_(pending) do
    if f[1] == name then
      raise('ERR Function already exists in the library')
    end
  end
  pending[#pending + 1] = { name, cb, flags or 0, desc }
end

local load_redis = {
  register_function = api(register_function),
  log = redis.log,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION_NUM = impl.version_num,
  REDIS_VERSION = impl.version,
}
local load_globals = { redis = strict(load_redis) }

local fenv = setmt({}, {
  __index = function(_, k)
    local v
    if loading then
      v = rawget_(load_globals, k)
    else
      v = rawget_(G, k)
    end
    if v == nil then
      error_("Script attempted to access nonexistent global variable '" .. tostring_(k) .. "'", 2)
    end
    return v
  end,
  __newindex = ro_newindex,
  __metatable = shown_mt,
})
protected[fenv] = true

-- Runs a library's chunk: (nil, functions) or (error text).
local function load_library(chunk)
  pending, loading = {}, true
  local ok, e = rawpcall(chunk)
  local fns = pending
  pending, loading = nil, false
  if ok then
    return nil, fns
  end
  e = errvalue(e)
  if type_(e) == 'table' then
    local m = rawget_(e, 'err')
    if type_(m) == 'string' or type_(m) == 'number' then
      return tostring_(m)
    end
    return 'ERR unknown error'
  end
  return 'ERR ' .. tostring_(e)
end

return errhandler, fenv, load_library
