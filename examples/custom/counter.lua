-- counter.lua: a fixed window that answers with its count, as many libraries' scripts do: the
-- caller, not the script, decides that a request is admitted when the count is at most the
-- limit. Written for limitbench's examples/custom (counter.yaml): allowed: {element: 1,
-- at_most: "{{limit}}"} reads the reply. It holds fixed-window(limit, window): the count of a
-- window only grows, so at most `limit` permits of each window are ever answered with a count
-- at most the limit.
--
-- Clock: Redis TIME (µs), read inside the script; windows are aligned on the Unix epoch
-- ([k·window, (k+1)·window)), so client clock skew cannot affect it.
--
-- KEYS[1]  a hash {w: the window number, n: its count}      e.g. rl:{subject}
-- ARGV[1]  window in ms
-- ARGV[2]  cost: permits asked for
--
-- Reply: {count after this request (denied requests are counted too), decision time}
--
-- The decision time is written with tostring, as scripts often do: a Lua number prints with 14
-- significant digits, so 1795534497288301 µs comes out as "1.7955344972883e+15", known only to
-- ±100 µs. limitbench reads it as that interval (time: {element: 2, unit: us}), never as a point.

local window_us = tonumber(ARGV[1]) * 1000
local cost = tonumber(ARGV[2])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) -- exact: below 2^53
local w = string.format('%d', math.floor(now / window_us))

if redis.call('HGET', KEYS[1], 'w') ~= w then
  redis.call('HSET', KEYS[1], 'w', w, 'n', 0)
  redis.call('PEXPIRE', KEYS[1], math.ceil(window_us / 1000) + 1)
end
local n = redis.call('HINCRBY', KEYS[1], 'n', cost)

return {n, tostring(now)}
