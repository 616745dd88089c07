#!lua name=limitbench_example
-- function_lib.lua: a sliding log as a Redis function library (Redis 7: FUNCTION LOAD, FCALL),
-- as libraries increasingly ship their limiters: loaded once, it survives SCRIPT FLUSH and,
-- when the server persists it, restarts. Written for limitbench's examples/custom
-- (function.yaml), which loads it with FUNCTION LOAD on every master and calls its
-- functions with FCALL.
--
-- allow holds sliding-window(limit, window). allow_lenient is the same log with a PLANTED FLAW,
-- `count <= limit` where it should be `count < limit`: every busy window admits limit + 1.
--
-- Clock: Redis TIME (µs), read inside the function.
--
-- KEYS[1]  sorted set of admissions, scored by µs of Redis TIME   e.g. log:{subject}
-- ARGV[1]  limit
-- ARGV[2]  window in ms
-- ARGV[3]  a unique member for this request (a UUID)
--
-- Reply: {allowed 1|0, decision time in µs of Redis TIME}

local function log(keys, args, lenient)
  local limit = tonumber(args[1])
  local window_ms = tonumber(args[2])
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  redis.call('ZREMRANGEBYSCORE', keys[1], '-inf', now - window_ms * 1000)
  local count = redis.call('ZCARD', keys[1])
  if count < limit or (lenient and count == limit) then
    redis.call('ZADD', keys[1], now, args[3])
    redis.call('PEXPIRE', keys[1], window_ms)
    return {1, now}
  end
  return {0, now}
end

redis.register_function('allow', function(keys, args) return log(keys, args, false) end)
redis.register_function('allow_lenient', function(keys, args) return log(keys, args, true) end)
