-- fixed_window.lua: fixed-window(L, W) aligned on Unix time (seed 001, corrected).
--
-- Corrected from seed 001 (see fixed_window_published.lua): the window is read from the server's
-- clock (Redis TIME), not the client's minute-of-hour, so clients with skewed clocks all count in
-- the same window; the expiry is set once, when a window's first permit is admitted, to the end of
-- the window, instead of being pushed back by every admission; the check and the count are one
-- atomic step and a request is admitted only if its whole cost fits; and W is any whole number of
-- milliseconds, not a minute.
--
-- Design choice: every key must be passed in KEYS (Redis Cluster), and the window index comes from
-- the server's clock inside the script, so it cannot be part of a key name. One hash per subject
-- has one field per window index holding that window's count: "one counter per window index".
-- The script HINCRBYs the current window's field first; when the count passes L the request is
-- denied. A denied request of cost n > 1 takes its increment back (HINCRBY −n), since the window
-- may still have room for a smaller one. A denied request of cost 1 leaves it: it found the window
-- full (count = L), and a full window denies everything until it ends, so the decisions are those
-- of a count that stopped at L (the field then counts the admitted permits plus those denials) and
-- a denial costs one HINCRBY, like an admission. Only the first admission of a window (HINCRBY
-- answered n) does more: on a hash that has other fields (HLEN > 1) it deletes those of earlier
-- windows, so the hash keeps one field, and it sets the expiry to the window's end. The common
-- path is TIME + HINCRBY. State is O(1).
--
-- Clock: Redis TIME in µs (ARGV[1] > 0 replaces it, for tests only). Skew between clients has no
-- effect; a server clock that steps back into an earlier window (whose field is gone) is answered
-- with a denial until the later window is reached again, never an admission that could overfill
-- that window.
--
-- Expiry: once its window has ended, at E = (floor(t/W) + 1)·W, the hash means the same as no key,
-- so the key is kept until E, as an absolute time: PEXPIREAT E/1000 (E is whole ms). A relative
-- PEXPIRE would count from Redis's own clock reading, and since Redis 7.2 that is a snapshot taken
-- when the script started, before its TIME call: if the server is preempted across a ms boundary
-- in between, the key would vanish before its window ends and the window would admit L more.
-- Redis removes a key once its ms clock is strictly past the expiry, so the key lives until
-- E + 1 ms, on every version. With a fixed time (tests) the expiry is relative, the time left in
-- the window plus one minute, so that a test whose fixed times run ahead of the real clock never
-- loses a key to a stall of the real one.
--
-- KEYS[1]  hash {<window index floor(t/W)> = permits admitted in that window (plus the cost-1
--          denials once it was full)}
-- ARGV[1]  fixed time in µs since the Unix epoch, or 0 to read TIME
-- ARGV[2]  L, permits per window
-- ARGV[3]  W, window in µs (a multiple of 1000, at least 1 ms)
-- ARGV[4]  cost, permits asked for (>= 1)
-- Reply:   {allowed 0|1, remaining permits in the window, retry-after µs (0 when allowed, or when
--          cost > L: never), time µs used}
local now = tonumber(ARGV[1])
local fixed = now ~= nil and now > 0
if not fixed then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local key = KEYS[1]

-- floor(now/W) is exact for integers below 2^53 (now is about 2^51); the check guards it anyway.
local idx = math.floor(now / window)
if idx * window > now then idx = idx - 1 end
local left = (idx + 1) * window - now -- µs until the window ends, >= 1
-- %d writes integers exactly (and is cheaper than a float format); idx < 2^53.
local field = string.format('%d', idx)

local n = redis.call('HINCRBY', key, field, cost)
if n == cost then
  -- The window's first permits: drop earlier windows, look for a later one. A new hash (the
  -- usual case: the key expires with its window) has only this field.
  if redis.call('HLEN', key) > 1 then
    local later = nil
    for _, f in ipairs(redis.call('HKEYS', key)) do
      local fi = tonumber(f)
      if fi == nil or fi < idx then
        redis.call('HDEL', key, f)
      elseif fi > idx and (later == nil or fi > later) then
        later = fi
      end
    end
    if later ~= nil then
      redis.call('HDEL', key, field)
      return {0, 0, later * window - now, now}
    end
  end
  if cost > limit then
    redis.call('HDEL', key, field)
    return {0, limit, 0, now}
  end
  if fixed then
    redis.call('PEXPIRE', key, string.format('%d', math.ceil(left / 1000) + 60000))
  else
    redis.call('PEXPIREAT', key, string.format('%d', (idx + 1) * window / 1000))
  end
elseif n > limit then
  -- Denied. A denial of one permit means the window was full (count = L before it), and every
  -- later request of this window is denied whatever the count, so the increment is left in
  -- place (one HINCRBY instead of two); a larger cost may not have been denied by a full window,
  -- so it is taken back.
  local retry = left
  if cost > 1 then
    redis.call('HINCRBY', key, field, -cost)
    if cost > limit then retry = 0 end
  end
  return {0, math.max(0, limit - n + cost), retry, now}
end
return {1, limit - n, 0, now}
