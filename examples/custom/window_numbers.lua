-- window_numbers.lua: the sliding-counter approximation with window-numbered keys, as fixed and
-- sliding-counter libraries write it: the caller names this window's counter and the previous
-- one's by the window number floor(now / window). Written for limitbench's examples/custom
-- (window_numbers.yaml), where the keys are "rl:{{tag}}:{{now_ms / window_ms}}" and
-- "rl:{{tag}}:{{now_ms / window_ms - 1}}".
--
-- It admits a request when prev·(window − elapsed)/window + cur + cost <= limit, where cur and
-- prev are this and the previous window's counts and elapsed is the time into this window: the
-- previous window's count weighed by how much of it the sliding window still covers. Since the
-- estimate is never below cur, this window never holds more than limit: it holds
-- fixed-window(limit, window) exactly, and sliding-window(limit, window) only approximately.
--
-- Clock: the client's, in whole ms (ARGV[3]); the windows are the client's. Clock skew between
-- clients would shift their windows apart.
--
-- KEYS[1]  this window's counter          e.g. rl:{subject}:1700000000
-- KEYS[2]  the previous window's counter  e.g. rl:{subject}:1699999999
-- ARGV[1]  limit
-- ARGV[2]  window in ms
-- ARGV[3]  now, ms since the Unix epoch (the client's clock)
-- ARGV[4]  cost
--
-- Reply: {allowed 1|0, this window's count}

local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])

local elapsed = now % window
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local prev = tonumber(redis.call('GET', KEYS[2]) or '0')
if prev * (window - elapsed) / window + cur + cost > limit then
  return {0, cur}
end
cur = redis.call('INCRBY', KEYS[1], cost)
if cur == cost then
  -- Kept through the next window, which reads it as its previous one.
  redis.call('PEXPIRE', KEYS[1], 2 * window)
end
return {1, cur}
