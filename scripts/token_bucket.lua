-- token_bucket.lua: token-bucket(C, L per W) (seed 003, corrected).
--
-- Corrected from seed 003 (see token_bucket_published.lua): the article keeps tokens and time in
-- two keys, takes the client's time in whole seconds, stores that time even when it is older than
-- the stored one (a lagging client rewinds the bucket and is refilled twice), uses floating-point
-- tokens and a fixed 60 s TTL (a bucket that needs longer to refill is forgotten full). Here:
-- one key holds both; the time is the server's, in µs; the stored time never goes back; tokens
-- are exact integers in units of 1/U permit (U = W/g µs, refill R = L/g units per µs, g =
-- gcd(L, W in µs)), so refill is exact and nothing rounds toward admission; nothing is written on
-- a denial (refill is linear up to the cap, so the state can be rebuilt later); the key expires
-- once the bucket would be full again, after which a missing key means a full bucket.
--
-- Structure: one string of 16 bytes, the two integers of the state (tokens, then ts) as
-- little-endian IEEE doubles (struct.pack('<dd'); both stay below 2^53, so they are exact), read
-- with GET and written with SET: an admission is TIME, GET and SET, a denial TIME and GET. This is
-- the cheapest exact structure: a hash {t, ts} (the earlier version) needs HMGET, HSET and a
-- separate PEXPIREAT, one command more per admission; decimal text costs a string.format to write
-- and a search and two substrings to read (about a tenth of a call, by instruction count); and a
-- single number (a GCRA "theoretical arrival time" in units of 1/R µs) would pass 2^53, the last
-- integer a Lua number holds exactly, for any R above 4.
--
-- Clock: Redis TIME in µs (ARGV[5], when given, replaces it, for tests only). Skew between
-- clients has no effect. A server clock that steps back refills nothing until it passes the
-- stored time again.
--
-- Expiry: a bucket that has refilled completely means the same as no key, so the key must live
-- until the bucket is full again, F = ts + ⌈(C·U − tokens)/R⌉ µs, which is at most ts + Tfull,
-- Tfull = ⌈C·U/R⌉ (the time an empty bucket takes to refill). Setting an expiry costs as much as a
-- command of its own (SET's expiry replaces the key's entry in the expiry table), so the expiry is
-- set once per quantum Q of ts (Q = ARGV[4], a quarter of Tfull, at least 1 ms), to
-- X = (⌊ts/Q⌋ + 1)·Q + Tfull > ts + Tfull >= F, and every other write of the same quantum keeps it
-- (SET … KEEPTTL): the first write of a quantum, the only one that sets X, comes from a state of
-- an earlier quantum (or none), and every write of the quantum stores a ts in it, so the key's
-- expiry is always the X of the quantum of the ts it holds. A key then lives at most Q + Tfull
-- (5/4 of Tfull) after its last admission, instead of Tfull, and an admission sets the expiry
-- about once per Q instead of every time. X is an absolute time taken from the same TIME as the
-- decision: PXAT ⌈X/1000⌉. A relative PX would count from Redis's own clock reading, and since
-- Redis 7.2 that is a snapshot taken when the script started, before its TIME call (a few µs, more
-- if the server is preempted; the ms truncation adds up to 1 ms): the key could then vanish before
-- F and a request in the gap would find a full bucket a fraction of a permit early. Redis removes
-- a key once its ms clock is strictly past the expiry, so the key lives until ⌈X/1000⌉ + 1 ms > F,
-- on every version (PXAT needs Redis >= 6.2, KEEPTTL 6.0). With a fixed time (tests) the expiry is
-- relative and set on every write, ⌈(F − t)/1000⌉ ms plus one minute, so that a test whose fixed
-- times run ahead of the real clock never loses a key to a stall of the real one.
--
-- Cost: the script does what the decision needs and no more, since each step is a measurable
-- share of a call (bench/BenchmarkAlgorithms compares it with a public token bucket): numbers are
-- read by arithmetic on the strings (tonumber parses its argument twice), arguments arrive
-- precomputed, the state is packed rather than formatted, and the reply is one string made of
-- strings the script already has (TIME's two fields, the state it read or wrote), which Redis
-- sends for a fraction of what a table costs; the Go decoder (algorithms/token_bucket.go) refills
-- that state to the decision time and derives the remaining permits and the retry-after from it.
--
-- KEYS[1]  string: struct.pack('<dd', tokens, ts): tokens in units of 1/U permit, and the time
--          in µs they were counted at
-- ARGV[1]  n·U, units the request takes (n >= 1 permits)
-- ARGV[2]  R, units refilled per µs
-- ARGV[3]  C·U, capacity in units (< 2^53)
-- ARGV[4]  Q, the expiry quantum in µs (>= 1000)
-- ARGV[5]  optional, tests only: fixed time in µs since the Unix epoch, used instead of TIME
-- Reply:   the string "<allowed 0|1> <s> <µs> <state>": the time the decision used as TIME gives
--          it, seconds and microseconds, then the bucket after the decision as stored, 16 bytes
--          (the state written when allowed; the one stored, not refilled, when denied), or nothing
--          when denied without a stored state (a full bucket).
-- Memory:  O(1) per subject.
local now, sec, usec
if ARGV[5] then
  now = ARGV[5] + 0
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
local tokens, ts, old = cap, now, nil
if st then
  tokens, ts = struct.unpack('<dd', st)
  old = ts
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
  return '0 ' .. sec .. ' ' .. usec .. ' ' .. (st or '')
end

tokens = tokens - need
local v = struct.pack('<dd', tokens, ts)
if ARGV[5] then
  -- Full again at ts + ⌈(cap − tokens)/R⌉ µs (ts, not now: after a clock step back ts is later).
  local full = ts + math.ceil((cap - tokens) / rate)
  redis.call('SET', KEYS[1], v, 'PX', string.format('%d', math.ceil((full - now) / 1000) + 60000))
else
  -- The quantum's start kQ, as ts − ts mod Q (Lua's % is floored, and costs no call).
  local q = ARGV[4] + 0
  local kq = ts - ts % q
  if old and old - old % q == kq then
    redis.call('SET', KEYS[1], v, 'KEEPTTL')
  else
    redis.call('SET', KEYS[1], v, 'PXAT', string.format('%d', math.ceil((kq + q + math.ceil(cap / rate)) / 1000)))
  end
end
return '1 ' .. sec .. ' ' .. usec .. ' ' .. v
