-- fixed_window.lua: fixed-window(L, W) aligned on Unix time (seed 001, corrected).
--
-- Corrected from seed 001 (see fixed_window_published.lua): the window is read from the server's
-- clock (Redis TIME), not the client's minute-of-hour, so clients with skewed clocks all count in
-- the same window; the expiry is set once, when a window's first permit is admitted, to the time
-- left in the window, instead of being pushed back by every admission; denied requests are not
-- counted, so the counter never exceeds L; and W is any whole number of milliseconds, not a minute.
--
-- Design choice: every key must be passed in KEYS (Redis Cluster), and the window index comes from
-- the server's clock inside the script, so it cannot be part of a key name. One hash per subject
-- holds the index of the current window and its count; a request in a later window starts the
-- count again. The check and the increment run in one script, so they are atomic: a request is
-- admitted only when count + cost <= L. State is O(1) per subject.
--
-- Clock: Redis TIME in µs (ARGV[1] > 0 replaces it, for tests only). Skew between clients has no
-- effect; a server clock that steps back into an earlier window is answered with a denial until
-- the stored window is reached again (never an admission that could overfill that window).
--
-- KEYS[1]  hash {w = window index floor(t/W), n = permits admitted in window w}
-- ARGV[1]  fixed time in µs since the Unix epoch, or 0 to read TIME
-- ARGV[2]  L, permits per window
-- ARGV[3]  W, window in µs (a multiple of 1000)
-- ARGV[4]  cost, permits asked for (>= 1)
-- Reply:   {allowed 0|1, remaining permits in the window, retry-after µs (0 when allowed, or when
--          cost > L: never), time µs used}
local now = tonumber(ARGV[1])
if now == nil or now <= 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])

-- floor(now/W) is exact for integers below 2^53 (now is about 2^51); the check guards it anyway.
local idx = math.floor(now / window)
if idx * window > now then idx = idx - 1 end
local left = (idx + 1) * window - now -- µs until the window ends, >= 1

local st = redis.call('HMGET', KEYS[1], 'w', 'n')
local w = tonumber(st[1])
local n = 0
if w ~= nil and w > idx then
  -- The clock went back into an earlier window; its count is gone. Deny until window w.
  return {0, 0, w * window - now, now}
end
if w == idx then n = tonumber(st[2]) or 0 end

if n + cost > limit then
  local retry = left
  if cost > limit then retry = 0 end
  return {0, limit - n, retry, now}
end

n = n + cost
redis.call('HSET', KEYS[1], 'w', string.format('%.0f', idx), 'n', n)
if n == cost then
  -- First admission of this window: the key lives until the window ends (rounded up to ms).
  redis.call('PEXPIRE', KEYS[1], math.ceil(left / 1000))
end
return {1, limit - n, 0, now}
