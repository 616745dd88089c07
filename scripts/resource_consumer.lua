-- resource_consumer.lua: two sliding-window logs at once, a shared resource and one of its
-- consumers, all or nothing (seed 004, corrected).
--
-- Corrected from seed 004 (see resource_consumer_published.lua): the article scores entries with
-- whole seconds of TIME, so its window is W rounded to whole seconds of the server clock and a
-- burst can straddle a second; it checks the resource count with `==`, so a count that ever jumps
-- past the limit is never caught again; its members (sec:µs) collide for two calls in the same
-- microsecond; and its keys never expire. Here entries are times in µs, both limits are checked
-- for the whole cost before anything is written, the request is admitted only if both logs have
-- room and then recorded in both, every permit is its own entry, and both keys expire once their
-- newest entry has left the window.
--
-- Structure: each log is a list of the admission times of its last Lr (resource) or Lc
-- (consumer) permits, newest first, as in sliding_log.lua. A request for n permits at t fits a log
-- of limit L exactly when its entry at index L − n (the (L−n+1)-th newest) is missing or at or
-- before t − W, so two LINDEX decide both limits; an admission LPUSHes n entries at t on both,
-- LTRIMs a list only when it had an entry at L − n (so it now has more than L), and sets both
-- expiries. This is the cheapest exact structure for the pair: the sorted sets of the earlier
-- version removed old entries (ZREMRANGEBYSCORE) and counted (ZCARD) on both keys at every call,
-- made members unique, and looked entries up again (ZRANGE) for a denial's retry-after, in a
-- structure several times larger per entry; the lists read one entry each and keep small
-- integers. It is the public list-based moving window (LINDEX / LPUSH / LTRIM / EXPIRE) on two
-- lists at once, on the server's clock in µs, with each LTRIM skipped while its list is short.
--
-- Clock: Redis TIME in µs (ARGV[5], when given, replaces it, for tests only). Skew between clients
-- has no effect. An entry stays in the window (t−W, t] for exactly W. The script assumes TIME does
-- not go back: entries are in push order, which is time order only on a clock that never steps
-- back, and an entry trimmed away as older than t − W could be inside the window of a later
-- reading that stepped back.
--
-- Expiry: once the newest entry, at N = now, has left the window (at N + W) both lists mean the
-- same as no keys (every consumer entry is also a resource entry), so both keys are kept until
-- N + W, as an absolute time taken from the same TIME as the decision: PEXPIREAT ⌈(N + W)/1000⌉.
-- A relative PEXPIRE would count from Redis's own clock reading, and since Redis 7.2 that is a
-- snapshot taken when the script started, before its TIME call (a few µs, more if the server is
-- preempted; the ms truncation adds up to 1 ms): the keys could then vanish while their newest
-- entries are still in the window, and the requests in the gap would be admitted as if both
-- windows were empty. Redis removes a key once its ms clock is strictly past the expiry, so the
-- keys live until ⌈(N + W)/1000⌉ + 1 ms > N + W, on every version. With a fixed time (tests) the
-- expiry is relative, W plus one minute, so that a test whose fixed times run ahead of the real
-- clock never loses a key to a stall of the real one.
--
-- Cost: the script does what the decision needs and no more (bench/BenchmarkAlgorithms compares
-- it with the public moving window on two lists): numbers are read by arithmetic on the strings,
-- the cost is passed only when it is not 1, and the reply is one string made mostly of strings the
-- script already has (TIME's two fields, the entries LINDEX returned); the Go decoder
-- (algorithms/resource_consumer.go) derives the remaining permits and the retry-after.
--
-- KEYS[1]  list: the resource's admitted permits, admission time in µs, newest first; at most Lr
-- KEYS[2]  list: this consumer's admitted permits on this resource (the same times); at most Lc
-- ARGV[1]  Lr − 1, the index of the resource's last entry kept
-- ARGV[2]  Lc − 1, the index of the consumer's last entry kept
-- ARGV[3]  W, window in µs (a multiple of 1000)
-- ARGV[4]  optional: n, permits asked for (>= 1); 1 when absent
-- ARGV[5]  optional, tests only: fixed time in µs since the Unix epoch, used instead of TIME
--          (ARGV[4] must then be given)
-- Reply:   the string "<allowed 0|1> <x> <y> <s> <µs>": when allowed, x and y are the lengths of
--          the resource's and the consumer's lists after the push (before any trim); when denied,
--          x and y are the times in µs of the resource's entry at Lr − n and the consumer's at
--          Lc − n when that entry is inside the window, else 0 (at least one is inside), or both 0
--          when n > Lr or n > Lc (never admissible). Then the time the decision used as TIME gives
--          it, seconds and microseconds.
-- Memory:  O(Lr) for the resource plus O(Lc) per consumer: one integer per list entry.
local now, sec, usec
if ARGV[5] then
  now = ARGV[5] + 0
  sec, usec = string.format('%d', math.floor(now / 1000000)), string.format('%d', now % 1000000)
else
  local t = redis.call('TIME')
  sec, usec = t[1], t[2]
  now = sec * 1000000 + usec
end
local rkey, ckey, rlast, clast = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local ri, ci, cost = rlast, clast, 1
if ARGV[4] then
  cost = ARGV[4] + 0
  ri, ci = rlast + 1 - cost, clast + 1 - cost
  if ri < 0 or ci < 0 then
    return '0 0 0 ' .. sec .. ' ' .. usec
  end
end
local window = ARGV[3] + 0

local re = redis.call('LINDEX', rkey, ri)
local ce = redis.call('LINDEX', ckey, ci)
local rin = re and re + window > now
local cin = ce and ce + window > now
if rin or cin then
  return '0 ' .. (rin and re or '0') .. ' ' .. (cin and ce or '0') .. ' ' .. sec .. ' ' .. usec
end

-- The time in µs as TIME's seconds and its microseconds padded to six digits: exact, and cheaper
-- than string.format (a number argument would be written with %.17g, dearer still).
local nows = sec .. string.sub('00000', #usec) .. usec
local rn, cn
if cost == 1 then
  rn = redis.call('LPUSH', rkey, nows)
  cn = redis.call('LPUSH', ckey, nows)
else
  -- At most 4096 entries per LPUSH: unpack puts them all on Lua's C stack (about 8000 slots).
  local entries = {}
  for i = 1, math.min(cost, 4096) do
    entries[i] = nows
  end
  while cost > 0 do
    rn = redis.call('LPUSH', rkey, unpack(entries, 1, math.min(cost, 4096)))
    cn = redis.call('LPUSH', ckey, unpack(entries, 1, math.min(cost, 4096)))
    cost = cost - 4096
  end
end
-- A list that had an entry at L − n had at least L − n + 1, so it now has more than L.
if re then
  redis.call('LTRIM', rkey, 0, rlast)
end
if ce then
  redis.call('LTRIM', ckey, 0, clast)
end
if ARGV[5] then
  local ttl = string.format('%d', window / 1000 + 60000)
  redis.call('PEXPIRE', rkey, ttl)
  redis.call('PEXPIRE', ckey, ttl)
else
  local at = string.format('%d', math.ceil((now + window) / 1000))
  redis.call('PEXPIREAT', rkey, at)
  redis.call('PEXPIREAT', ckey, at)
end
-- string.format writes the counts for less than the concatenation's own number conversions.
return string.format('1 %d %d ', rn, cn) .. sec .. ' ' .. usec
