-- token_bucket.lua: token-bucket(C, L per W) (seed 003, corrected).
--
-- Corrected from seed 003 (see token_bucket_published.lua): the article keeps tokens and time in
-- two keys, takes the client's time in whole seconds, stores that time even when it is older than
-- the stored one (a lagging client rewinds the bucket and is refilled twice), uses floating-point
-- tokens and a fixed 60 s TTL (a bucket that needs longer to refill is forgotten full). Here:
-- one hash holds both; the time is the server's, in µs; the stored time never goes back; tokens
-- are exact integers in units of 1/U permit (U = W/g µs, refill R = L/g units per µs, g =
-- gcd(L, W in µs)), so refill is exact and nothing rounds toward admission; nothing is written on
-- a denial (refill is linear up to the cap, so the state can be rebuilt later); the TTL is the
-- time the bucket needs to refill completely, after which a missing key means a full bucket.
--
-- Clock: Redis TIME in µs (ARGV[1] > 0 replaces it, for tests only). Skew between clients has no
-- effect. A server clock that steps back refills nothing until it passes the stored time again.
--
-- Expiry: a bucket that has refilled completely means the same as no key, so the key is kept until
-- the bucket is full again, F = ts + ⌈(C·U − tokens)/R⌉ µs, as an absolute time taken from the same
-- TIME as the decision: PEXPIREAT ⌈F/1000⌉. A relative PEXPIRE would count from Redis's own clock
-- reading, and since Redis 7.2 that is a snapshot taken when the script started, before its TIME
-- call (a few µs, more if the server is preempted; the ms truncation adds up to 1 ms): the key
-- could then vanish before F and a request in the gap would find a full bucket a fraction of a
-- permit early. Redis removes a key once its ms clock is strictly past the expiry, so the key
-- lives until ⌈F/1000⌉ + 1 ms > F, on every version. With a fixed time (tests) the expiry is
-- relative, ⌈(F − t)/1000⌉ ms plus one minute, so that a test whose fixed times run ahead of the
-- real clock never loses a key to a stall of the real one.
--
-- KEYS[1]  hash {t = tokens in units of 1/U permit, ts = time in µs they were counted at}
-- ARGV[1]  fixed time in µs since the Unix epoch, or 0 to read TIME
-- ARGV[2]  U, units per permit
-- ARGV[3]  R, units refilled per µs
-- ARGV[4]  C·U, capacity in units (< 2^53)
-- ARGV[5]  cost, permits asked for (>= 1)
-- Reply:   {allowed 0|1, whole permits left, retry-after µs until cost permits are there (0 when
--          allowed, or when cost > C: never), time µs used}
-- Memory:  O(1) per subject.
local now = tonumber(ARGV[1])
local fixed = now ~= nil and now > 0
if not fixed then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local unit = tonumber(ARGV[2])
local rate = tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
local need = tonumber(ARGV[5]) * unit

local st = redis.call('HMGET', KEYS[1], 't', 'ts')
local tokens = tonumber(st[1])
local ts = tonumber(st[2])
if tokens == nil or ts == nil then
  tokens, ts = cap, now
elseif now > ts then
  -- Refill min(cap, tokens + R·elapsed) without forming a product that could pass 2^53.
  local deficit = cap - tokens
  local elapsed = now - ts
  if elapsed >= math.ceil(deficit / rate) then
    tokens = cap
  else
    tokens = tokens + elapsed * rate
  end
  ts = now
end

if tokens < need then
  local retry = 0
  if need <= cap then retry = math.ceil((need - tokens) / rate) end
  return {0, math.floor(tokens / unit), retry, now}
end

tokens = tokens - need
-- %d writes integers exactly and costs less than a float format (or a number argument, which
-- Redis writes with %.17g).
redis.call('HSET', KEYS[1], 't', string.format('%d', tokens), 'ts', string.format('%d', ts))
-- Full again at ts + ⌈(cap − tokens)/R⌉ µs (ts, not now: after a clock step back ts is later).
local full = ts + math.ceil((cap - tokens) / rate)
if fixed then
  redis.call('PEXPIRE', KEYS[1], string.format('%d', math.ceil((full - now) / 1000) + 60000))
else
  redis.call('PEXPIREAT', KEYS[1], string.format('%d', math.ceil(full / 1000)))
end
return {1, math.floor(tokens / unit), 0, now}
