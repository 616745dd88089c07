-- token_bucket.lua: token-bucket(C, L per W) (seed 003, corrected).
--
-- Corrected from seed 003 (see token_bucket_published.lua): the article keeps tokens and time in
-- two keys, takes the client's time in whole seconds, stores that time even when it is older than
-- the stored one (a lagging client rewinds the bucket and is refilled twice), uses floating-point
-- tokens and a fixed 60 s TTL (a bucket that needs longer to refill is forgotten full). Here:
-- one key holds both; the time is the server's, in µs; the stored time never goes back; tokens
-- are exact integers in units of 1/U permit (U = W/g µs, refill R = L/g units per µs, g =
-- gcd(L, W in µs)), so refill is exact and nothing rounds toward admission; nothing is written on
-- a denial (refill is linear up to the cap, so the state can be rebuilt later); the TTL is the
-- time the bucket needs to refill completely, after which a missing key means a full bucket.
--
-- Structure: one string "<tokens> <ts>", the two integers of the state in decimal, read with GET
-- and written with SET … PXAT, which sets the expiry in the same command: an admission is TIME,
-- GET and SET, a denial TIME and GET. This is the cheapest exact structure: a hash {t, ts} (the
-- earlier version) needs HMGET, HSET and a separate PEXPIREAT, one command more per admission,
-- and a single number (a GCRA "theoretical arrival time" in units of 1/R µs) would pass 2^53, the
-- last integer a Lua number holds exactly, for any R above 5.
--
-- Clock: Redis TIME in µs (ARGV[4], when given, replaces it, for tests only). Skew between
-- clients has no effect. A server clock that steps back refills nothing until it passes the
-- stored time again.
--
-- Expiry: a bucket that has refilled completely means the same as no key, so the key is kept until
-- the bucket is full again, F = ts + ⌈(C·U − tokens)/R⌉ µs, as an absolute time taken from the same
-- TIME as the decision: PEXPIREAT ⌈F/1000⌉. A relative PEXPIRE would count from Redis's own clock
-- reading, and since Redis 7.2 that is a snapshot taken when the script started, before its TIME
-- call (a few µs, more if the server is preempted; the ms truncation adds up to 1 ms): the key
-- could then vanish before F and a request in the gap would find a full bucket a fraction of a
-- permit early. Redis removes a key once its ms clock is strictly past the expiry, so the key
-- lives until ⌈F/1000⌉ + 1 ms > F, on every version; and a PEXPIREAT that is not in the future
-- deletes the key at once, which with ⌈F/1000⌉ only happens when F itself has passed. With a fixed
-- time (tests) the expiry is relative, ⌈(F − t)/1000⌉ ms plus one minute, so that a test whose
-- fixed times run ahead of the real clock never loses a key to a stall of the real one.
--
-- Cost: the script does what the decision needs and no more, since each step is a measurable
-- share of a call (bench/BenchmarkAlgorithms): TIME, GET, and on an admission SET … PXAT. Numbers
-- are read by arithmetic on the strings (tonumber parses its argument twice), arguments arrive
-- precomputed, and the reply is one string made of strings the script already has (TIME's two
-- fields, the state it read or wrote), which Redis sends for a fraction of what a table costs; the
-- Go decoder (algorithms/token_bucket.go) refills that state to the decision time and derives the
-- remaining permits and the retry-after from it.
--
-- KEYS[1]  string "<tokens> <ts>": tokens in units of 1/U permit, and the time in µs they were
--          counted at
-- ARGV[1]  n·U, units the request takes (n >= 1 permits)
-- ARGV[2]  R, units refilled per µs
-- ARGV[3]  C·U, capacity in units (< 2^53)
-- ARGV[4]  optional, tests only: fixed time in µs since the Unix epoch, used instead of TIME
-- Reply:   the string "<allowed 0|1> <tokens> <ts> <s> <µs>": the bucket after the decision (the
--          state written when allowed; the one stored, not refilled, when denied, or C·U at 0 for
--          none), and the time the decision used as TIME gives it, seconds and microseconds.
-- Memory:  O(1) per subject.
local now, sec, usec
if ARGV[4] then
  now = ARGV[4] + 0
  sec, usec = string.format('%d', math.floor(now / 1000000)), string.format('%d', now % 1000000)
else
  local t = redis.call('TIME')
  sec, usec = t[1], t[2]
  now = sec * 1000000 + usec
end
local need = ARGV[1] + 0
local rate = ARGV[2] + 0
local cap = ARGV[3] + 0

local st = redis.call('GET', KEYS[1])
local tokens, ts = cap, now
if st then
  local sp = string.find(st, ' ', 1, true)
  tokens, ts = string.sub(st, 1, sp - 1) + 0, string.sub(st, sp + 1) + 0
  if now > ts then
    -- Refill min(cap, tokens + R·elapsed). Past 2^53 the product is inexact but still at least
    -- 2^53 > cap − tokens, so the comparison stays right.
    local add = (now - ts) * rate
    if add >= cap - tokens then
      tokens = cap
    else
      tokens = tokens + add
    end
    ts = now
  end
end

if tokens < need then
  if st then
    return '0 ' .. st .. ' ' .. sec .. ' ' .. usec
  end
  return '0 ' .. ARGV[3] .. ' 0 ' .. sec .. ' ' .. usec
end

tokens = tokens - need
-- %d writes integers exactly and costs less than a float format (or a number argument, which
-- Redis writes with %.17g).
local v = string.format('%d %d', tokens, ts)
-- Full again at ts + ⌈(cap − tokens)/R⌉ µs (ts, not now: after a clock step back ts is later).
local full = ts + math.ceil((cap - tokens) / rate)
if ARGV[4] then
  redis.call('SET', KEYS[1], v, 'PX', string.format('%d', math.ceil((full - now) / 1000) + 60000))
else
  redis.call('SET', KEYS[1], v, 'PXAT', string.format('%d', math.ceil(full / 1000)))
end
return '1 ' .. v .. ' ' .. sec .. ' ' .. usec
