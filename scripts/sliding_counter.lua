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
-- server's last reported time). It reads both counters with one MGET and, on an admission,
-- INCRBYs the current one, setting it to expire when it stops counting when it is new: the
-- commands of the public counters named by the window.
--
-- Which window the server is in comes from Redis's own clock in one of two ways:
--   - When both counters exist, the keys themselves prove it, and TIME is not read. The counter of
--     window k − 1 expires at the end of window k ((k+1)W − 1 ms, below), and Redis judges a key's
--     expiry within a script by the ms the script started at: it exists, so the script started
--     before window k ended. The counter of window k is only ever created by this script after it
--     read a TIME in window k (the second way), and TIME does not step back: it exists, so the
--     script started at or after window k began. So the decision is taken in window k, at the
--     time the script started, which the caller knows to the interval it sent and received in.
--     The elapsed time e, which only weighs the previous window's count in the estimate, is then
--     the caller's estimate of the server's time (ARGV[1] is W − e, between 1 and W): an estimate
--     that is off moves the estimate of the sliding count, never the contract, since cur + n <= L
--     whatever the weight (prev·(W − e) >= 0).
--   - Otherwise (a counter is missing: the window's first admission, a subject idle in the
--     previous window, or a prediction that missed) the script reads TIME and proceeds only when
--     the time is in window k, weighing prev by the server's e. When the time is not in window k
--     (the prediction missed: a window boundary passed while the request was in flight) it writes
--     nothing and answers so with the time, and the caller asks again for the window of that time
--     (or, in a pipeline, which has no second round trip, reports a denial).
-- So a subject in use costs MGET and INCRBY, as the public counters do; TIME is read once per
-- window and subject. The hash of an earlier version ({w, c, p}, one key) needed HMGET, then HSET
-- of all three fields on every admission, and the shift of cur into prev computed in Lua; the
-- version before this one read TIME on every call and cost 1.06–1.12 of the public counters.
--
-- Clock: Redis's: its TIME on the first way, its key expiry on the second. Skew between clients
-- does not move the contract: a client's clock only chooses which window's keys it asks for and,
-- when both exist, where in the window it weighs prev (the caller corrects its clock by the
-- offset of the server's reported times). A server clock that steps back into an earlier window
-- counts in that window's keys again if they still exist, and from 0 once Redis has removed them.
-- The script, like the other server-clock scripts, assumes TIME does not step back.
--
-- Expiry: the counter of window k is read until window k + 1 ends, and never after, so its key is
-- kept until its last ms, E = (k + 2)·W − 1 ms, as an absolute time: PEXPIREAT E (given by the
-- caller, so that the script formats no number), set when the counter is created. Redis removes a
-- key once its ms clock is strictly past the expiry, so the key lives exactly while the server's
-- time is before (k + 2)·W, which the first way above relies on. A relative PEXPIRE would count
-- from Redis's own clock reading, and since Redis 7.2 that is a snapshot taken when the script
-- started, before its TIME call: if the server is preempted across a ms boundary in between, the
-- key would vanish early and the counter with it. E is at least W − 1 ms after any time in window
-- k, so PEXPIREAT never meets an expiry in the past (which Redis 7.0 deletes at once). With a
-- fixed time (tests) the expiry is relative, (k + 2)·W − t plus one minute, so that a test whose fixed
-- times run ahead of the real clock never loses a key to a stall of the real one, and the window
-- is checked against the fixed time on every call (the keys prove nothing about a fixed time).
--
-- Cost notes: every argument costs the call the same whether it is read or not, so there are no
-- more of them than the two ways need; numbers are converted only where a counter exists; the time
-- is compared as a 16-digit string; and the reply of a window's first admission of a subject idle
-- before is the time alone.
--
-- KEYS[1]  string: the permits admitted in window k
-- KEYS[2]  string: the permits admitted in window k − 1
-- ARGV[1]  W − e, the caller's estimate of the µs left in window k (1 <= ARGV[1] <= W)
-- ARGV[2]  W, window in µs (a multiple of 1000; 2·L·W < 2^53)
-- ARGV[3]  (L − n)·W, the estimate's budget before this request (negative when n > L)
-- ARGV[4]  n, permits asked for (>= 1)
-- ARGV[5]  kW, the window's start in µs since the Unix epoch, 16 digits
-- ARGV[6]  (k + 1)·W, its end in µs, 16 digits
-- ARGV[7]  (k + 2)·W − 1 in ms, the counter's last ms (its expiry)
-- ARGV[8]  optional, tests only: fixed time in µs since the Unix epoch, used instead of TIME
-- Reply:   a string, one of
--          "<allowed 0|1> <cur> <prev>": both counters existed; decided in window k on the
--          caller's e, with the counters as read (before this request);
--          "<allowed 0|1|2> <cur> <prev> <t>": decided at t, the time in µs (16 digits) that TIME
--          gave, with the counters as read ("0" for none): 1 admitted, 0 denied, 2 with "0 0" when
--          t is not in window k (nothing was written);
--          "<t>": admitted at t, with no counter before it.
-- Memory:  O(1) per subject: two integers, in the keys of the current and the previous window.
local v = redis.call('MGET', KEYS[1], KEYS[2])
local cur, prev = v[1], v[2]
if cur and prev and not ARGV[8] then
  if cur * ARGV[2] + prev * ARGV[1] > ARGV[3] + 0 then
    return '0 ' .. cur .. ' ' .. prev
  end
  redis.call('INCRBY', KEYS[1], ARGV[4])
  return '1 ' .. cur .. ' ' .. prev
end

local sec, usec
if ARGV[8] then
  local t = ARGV[8] + 0
  sec, usec = string.format('%d', math.floor(t / 1000000)), string.format('%d', t % 1000000)
else
  local t = redis.call('TIME')
  sec, usec = t[1], t[2]
end
-- The time in µs as 16 digits (TIME's seconds and its µs padded to six), compared with the
-- window's bounds as strings: no number is converted unless a counter is there.
if #usec < 6 then
  usec = string.sub('00000', #usec) .. usec
end
local now = sec .. usec
if now < ARGV[5] or now >= ARGV[6] then
  return '2 0 0 ' .. now
end

-- prev·(W − e) + cur·W against (L − n)·W, W − e = (k + 1)·W − t, with a missing counter left out
-- rather than converted; with neither, only the budget's sign matters (a string that starts with
-- '-' is below '0', and one of digits is not).
if cur or prev then
  local used = 0
  if cur then
    used = cur * ARGV[2]
  end
  if prev then
    used = used + prev * (ARGV[6] - now)
  end
  if used > ARGV[3] + 0 then
    return '0 ' .. (cur or '0') .. ' ' .. (prev or '0') .. ' ' .. now
  end
elseif ARGV[3] < '0' then
  return '0 0 0 ' .. now
end

-- A counter that MGET did not find is new: it expires when it stops counting.
redis.call('INCRBY', KEYS[1], ARGV[4])
if not cur then
  if ARGV[8] then
    redis.call('PEXPIRE', KEYS[1], string.format('%d', math.ceil((2 * ARGV[2] - (now - ARGV[5])) / 1000) + 60000))
  else
    redis.call('PEXPIREAT', KEYS[1], ARGV[7])
  end
  if not prev then
    return now
  end
end
return '1 ' .. (cur or '0') .. ' ' .. (prev or '0') .. ' ' .. now
