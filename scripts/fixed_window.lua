-- fixed_window.lua: fixed-window(L, W) aligned on Unix time (seed 001, corrected).
--
-- Corrected from seed 001 (see fixed_window_published.lua): the window is read from the server's
-- clock (Redis TIME), not the client's minute-of-hour, so clients with skewed clocks all count in
-- the same window; the expiry is set once, when a window's first permit is counted, to the end of
-- the window, instead of being pushed back by every admission; the check and the count are one
-- atomic step and a request is admitted only if its whole cost fits; and W is any whole number of
-- milliseconds, not a minute.
--
-- Structure: one counter per window, a string key whose name holds the window's index k = ⌊t/W⌋,
-- given in KEYS with the window's bounds [kW, (k+1)W) in ARGV (the caller predicts k from its clock
-- and the server's last reported time). The script reads TIME; when the time is in the window it
-- INCRBYs the counter, sets the key to expire at the window's end when the counter is new, and the
-- caller admits when the count is at most L; when it is not (the prediction missed: a window
-- boundary passed while the request was in flight), it writes nothing and answers a count of 0
-- with the time, and the caller asks again for the window of that time (or, in a pipeline, which
-- has no second round trip, reports a denial). A denied request of cost n > 1 takes its increment
-- back (INCRBY −n), since the window may still have room for a smaller one; a denial of cost 1
-- leaves it: it found the window full (count = L), and a full window denies everything until it
-- ends, so the decisions are those of a count that stopped at L. This is the cheapest exact
-- structure: one TIME and one INCRBY a call (PEXPIREAT once per window), the commands of the
-- public first-hit window plus the clock read it does without, and the same memory (one integer
-- per subject). The hash of the earlier version, one field per window index, had to compute and
-- format the field name from TIME in Lua and drop the earlier windows' fields (HLEN, HKEYS, HDEL)
-- when a window began; a key named by the window needs neither. The bounds are compared as strings
-- of 16 digits (µs times from 2001 to 2286), which costs less than converting TIME's fields to a
-- number, and the count reaches the caller undecided (the caller compares it with L), so the
-- script converts no number on the common path but the count for its reply.
--
-- Clock: Redis TIME in µs (ARGV[5], when given, replaces it, for tests only). Skew between
-- clients has no effect: a client's clock only chooses which window's key it asks for, and the
-- script refuses a key whose window is not the server's. A server clock that steps back into an
-- earlier window counts in that window's key again if it still exists; Redis removes it at the
-- window's end (on its own clock, which stepped back too, so only if it had already removed it),
-- and a window whose key is gone starts again from 0. The script, like the other server-clock
-- scripts, assumes TIME does not step back.
--
-- Expiry: once its window has ended, at E = (k + 1)·W, the counter is never used again, so the key
-- is kept until E, as an absolute time: PEXPIREAT E/1000 (E is whole ms). A relative PEXPIRE
-- would count from Redis's own clock reading, and since Redis 7.2 that is a snapshot taken when the
-- script started, before its TIME call: if the server is preempted across a ms boundary in
-- between, the key would vanish before its window ends and the window would admit L more. Redis
-- removes a key once its ms clock is strictly past the expiry, so the key lives until E + 1 ms, on
-- every version; a PEXPIREAT that is not in the future deletes the key at once, which only
-- happens once the window has ended. With a fixed time (tests) the expiry is relative, the time
-- left in the window plus one minute, so that a test whose fixed times run ahead of the real clock
-- never loses a key to a stall of the real one.
--
-- KEYS[1]  string: the permits counted in window k (admitted, plus the cost-1 denials once full)
-- ARGV[1]  kW, the window's start in µs since the Unix epoch, 16 digits
-- ARGV[2]  (k + 1)·W, its end in µs, 16 digits
-- ARGV[3]  optional: n, permits asked for (>= 1); 1 when absent
-- ARGV[4]  optional: L, permits per window (given with ARGV[3] when n > 1)
-- ARGV[5]  optional, tests only: fixed time in µs since the Unix epoch, used instead of TIME
--          (ARGV[3] and ARGV[4] must then be given)
-- Reply:   the string "<count> <s> <µs>": the window's count with this request's cost in it (the
--          caller admits when it is at most L), or 0 when the time is not in the window (nothing
--          was written); then the time the decision used as TIME gives it, seconds and
--          microseconds.
-- Memory:  O(1) per subject: one integer, in the key of the current window.
local sec, usec
if ARGV[5] then
  local now = ARGV[5] + 0
  sec, usec = string.format('%d', math.floor(now / 1000000)), string.format('%d', now % 1000000)
else
  local t = redis.call('TIME')
  sec, usec = t[1], t[2]
end
-- The time in µs as 16 digits: TIME's seconds (10 digits) and its µs padded to six.
local now = sec .. string.sub('00000', #usec) .. usec
if now < ARGV[1] or now >= ARGV[2] then
  return '0 ' .. sec .. ' ' .. usec
end

local key = KEYS[1]
local n
if ARGV[3] then
  local cost = ARGV[3] + 0
  n = redis.call('INCRBY', key, ARGV[3])
  if n == cost then
    if ARGV[5] then
      redis.call('PEXPIRE', key, string.format('%d', math.ceil((ARGV[2] - now) / 1000) + 60000))
    else
      redis.call('PEXPIREAT', key, string.sub(ARGV[2], 1, -4))
    end
  end
  if cost > 1 and n > ARGV[4] + 0 then
    redis.call('INCRBY', key, '-' .. ARGV[3])
  end
else
  n = redis.call('INCRBY', key, '1')
  if n == 1 then
    redis.call('PEXPIREAT', key, string.sub(ARGV[2], 1, -4))
  end
end
return string.format('%d', n) .. ' ' .. sec .. ' ' .. usec
