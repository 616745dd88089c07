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
if now == nil or now <= 0 then
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
redis.call('HSET', KEYS[1], 't', string.format('%.0f', tokens), 'ts', string.format('%.0f', ts))
-- Full again after (cap − tokens)/R µs; keep the key that long (rounded up to ms).
redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil(math.ceil((cap - tokens) / rate) / 1000)))
return {1, math.floor(tokens / unit), 0, now}
