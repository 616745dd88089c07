-- redisson.lua: Redisson's RRateLimiter.tryAcquire(permits), as seed 000 shows it, for both rate
-- types (OVERALL: one pair of keys per limiter; PER_CLIENT: one pair per client id).
--
-- Published design, reproduced with its flaw (see redisson.go). A config hash holds rate, interval
-- (ms) and type, each set with HSETNX, so the first caller's configuration wins (Redisson's
-- trySetRate; here done on the first call, since a limiter exists per subject). A counter holds the
-- permits still available; a sorted set holds one member per grant, packed as (random id, permits)
-- and scored by the caller's time in ms. Each call first returns to the counter the permits of
-- grants scored at or before now − interval, then admits when the counter covers the request.
--
-- Clock: the CALLER's time in ms (ARGV[5]), skew included. This is the flaw: whichever client calls
-- decides which grants have expired. A client whose clock runs ahead by d returns permits d early;
-- a client whose clock runs behind by d records grants that expire d early for everyone else. Both
-- over-admit, by up to the whole rate per window for a skew of one interval. Without skew, and
-- with non-decreasing call times, the counter is exact: every half-open interval
-- (t − interval, t] of caller time holds at most rate permits (ms granularity).
--
-- The grant's member is packed as the article shows it, struct.pack('fI', id, permits): the random
-- signed 64-bit id (Redisson's ThreadLocalRandom.nextLong(), sent as decimal text) becomes a 4-byte
-- float, which keeps its sign, its exponent and 23 bits of mantissa. Two ids with the same float
-- and the same permits give the same member, so the second ZADD only moves the first grant's score:
-- the counter was decremented for both, but when the member leaves the window only one grant's
-- permits come back, and the others are lost for good (the limiter then admits less, never more).
-- For two live grants this happens with probability about 2^-26 · 4/3 (1 in 50 million), so a
-- window whose rate grants are all used loses about rate² · 10^-8 permits: one every 10 000 windows
-- at a rate of 100, one per window at a rate of 10 000, and the losses add up until the limiter is
-- restarted. The published behaviour is kept on purpose, leak included: it is what the article's
-- users run, it can only lower admissions (the verifier, which looks for over-admission, cannot be
-- misled by it), and it shows in the accuracy report as lost efficiency. Later Redisson versions
-- pack 'Bc0I' with 8 random bytes (see redisson/redisson#5906), so that a collision needs all 64
-- bits to match.
--
-- Differences from the article, none of which changes a decision: Redisson always passes five keys
-- and picks the pair by the stored type; here the Go side passes the pair (the stored type is
-- still checked). A request for more permits than the rate is denied with retry-after 0 (never)
-- instead of raising Redisson's assertion error. The reply is our integer array instead of nil /
-- ms to wait. Like the article's version, nothing ever expires.
--
-- KEYS[1]  hash: rate, interval (ms), type (0 OVERALL, 1 PER_CLIENT)
-- KEYS[2]  string: permits available (the '{name}:value' key, per client for PER_CLIENT)
-- KEYS[3]  sorted set: grants, member struct.pack('fI', id, permits), score caller ms
-- ARGV[1]  rate, permits per interval (used only if the hash has none)
-- ARGV[2]  interval in ms (likewise)
-- ARGV[3]  type, '0' or '1'
-- ARGV[4]  permits asked for (>= 1)
-- ARGV[5]  the caller's time in ms since the Unix epoch
-- ARGV[6]  a random signed 64-bit integer in decimal, one per request (the grant's id)
-- Reply:   {allowed 0|1, permits available after the decision, retry-after µs (time until the
--          oldest live grant expires; 0 when allowed or when permits > rate), caller time µs}
-- Memory:  O(rate) per subject (per client for PER_CLIENT); the keys have no TTL.
local cfg = redis.call('HMGET', KEYS[1], 'rate', 'interval', 'type')
if not cfg[1] or not cfg[2] or not cfg[3] then
  redis.call('HSETNX', KEYS[1], 'rate', ARGV[1])
  redis.call('HSETNX', KEYS[1], 'interval', ARGV[2])
  redis.call('HSETNX', KEYS[1], 'type', ARGV[3])
  cfg = redis.call('HMGET', KEYS[1], 'rate', 'interval', 'type')
end
if cfg[3] ~= ARGV[3] then
  return redis.error_reply('ERR redisson: ' .. KEYS[1] .. ' has rate type ' .. tostring(cfg[3]) ..
    ', this limiter uses ' .. ARGV[3])
end
local rate = tonumber(cfg[1])
local interval = tonumber(cfg[2])
local permits = tonumber(ARGV[4])
local now = tonumber(ARGV[5])
local nowus = now * 1000
local valueKey, permitsKey = KEYS[2], KEYS[3]

if permits > rate then
  local v = tonumber(redis.call('GET', valueKey) or rate)
  return {0, v, 0, nowus}
end

local value = redis.call('GET', valueKey)
if value == false then
  -- First grant of this limiter: the counter starts full.
  redis.call('SET', valueKey, rate)
  redis.call('ZADD', permitsKey, now, struct.pack('fI', ARGV[6], permits))
  redis.call('DECRBY', valueKey, permits)
  return {1, rate - permits, 0, nowus}
end
value = tonumber(value)

-- Return the permits of grants scored at or before now − interval (the caller's now).
local expired = redis.call('ZRANGEBYSCORE', permitsKey, 0, now - interval)
local released = 0
for _, v in ipairs(expired) do
  local _, p = struct.unpack('fI', v)
  released = released + p
end
if released > 0 then
  redis.call('ZREMRANGEBYSCORE', permitsKey, 0, now - interval)
  value = value + released
  redis.call('SET', valueKey, value)
end

if value < permits then
  -- Redisson answers the time until the oldest live grant expires.
  local nearest = redis.call('ZRANGEBYSCORE', permitsKey, '(' .. (now - interval), '+inf',
    'WITHSCORES', 'LIMIT', 0, 1)
  local wait = interval
  if nearest[2] then wait = tonumber(nearest[2]) - (now - interval) end
  return {0, value, wait * 1000, nowus}
end

redis.call('ZADD', permitsKey, now, struct.pack('fI', ARGV[6], permits))
redis.call('DECRBY', valueKey, permits)
return {1, value - permits, 0, nowus}
