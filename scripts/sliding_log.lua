-- sliding_log.lua: sliding-window(L, W) on a log of the last L admissions (seed 002, made atomic).
--
-- Corrected from seed 002 (see the Go code of sliding-log-published): the article sends
-- ZREMRANGEBYSCORE, ZADD, ZCARD and EXPIRE as separate commands, so concurrent requests interleave
-- (its author says so), and it adds every request, denied ones too, so a client that keeps calling
-- above the limit is denied for ever. Here the decision and the record are one script (atomic),
-- only admitted permits are recorded, and the time is the server's, in µs, not the client's in ms.
--
-- Structure: a list of the admission times of the last L permits, newest first (one entry per
-- permit, so two admissions in the same µs are two entries). A request for n permits at t fits
-- exactly when the window (t−W, t] holds at most L − n permits, that is when fewer than L − n + 1
-- entries are newer than t − W, that is when the (L−n+1)-th newest entry, at index L − n, is
-- missing or at or before t − W: one LINDEX decides, and an admission is LPUSH (n entries at t),
-- an LTRIM back to L entries only when the list grew past L, and the expiry. Entries older than
-- t − W that are still in the list change no decision (only the one at L − n is read), so they are
-- left until an admission pushes them past L. This is the cheapest exact structure: the sorted set
-- of the earlier version had to remove the old entries (ZREMRANGEBYSCORE), count (ZCARD), make
-- each member unique and, on a denial, look up the entry that must leave (ZRANGE), in a structure
-- several times larger per entry; the list reads one entry and keeps L small integers. It is the
-- public list-based moving window (LINDEX / LPUSH / LTRIM / EXPIRE) on the server's clock in µs,
-- with the LTRIM skipped while the list is short and the entry that decides a denial sent back
-- for an exact retry-after.
--
-- Clock: Redis TIME in µs (ARGV[4], when given, replaces it, for tests only). Skew between
-- clients has no effect. An entry stays in the window (t−W, t] for exactly W. The script assumes
-- TIME does not go back: entries are in the order they were pushed, which is time order only on a
-- clock that never steps back, and an entry trimmed away as older than t − W could be inside the
-- window of a later reading that stepped back.
--
-- Expiry: once the newest entry, at N = now, has left the window (at N + W) the list means the
-- same as no key, so the key is kept until N + W, as an absolute time taken from the same TIME as
-- the decision: PEXPIREAT ⌈(N + W)/1000⌉. A relative PEXPIRE would count from Redis's own clock
-- reading, and since Redis 7.2 that is a snapshot taken when the script started, before its TIME
-- call (a few µs, more if the server is preempted; the ms truncation adds up to 1 ms): the key
-- could then vanish while its newest entries are still in the window, and the requests in the gap
-- would be admitted as if the window were empty. Redis removes a key once its ms clock is strictly
-- past the expiry, so the key lives until ⌈(N + W)/1000⌉ + 1 ms > N + W, on every version. With a
-- fixed time (tests) the expiry is relative, W plus one minute, so that a test whose fixed times
-- run ahead of the real clock never loses a key to a stall of the real one.
--
-- Cost: the script does what the decision needs and no more (bench/BenchmarkAlgorithms compares
-- it with the public moving window): numbers are read by arithmetic on the strings (tonumber
-- parses its argument twice), the cost is passed only when it is not 1, and the reply is one
-- string made mostly of strings the script already has (TIME's two fields, the entry LINDEX
-- returned); the Go decoder (algorithms/sliding_log.go) derives the remaining permits and the
-- retry-after.
--
-- KEYS[1]  list: one entry per admitted permit, its admission time in µs, newest first; at most L
-- ARGV[1]  L − 1, the index of the last entry kept
-- ARGV[2]  W, window in µs (a multiple of 1000)
-- ARGV[3]  optional: n, permits asked for (>= 1); 1 when absent
-- ARGV[4]  optional, tests only: fixed time in µs since the Unix epoch, used instead of TIME
--          (ARGV[3] must then be given)
-- Reply:   the string "<allowed 0|1> <x> <s> <µs>": when allowed, x is the length of the list after
--          the push (before any trim), so L − x is a lower bound of the permits left; when denied,
--          x is the time in µs of the entry at index L − n, which leaves the window at x + W, or 0
--          when n > L (never admissible). Then the time the decision used as TIME gives it,
--          seconds and microseconds.
-- Memory:  O(L) per subject: L list entries of one integer each.
local now, sec, usec
if ARGV[4] then
  now = ARGV[4] + 0
  sec, usec = string.format('%d', math.floor(now / 1000000)), string.format('%d', now % 1000000)
else
  local t = redis.call('TIME')
  sec, usec = t[1], t[2]
  now = sec * 1000000 + usec
end
local key, last = KEYS[1], ARGV[1]
local idx, cost = last, 1
if ARGV[3] then
  cost = ARGV[3] + 0
  idx = last + 1 - cost
  if idx < 0 then
    return '0 0 ' .. sec .. ' ' .. usec
  end
end
local window = ARGV[2] + 0

local e = redis.call('LINDEX', key, idx)
if e and e + window > now then
  return '0 ' .. e .. ' ' .. sec .. ' ' .. usec
end

-- The time in µs as TIME's seconds and its microseconds padded to six digits: exact, and cheaper
-- than string.format (a number argument would be written with %.17g, dearer still).
local nows = sec .. string.sub('00000', #usec) .. usec
local n
if cost == 1 then
  n = redis.call('LPUSH', key, nows)
else
  -- At most 4096 entries per LPUSH: unpack puts them all on Lua's C stack (about 8000 slots).
  local entries = {}
  for i = 1, math.min(cost, 4096) do
    entries[i] = nows
  end
  while cost > 0 do
    n = redis.call('LPUSH', key, unpack(entries, 1, math.min(cost, 4096)))
    cost = cost - 4096
  end
end
-- A list that had an entry at L − n had at least L − n + 1, so it now has more than L: trim it.
-- One that had none has at most L now.
if e then
  redis.call('LTRIM', key, 0, last)
end
if ARGV[4] then
  redis.call('PEXPIRE', key, string.format('%d', window / 1000 + 60000))
else
  redis.call('PEXPIREAT', key, string.format('%d', math.ceil((now + window) / 1000)))
end
-- string.format writes the count for less than the concatenation's own number conversion.
return string.format('1 %d ', n) .. sec .. ' ' .. usec
