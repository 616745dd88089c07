-- sliding_log.lua: sliding-window(L, W) on a log of admissions (seed 002, made atomic).
--
-- Corrected from seed 002 (see the Go code of sliding-log-published): the article sends
-- ZREMRANGEBYSCORE, ZADD, ZCARD and EXPIRE as separate commands, so concurrent requests interleave
-- (its author says so), and it adds every request, denied ones too, so a client that keeps calling
-- above the limit is denied for ever. Here the same steps run in one script (atomic), the count is
-- checked before anything is added, and only admitted permits are recorded. Members are unique
-- (time and a sequence number, checked with ZADD NX), so two admissions in the same microsecond
-- are two entries. The time is the server's, in µs, not the client's in ms.
--
-- Clock: Redis TIME in µs (ARGV[1] > 0 replaces it, for tests only). Skew between clients has no
-- effect. An entry stays in the window (t−W, t] for exactly W. The script assumes TIME does not go
-- back: entries are removed, and the key expires, on the latest clock reading, so after a step
-- back of the server clock the log can have forgotten entries that the earlier reading still
-- puts in the window.
--
-- Expiry: once the newest entry, scored N = now, has left the window (at N + W) the set means the
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
-- KEYS[1]  sorted set: one member per admitted permit, scored by its admission time in µs
-- ARGV[1]  fixed time in µs since the Unix epoch, or 0 to read TIME
-- ARGV[2]  L, permits per sliding window
-- ARGV[3]  W, window in µs (a multiple of 1000)
-- ARGV[4]  cost, permits asked for (>= 1)
-- Reply:   {allowed 0|1, remaining permits in the window, retry-after µs until enough entries
--          have left the window (0 when allowed, or when cost > L: never), time µs used}
-- Memory:  O(L) per subject.
local now = tonumber(ARGV[1])
local fixed = now ~= nil and now > 0
if not fixed then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local key = KEYS[1]
-- %d writes integers exactly and costs less than a float format (or a number argument, which
-- Redis writes with %.17g; Lua's own tostring would write 1.7e+15).
local nows = string.format('%d', now)

-- Entries at or before now−W are outside (now−W, now].
redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - window))
local count = redis.call('ZCARD', key)

if count + cost > limit then
  if cost > limit then return {0, math.max(0, limit - count), 0, now} end
  -- The (count+cost−L)-th oldest entry must leave: it does at its score + W.
  local e = redis.call('ZRANGE', key, count + cost - limit - 1, count + cost - limit - 1, 'WITHSCORES')
  local retry = tonumber(e[2]) + window - now
  if retry < 1 then retry = 1 end
  return {0, math.max(0, limit - count), retry, now}
end

local seq = count
for i = 1, cost do
  seq = seq + 1
  while redis.call('ZADD', key, 'NX', nows, nows .. '-' .. seq) == 0 do
    seq = seq + 1
  end
end
if fixed then
  redis.call('PEXPIRE', key, string.format('%d', math.ceil(window / 1000) + 60000))
else
  redis.call('PEXPIREAT', key, string.format('%d', math.ceil((now + window) / 1000)))
end
return {1, limit - count - cost, 0, now}
