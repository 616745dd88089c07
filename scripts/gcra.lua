-- gcra.lua: the generic cell rate algorithm, token-bucket(C, L per W), as in go-redis/redis_rate
-- and redis-cell.
--
-- One key holds the theoretical arrival time TAT in µs: the time at which the bucket would be
-- full again. With emission interval T (µs per permit) and burst C, a request for n permits at
-- time t is admitted when max(TAT, t) + n·T − t <= C·T, and then TAT becomes max(TAT, t) + n·T.
-- Nothing is written on a denial.
--
-- Differences from redis_rate: all arithmetic is in integer µs (no floating-point seconds), and
-- nothing rounds toward admission (redis_rate's floor(x + 0.5) once let an extra request through).
-- T = ceil(W/L) µs: when W/L is not a whole number of µs the limiter refills slower than L per W
-- by less than 1 µs per permit, never faster, so token-bucket(C, L per W) still holds.
--
-- Clock: Redis TIME in µs (ARGV[3], when given, replaces it, for tests only). Skew between
-- clients has no effect. A server clock that steps back sees a larger TAT − t and denies more,
-- never admits more.
--
-- Expiry: a key whose TAT has passed means the same as no key, so the key is kept until TAT, and
-- the expiry is an absolute time taken from the same TIME as the decision: SET … PXAT ⌈TAT/1000⌉.
-- A relative PX would count from Redis's own clock reading, and since Redis 7.2 that is a snapshot
-- taken when the script started, before its TIME call (a few µs, more if the server is preempted;
-- the ms truncation adds up to 1 ms): the key could then vanish before TAT and a request in the gap
-- would find a full bucket a fraction of a permit early. Redis removes a key once its ms clock is
-- strictly past the expiry, so the key lives until ⌈TAT/1000⌉ + 1 ms > TAT, on every version
-- (PXAT needs Redis >= 6.2); and a SET whose PXAT has passed deletes the key at once, which with
-- ⌈TAT/1000⌉ only happens when TAT itself has passed. With a fixed time (tests) the expiry is
-- relative, ⌈(TAT − t)/1000⌉ ms plus one minute, so that a test whose fixed times run ahead of the
-- real clock never loses a key to a stall of the real one.
--
-- Cost: the script does what the decision needs and no more, since each step is a measurable
-- share of a call (bench/BenchmarkAlgorithms): TIME, GET, and on an admission one SET. Numbers are
-- read by arithmetic on the strings (tonumber parses its argument twice), arguments arrive
-- precomputed, and the reply is one string made of strings the script already has (TIME's two
-- fields, the TAT it read or wrote), which Redis sends for a fraction of what a table costs; the
-- Go decoder (algorithms/gcra.go) derives the remaining permits and the retry-after from it.
--
-- KEYS[1]  string: TAT in µs since the Unix epoch
-- ARGV[1]  n·T, µs the request adds to TAT (n >= 1 permits, T >= 1)
-- ARGV[2]  C·T, burst tolerance in µs
-- ARGV[3]  optional, tests only: fixed time in µs since the Unix epoch, used instead of TIME
-- Reply:   the string "<allowed 0|1> <TAT> <s> <µs>": TAT after the decision (the one written when
--          allowed; the one stored, possibly past, or 0 for none when denied), and the time the
--          decision used as TIME gives it, seconds and microseconds.
-- Memory:  O(1) per subject.
local now, sec, usec
if ARGV[3] then
  now = ARGV[3] + 0
  sec, usec = string.format('%d', math.floor(now / 1000000)), string.format('%d', now % 1000000)
else
  local t = redis.call('TIME')
  sec, usec = t[1], t[2]
  now = sec * 1000000 + usec
end
local inc = ARGV[1] + 0

-- d = max(TAT, now) − now, how far the bucket is from full.
local tat = redis.call('GET', KEYS[1])
local d = 0
if tat then
  d = tat - now
  if d < 0 then d = 0 end
end

if d + inc > ARGV[2] + 0 then
  return '0 ' .. (tat or '0') .. ' ' .. sec .. ' ' .. usec
end

-- %d writes integers exactly and costs less than a float format (or a number argument, which
-- Redis writes with %.17g).
local new = now + d + inc
local v = string.format('%d', new)
if ARGV[3] then
  redis.call('SET', KEYS[1], v, 'PX', string.format('%d', math.ceil((d + inc) / 1000) + 60000))
else
  redis.call('SET', KEYS[1], v, 'PXAT', string.format('%d', math.ceil(new / 1000)))
end
return '1 ' .. v .. ' ' .. sec .. ' ' .. usec
