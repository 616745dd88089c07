-- float_seconds.lua: a sliding log scored by the caller's time in float seconds, as libraries
-- that pass Python's time.time() write it. Written for limitbench's examples/custom
-- (float_seconds.yaml), which calls it with ARGV[3] = "{{now_s_float}}" (seconds with six
-- decimals) and, to show what whole seconds do to it, with "{{now_s}}".
--
-- With the time in µs it holds sliding-window(limit, window): it drops the entries at or before
-- now − window and admits while the rest and the cost fit. With whole seconds every request of
-- one second gets the same score, and the entries of the previous second are all dropped at
-- once: it becomes a fixed window of one second, which admits up to twice the limit across a
-- second's boundary.
--
-- Clock: the client's (ARGV[3]).
--
-- KEYS[1]  sorted set of admissions, scored by the caller's seconds   e.g. log:{subject}
-- ARGV[1]  limit
-- ARGV[2]  window in ms
-- ARGV[3]  now, seconds since the Unix epoch, with or without decimals
-- ARGV[4]  cost
-- ARGV[5]  a unique member for this request (a UUID)
--
-- Reply: {allowed 1|0, the time it used, as tostring writes it ("1700000000.1235": 14 digits)}

local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2]) / 1000
local now = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) + cost > limit then
  return {0, tostring(now)}
end
for i = 1, cost do
  redis.call('ZADD', KEYS[1], now, ARGV[5] .. ':' .. i)
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, tostring(now)}
