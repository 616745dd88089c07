-- token_bucket.lua: a token bucket with exact integer arithmetic, written for limitbench's
-- examples/custom. It holds token-bucket(capacity, limit per window): over any interval [t1, t2]
-- it admits at most capacity + limit·(t2 − t1)/window permits.
--
-- Clock: Redis TIME (µs), read inside the script, so client clock skew cannot affect it.
--
-- KEYS[1]  the bucket's level, in units of 1/window_us of a permit   e.g. rl:{subject}:tokens
-- KEYS[2]  the time of the last update, µs of Redis TIME              e.g. rl:{subject}:ts
--          (both keys carry the subject's hash tag, so they share a cluster slot)
-- ARGV[1]  capacity (permits)
-- ARGV[2]  limit: permits that refill every window
-- ARGV[3]  window in ms
-- ARGV[4]  cost: permits asked for
--
-- Reply: {allowed 1|0, remaining whole permits, decision time in µs of Redis TIME}
--
-- Why units of 1/window_us: e µs refill e·limit/window_us permits, which is e·limit units, an
-- integer; every number stays an exact integer in a Lua double as long as
-- capacity·window_us < 2^53 (capacity 1000 with a 1 h window is 3.6e12).

local capacity = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window_us = tonumber(ARGV[3]) * 1000
local cost = tonumber(ARGV[4])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local full = capacity * window_us
local units = tonumber(redis.call('GET', KEYS[1])) or full
local last = tonumber(redis.call('GET', KEYS[2])) or now

if now > last then
  local elapsed = now - last
  if elapsed >= full / limit then
    units = full -- long enough to refill completely (and no overflow below)
  else
    units = math.min(full, units + elapsed * limit)
  end
  last = now
end

local need = cost * window_us
local allowed = 0
if units >= need then
  units = units - need
  allowed = 1
end

-- Keep the state until the bucket would be full again, then let it expire (a missing bucket is
-- a full one). Round the TTL up so state never expires early.
local ttl_ms = math.ceil((full - units) / limit / 1000) + 1
redis.call('SET', KEYS[1], string.format('%d', units), 'PX', ttl_ms)
redis.call('SET', KEYS[2], string.format('%d', last), 'PX', ttl_ms)

return {allowed, math.floor(units / window_us), now}
