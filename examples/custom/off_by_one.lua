-- off_by_one.lua: a sliding log with a PLANTED FLAW, written for limitbench's examples/custom.
-- It promises sliding-window(limit, window) but its check is `count <= limit` where it should be
-- `count < limit`: with `limit` admissions already in the window it admits one more, so every
-- busy window holds limit + 1. limitbench must flag it with a definite violation.
--
-- Clock: Redis TIME (µs), read inside the script, so client clock skew cannot affect it.
--
-- KEYS[1]  sorted set of admissions, scored by µs of Redis TIME   e.g. log:{subject}
-- ARGV[1]  limit: permits per window
-- ARGV[2]  window in ms
-- ARGV[3]  a unique member for this request (a UUID)
--
-- Reply: {allowed 1|0, remaining, decision time in µs of Redis TIME}

local limit = tonumber(ARGV[1])
local window_ms = tonumber(ARGV[2])
local window_us = window_ms * 1000

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- The window is (now − window, now]: drop everything at or before now − window.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window_us)
local count = redis.call('ZCARD', KEYS[1])

if count <= limit then -- THE FLAW: should be count < limit
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window_ms)
  return {1, math.max(0, limit - count - 1), now}
end
return {0, 0, now}
