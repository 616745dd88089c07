-- first_hit.lua: the most common rate limiter there is: INCR a counter, and set its expiry on the
-- first request, so that each window starts at the first request after the previous one expired
-- and lasts `window`. Written for limitbench's examples/custom (first_hit.yaml).
--
-- It holds first-hit-window(limit, window): every window that a first request opens holds at
-- most `limit` permits. It does not hold the epoch-aligned fixed-window(limit, window): a window
-- opened by a lone request late in one second admits a burst early in the next second, and the
-- window opened right after it ends admits another, in the same aligned second.
--
-- Clock: Redis's. The window's end is the key's expiry, which Redis keeps in whole
-- milliseconds: the key lives through its expiry millisecond, so the contract states
-- granularity: 1ms.
--
-- KEYS[1]  the counter                    e.g. hits:{subject}
-- ARGV[1]  window in ms
-- ARGV[2]  cost
--
-- Reply: {count after this request (denied requests are counted too), decision time in µs of
-- Redis TIME}

local cost = tonumber(ARGV[2])
local n = redis.call('INCRBY', KEYS[1], cost)
if n == cost then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
local t = redis.call('TIME')
return {n, tonumber(t[1]) * 1000000 + tonumber(t[2])}
