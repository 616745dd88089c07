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
-- soon after the bucket would be full again, after which a missing key means a full bucket.
--
-- Structure: one string of 16 bytes, the two integers of the state (tokens, then ts) as
-- little-endian IEEE doubles (struct.pack('<dd'); both stay below 2^53, so they are exact). A
-- missing key is a full bucket, so the state after an admission into it does not depend on
-- anything stored, and a call takes one of two ways. Unless the caller expects the key to be
-- there, the script writes that state with SET … NX … GET, which creates the key when there is
-- none and otherwise writes nothing and returns the stored state: an admission into a bucket
-- whose key had expired (a subject that comes back less often than its bucket refills) is then
-- TIME and one SET. When the caller expects the key (its last reply said the key is kept until a
-- time that has not come: ARGV[5] is 0), the script reads it with GET: a call into a bucket in use
-- is TIME, GET and, on an admission, one SET, and a denial TIME and GET. Either way a wrong
-- expectation costs a command, never a decision. The alternatives cost more: a GET before every
-- write is one command more for the expired bucket; SET … NX … GET on every call costs a little
-- more than a GET for a bucket in use, where half the calls may be denials; a hash {t, ts} (an
-- earlier version) needs HMGET, HSET and a separate PEXPIREAT; decimal text costs a string.format
-- to write and a search and two substrings to read; and a single number (a GCRA "theoretical
-- arrival time" in units of 1/R µs) would pass 2^53, the last integer a Lua number holds
-- exactly, for any R above 4. SET with both NX and GET needs Redis >= 7.0.
--
-- Clock: Redis TIME in µs (ARGV[6], when given, replaces it, for tests only). Skew between
-- clients has no effect. A server clock that steps back refills nothing until it passes the
-- stored time again.
--
-- Expiry: a bucket that has refilled completely means the same as no key, so the key must live
-- until the bucket is full again, F = ts + (C·U − tokens)/R µs. Setting an expiry costs as much
-- as a command of its own (SET's expiry replaces the key's entry in the expiry table, and its
-- value must be formatted), so the key lives at least until the end of the quantum Q (ARGV[4], a
-- quarter of the time an empty bucket takes to refill, a whole number of ms) that F falls in,
-- kQ + Q with kQ = Q·⌊F/Q⌋, computed in exact integers as ts − a + Q·⌊(a·R + C·U − tokens)/(Q·R)⌋,
-- a = ts mod Q, and less than 2Q after F. F never decreases from one write to the next (refill
-- and admission move it to max(F, t) + n·U/R), so a write whose F is before the end of the stored
-- state's quantum (and so in that quantum) keeps the key's expiry (SET … KEEPTTL), and only a
-- write whose F has passed it sets one: the key's expiry is always at or after the end of the
-- quantum of the F of the state it holds, and less than 2Q after that F. A key then lives less
-- than 2Q after its bucket is full again, and an admission sets the expiry about once per Q
-- instead of every time. The expiry is an absolute time taken from the same TIME as the decision
-- (PXAT, whole ms). A relative PX would count from Redis's own clock reading, and since Redis 7.2
-- that is a snapshot taken when the script started, before its TIME call (a few µs, more if the
-- server is preempted): the key could then vanish before F and a request in the gap would find a
-- full bucket a fraction of a permit early. Redis removes a key once its ms clock is strictly
-- past the expiry, so the key lives until past it, on every version. The caller sends an
-- estimate E of a good expiry for the state a missing key would get (ARGV[5], from its clock and
-- the server's last reported TIME: F + 3Q/2 for that state); the script takes it as it is when F
-- + Q <= E·1000 < F + 2Q, checked in exact integers, and otherwise formats kQ + Q itself, so that
-- a request formats no number unless the estimate missed or a bucket in use passes a quantum.
-- With a fixed time (tests) the expiry is relative and set on every write, ⌈(kQ + Q − t)/1000⌉ ms
-- plus one minute, so that a test whose fixed times run ahead of the real clock never loses a key
-- to a stall of the real one.
--
-- Cost: the script does what the decision needs and no more, since each step is a measurable
-- share of a call (bench/BenchmarkAlgorithms compares it with a public token bucket): numbers are
-- read by arithmetic on the strings (tonumber parses its argument twice), arguments arrive
-- precomputed, the state is packed rather than formatted, the arithmetic is written out where it
-- is needed rather than in local functions (Lua makes a closure of each on every call, which cost
-- a tenth of a call in BenchmarkAlgorithms), and the reply is a string the script
-- already has: the state alone for an admission at the time TIME gave (its ts is that time), which
-- Redis sends for a fraction of what a table costs; the Go decoder (algorithms/token_bucket.go)
-- refills that state to the decision time and derives the remaining permits and the retry-after
-- from it.
--
-- KEYS[1]  string: struct.pack('<dd', tokens, ts): tokens in units of 1/U permit, and the time
--          in µs they were counted at
-- ARGV[1]  n·U, units the request takes (n >= 1 permits)
-- ARGV[2]  R, units refilled per µs
-- ARGV[3]  C·U, capacity in units (< 2^53, and Q·R + C·U < 2^53)
-- ARGV[4]  Q, the expiry quantum in µs (a multiple of 1000)
-- ARGV[5]  the caller's estimate of an expiry for the state after an admission into a full
--          bucket, in ms since the Unix epoch (any number: one out of range only costs a
--          string.format), or 0 when the caller expects the key to be there: the script then
--          reads it with GET first
-- ARGV[6]  optional, tests only: fixed time in µs since the Unix epoch, used instead of TIME
-- Reply:   for an admission whose state's ts is the decision time, the state after it, 16 bytes;
--          otherwise the string "<allowed 0|1> <s> <µs> <state>": the time the decision used as
--          TIME gives it, seconds and microseconds, then the bucket after the decision, 16 bytes
--          (the state written when allowed; the one stored, not refilled, when denied, or a full
--          bucket at the decision time when there was none). Every reply of the second form is
--          longer than 16 bytes.
-- Memory:  O(1) per subject.
local now, sec, usec, fixed
if ARGV[6] then
  fixed = true
  now = ARGV[6] + 0
  sec, usec = string.format('%d', math.floor(now / 1000000)), string.format('%d', now % 1000000)
else
  local t = redis.call('TIME')
  sec, usec = t[1], t[2]
  now = sec * 1000000 + usec
end
local need, rate, cap, q = ARGV[1] + 0, ARGV[2] + 0, ARGV[3] + 0, ARGV[4] + 0
local qr = q * rate

-- The state after admitting the request into a full bucket (a missing key), the time its bucket is
-- full again, F = ts + d/R (d = C·U − tokens), and the expiry for it (see Expiry: E when F + Q <=
-- E·1000 < F + 2Q, in exact integers (E·1000 − ts)·R − d − Q·R in [0, Q·R), else the end of F's
-- quantum, kQ + Q). These are written inline rather than as local functions, which Lua would
-- allocate as closures on every call.
local tokens, ts, d = cap - need, now, need
local st, v, e, x
if tokens >= 0 then
  v = struct.pack('<dd', tokens, now)
end
if v and ARGV[5] ~= '0' then
  -- Written only if there is no key; otherwise SET returns the stored state.
  e = ARGV[5]
  x = (e * 1000 - ts) * rate - d - qr
  if fixed or x < 0 or x >= qr then
    local a = ts % q
    x = a * rate + d
    x = ts - a + q * ((x - x % qr) / qr) + q
    if fixed then
      st = redis.call('SET', KEYS[1], v, 'NX', 'PX', string.format('%d', math.ceil((x - now) / 1000) + 60000), 'GET')
    else
      st = redis.call('SET', KEYS[1], v, 'NX', 'PXAT', string.format('%d', x / 1000), 'GET')
    end
  else
    st = redis.call('SET', KEYS[1], v, 'NX', 'PXAT', e, 'GET')
  end
  if not st then
    return v
  end
else
  -- The caller expects a key (it sent 0 as E), or the request never fits.
  st = redis.call('GET', KEYS[1])
  if not st and not v then
    return '0 ' .. sec .. ' ' .. usec .. ' ' .. struct.pack('<dd', cap, now)
  end
end

local kept
if st then
  tokens, ts = struct.unpack('<dd', st)
  -- The key is kept at least until the end of the quantum of the stored state's F.
  local a = ts % q
  x = a * rate + cap - tokens
  kept = ts - a + q * ((x - x % qr) / qr) + q
  if now > ts then
    -- Refill min(cap, tokens + R·elapsed). Past 2^53 the product is inexact but still at least
    -- 2^53 > cap − tokens, so the comparison stays right.
    local add = (now - ts) * rate
    if add >= cap - tokens then
      -- Full again: the state after the request is v, the one packed for a missing key.
      tokens = cap
    else
      tokens, v = tokens + add, nil
    end
    ts = now
  else
    v = nil
  end
  if tokens < need then
    return '0 ' .. sec .. ' ' .. usec .. ' ' .. st
  end
  tokens = tokens - need
  v = v or struct.pack('<dd', tokens, ts)
  d = cap - tokens
end

-- A new F before the end of the stored state's quantum is in that quantum too: the key keeps its
-- expiry. Otherwise it gets one for the new state (a missing key's read first gets one too).
if not fixed and kept and (kept - ts) * rate > d then
  redis.call('SET', KEYS[1], v, 'KEEPTTL')
else
  e = ARGV[5]
  x = (e * 1000 - ts) * rate - d - qr
  if fixed or x < 0 or x >= qr then
    local a = ts % q
    x = a * rate + d
    x = ts - a + q * ((x - x % qr) / qr) + q
    if fixed then
      redis.call('SET', KEYS[1], v, 'PX', string.format('%d', math.ceil((x - now) / 1000) + 60000))
    else
      redis.call('SET', KEYS[1], v, 'PXAT', string.format('%d', x / 1000))
    end
  else
    redis.call('SET', KEYS[1], v, 'PXAT', e)
  end
end
if ts == now then
  return v
end
return '1 ' .. sec .. ' ' .. usec .. ' ' .. v
