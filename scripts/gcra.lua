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
-- Clock: Redis TIME in µs (ARGV[1] > 0 replaces it, for tests only). Skew between clients has no
-- effect. A server clock that steps back sees a larger TAT − t and denies more, never admits more.
--
-- Expiry: a key whose TAT has passed means the same as no key, so the key is kept until TAT, and
-- the expiry is an absolute time taken from the same TIME as the decision: SET … PXAT ⌈TAT/1000⌉.
-- A relative PX would count from Redis's own clock reading, and since Redis 7.2 that is a snapshot
-- taken when the script started, before its TIME call (a few µs, more if the server is preempted;
-- the ms truncation adds up to 1 ms): the key could then vanish before TAT and a request in the gap
-- would find a full bucket a fraction of a permit early. Redis removes a key once its ms clock is
-- strictly past the expiry, so the key lives until ⌈TAT/1000⌉ + 1 ms > TAT, on every version
-- (PXAT needs Redis >= 6.2). With a fixed time (tests) the expiry is relative, ⌈(TAT − t)/1000⌉ ms
-- plus one minute, so that a test whose fixed times run ahead of the real clock never loses a key
-- to a stall of the real one.
--
-- KEYS[1]  string: TAT in µs since the Unix epoch
-- ARGV[1]  fixed time in µs since the Unix epoch, or 0 to read TIME
-- ARGV[2]  T, emission interval in µs (>= 1)
-- ARGV[3]  C·T, burst tolerance in µs
-- ARGV[4]  cost, permits asked for (>= 1)
-- Reply:   {allowed 0|1, whole permits left, retry-after µs (0 when allowed, or when cost > C:
--          never), time µs used}
-- Memory:  O(1) per subject.
local now = tonumber(ARGV[1])
local fixed = now ~= nil and now > 0
if not fixed then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local interval = tonumber(ARGV[2])
local tolerance = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])

local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then tat = now end
local new_tat = tat + cost * interval
local allow_at = new_tat - tolerance

if allow_at > now then
  local retry = allow_at - now
  if cost * interval > tolerance then retry = 0 end
  return {0, math.max(0, math.floor((tolerance - (tat - now)) / interval)), retry, now}
end

-- %d writes integers exactly and costs less than a float format (or a number argument, which
-- Redis writes with %.17g).
if fixed then
  redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', string.format('%d', math.ceil((new_tat - now) / 1000) + 60000))
else
  redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PXAT', string.format('%d', math.ceil(new_tat / 1000)))
end
return {1, math.floor((tolerance - (new_tat - now)) / interval), 0, now}
