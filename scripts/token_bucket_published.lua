-- token_bucket_published.lua: seed 003 as written (Jedis token bucket in Lua). Reproduces the
-- article's behaviour, flaws included.
--
-- The article keeps the token count and the time of the last visit in two keys, takes the rate
-- (tokens per second), the capacity, the caller's time in whole seconds and the tokens requested,
-- refills (now − last)·rate capped at the capacity, grants when the request fits, and then writes
-- both keys with a fixed 60 s TTL, on denials too.
--
-- Flaws kept on purpose: the time is the client's, truncated to whole seconds (a burst at the end
-- of one second and the start of the next is refilled a whole second's worth); the caller's time
-- is stored even when older than the stored one, so a client with a lagging clock rewinds the
-- bucket and the next up-to-date client is refilled again for the same interval; tokens are
-- floating-point; the TTL is 60 s whatever the refill time (a bucket forgotten after 60 s comes
-- back full).
--
-- Clock: the client's, ARGV[3], whole seconds since the Unix epoch. Skew: see above; a client
-- ahead of the others refills early, one behind rewinds the stored time.
--
-- KEYS[1]  tokens (string, a number, may be fractional)
-- KEYS[2]  time of the last visit (string, whole seconds)
-- ARGV[1]  rate, tokens per second (may be fractional)
-- ARGV[2]  capacity
-- ARGV[3]  client time in whole seconds
-- ARGV[4]  tokens requested
-- Reply:   {allowed 0|1, whole tokens left, retry-after µs until the request would fit at this
--          rate (0 when allowed, or when it can never fit), client time in µs (seconds × 10^6)}
local token_key = KEYS[1]
local time_key = KEYS[2]
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local now_time = tonumber(ARGV[3])
local requestNum = tonumber(ARGV[4])

local last_tokens = tonumber(redis.call('get', token_key))
if last_tokens == nil then
  last_tokens = capacity
end
local last_time = tonumber(redis.call('get', time_key))
if last_time == nil then
  last_time = 0
end
local time_del = math.max(0, (now_time - last_time))
local current_tokens = math.min(capacity, (last_tokens + time_del * rate))
local acquire = 0
if (requestNum <= current_tokens) then
  acquire = 1
  current_tokens = (current_tokens - requestNum)
end

local ttl = 60
redis.call('setex', token_key, ttl, current_tokens)
redis.call('setex', time_key, ttl, now_time)

local retry = 0
if acquire == 0 and requestNum <= capacity then
  retry = math.ceil((requestNum - current_tokens) / rate * 1000000)
end
return {acquire, math.floor(current_tokens), retry, now_time * 1000000}
