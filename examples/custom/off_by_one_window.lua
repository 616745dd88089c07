-- off_by_one_window.lua: a fixed window with a PLANTED FLAW, written for limitbench's
-- examples/custom (off_by_one_window.yaml). It promises fixed-window(limit, window) but refuses a
-- request only when the window already holds MORE than the limit: `count > limit` where it
-- should be `count + cost > limit`. With `limit` permits already in the window it admits one
-- request more, so every busy window holds limit + 1 (limit + cost): one permit over, a score of
-- 21/20 = 1.05 at limit 20, which `limitbench hunt` must find and shrink to the 21 requests of
-- one window.
--
-- Clock: Redis TIME (µs), read inside the script; windows are aligned on the Unix epoch
-- ([k·window, (k+1)·window)), so client clock skew cannot affect it.
--
-- KEYS[1]  a hash {w: the window number, n: its count}      e.g. rl:{subject}
-- ARGV[1]  limit: permits per window
-- ARGV[2]  window in ms
-- ARGV[3]  cost: permits asked for
--
-- Reply: {allowed 1|0, remaining, decision time in µs of Redis TIME}

local limit = tonumber(ARGV[1])
local window_us = tonumber(ARGV[2]) * 1000
local cost = tonumber(ARGV[3])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) -- exact: below 2^53
local w = string.format('%d', math.floor(now / window_us))

if redis.call('HGET', KEYS[1], 'w') ~= w then
  redis.call('HSET', KEYS[1], 'w', w, 'n', 0)
  redis.call('PEXPIRE', KEYS[1], math.ceil(window_us / 1000) + 1)
end
local count = tonumber(redis.call('HGET', KEYS[1], 'n'))

if count > limit then -- THE FLAW: should be count + cost > limit
  return {0, 0, now}
end
redis.call('HINCRBY', KEYS[1], 'n', cost)
return {1, math.max(0, limit - count - cost), now}
