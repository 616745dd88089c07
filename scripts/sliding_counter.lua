-- sliding_counter.lua: the sliding window counter as Cloudflare describes it.
--
-- Counters for the current and the previous aligned window. At elapsed time e into the current
-- window the rate over the last W is estimated as prev·(W − e)/W + cur, assuming the previous
-- window's requests were spread evenly; a request of n permits is admitted when the estimate plus
-- n is at most L, compared in exact integers: prev·(W − e) + (cur + n)·W <= L·W. Denied requests
-- are not counted.
--
-- Contract: fixed-window(L, W) exactly, since cur never passes L. Over sliding windows it is an
-- approximation: when the previous window's requests came late the real count over (t−W, t] can
-- pass L (the report shows by how much).
--
-- Structure: one counter per window, a string key whose name holds the window's index k = ⌊t/W⌋,
-- as Cloudflare's counters are named by the minute; the script is given the keys of window k and
-- of window k − 1 with the bounds of window k (the caller predicts k from its clock and the
-- server's last reported TIME), reads TIME, and when the time is in window k reads both counters
-- with one MGET and, on an admission, INCRBYs the current one, setting it to expire when it stops
-- counting (the end of window k + 1, where it is the previous counter) when it is new. When the
-- time is not in window k (the prediction missed: a window boundary passed while the request was
-- in flight), it writes nothing and answers so with the time, and the caller asks again for the
-- window of that time (or, in a pipeline, which has no second round trip, reports a denial). This
-- is the cheapest exact structure: TIME, MGET and INCRBY, the commands of the public counters
-- named by the window plus the clock read they do without. The hash of the earlier version
-- ({w, c, p}, one key) needed HMGET, then HSET of all three fields on every admission, and the
-- shift of cur into prev computed in Lua.
--
-- Clock: Redis TIME in µs (ARGV[7], when given, replaces it, for tests only). Skew between
-- clients has no effect: a client's clock only chooses which window's keys it asks for, and the
-- script refuses keys whose window is not the server's. A server clock that steps back into an
-- earlier window counts in that window's keys again if they still exist, and from 0 once Redis has
-- removed them. The script, like the other server-clock scripts, assumes TIME does not step back.
--
-- Expiry: the counter of window k is read until window k + 1 ends, at E = (k + 2)·W, and never
-- after, so its key is kept until E, as an absolute time: PEXPIREAT E/1000 (E is whole ms, given by
-- the caller, so that the script formats no number), set when the counter is created. A relative
-- PEXPIRE would count from Redis's own clock reading, and since Redis 7.2 that is a snapshot taken
-- when the script started, before its TIME call: if the server is preempted across a ms boundary
-- in between, the key would vanish early and the counter with it. Redis removes a key once its ms clock is strictly past the expiry, so the key lives
-- until E + 1 ms, on every version. With a fixed time (tests) the expiry is relative, E − t plus
-- one minute, so that a test whose fixed times run ahead of the real clock never loses a key to a
-- stall of the real one.
--
-- KEYS[1]  string: the permits admitted in window k
-- KEYS[2]  string: the permits admitted in window k − 1
-- ARGV[1]  kW, the window's start in µs since the Unix epoch, 16 digits
-- ARGV[2]  (k + 1)·W, its end in µs, 16 digits
-- ARGV[3]  W, window in µs (a multiple of 1000; L·W < 2^53)
-- ARGV[4]  (L − n)·W, the estimate's budget before this request (negative when n > L)
-- ARGV[5]  n, permits asked for (>= 1)
-- ARGV[6]  (k + 2)·W in ms, when the counter stops counting (its expiry)
-- ARGV[7]  optional, tests only: fixed time in µs since the Unix epoch, used instead of TIME
-- Reply:   the string "<allowed 0|1|2> <cur> <prev> <s> <µs>": 1 admitted, 0 denied, with the
--          counters as read (before this request; "0" for none), or 2 with "0 0" when the time is
--          not in window k (nothing was written); then the time the decision used as TIME gives
--          it, seconds and microseconds.
-- Memory:  O(1) per subject: two integers, in the keys of the current and the previous window.
local sec, usec
if ARGV[7] then
  local t = ARGV[7] + 0
  sec, usec = string.format('%d', math.floor(t / 1000000)), string.format('%d', t % 1000000)
else
  local t = redis.call('TIME')
  sec, usec = t[1], t[2]
end
-- The time in µs as 16 digits (TIME's seconds and its µs padded to six), compared with the
-- window's bounds as strings: no number is converted unless a counter is there.
local now = sec .. string.sub('00000', #usec) .. usec
if now < ARGV[1] or now >= ARGV[2] then
  return '2 0 0 ' .. sec .. ' ' .. usec
end

-- prev·(W − e) + cur·W against (L − n)·W, W − e = (k + 1)·W − t, with a missing counter left out
-- rather than converted.
local v = redis.call('MGET', KEYS[1], KEYS[2])
local cur, prev = v[1], v[2]
local used = 0
if cur then
  used = cur * ARGV[3]
end
if prev then
  used = used + prev * (ARGV[2] - now)
end
if used > ARGV[4] + 0 then
  return '0 ' .. (cur or '0') .. ' ' .. (prev or '0') .. ' ' .. sec .. ' ' .. usec
end

-- A counter that MGET did not find is new: it expires when it stops counting.
redis.call('INCRBY', KEYS[1], ARGV[5])
if not cur then
  if ARGV[7] then
    redis.call('PEXPIRE', KEYS[1], string.format('%d', math.ceil((2 * ARGV[3] - (now - ARGV[1])) / 1000) + 60000))
  else
    redis.call('PEXPIREAT', KEYS[1], ARGV[6])
  end
end
return '1 ' .. (cur or '0') .. ' ' .. (prev or '0') .. ' ' .. sec .. ' ' .. usec
