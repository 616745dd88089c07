-- resource_consumer.lua: two sliding-window logs at once, a shared resource and one of its
-- consumers, all or nothing (seed 004, corrected).
--
-- Corrected from seed 004 (see resource_consumer_published.lua): the article scores entries with
-- whole seconds of TIME, so its window is W rounded to whole seconds of the server clock and a
-- burst can straddle a second; it checks the resource count with `==`, so a count that ever jumps
-- past the limit is never caught again; its members (sec:µs) collide for two calls in the same
-- microsecond; and its keys never expire. Here entries are scored in µs, both counts are compared
-- with `count + cost <= limit` before anything is written, the request is admitted only if both
-- sets have room and then recorded in both, members are unique (time and sequence number, checked
-- with ZADD NX), and both keys expire W after the last admission.
--
-- Clock: Redis TIME in µs (ARGV[1] > 0 replaces it, for tests only). Skew between clients has no
-- effect. An entry stays in the window (t−W, t] for exactly W. The script assumes TIME does not go
-- back: entries are removed, and the keys expire, on the latest clock reading, so after a step
-- back of the server clock the logs can have forgotten entries that the earlier reading still
-- puts in the window.
--
-- Expiry: once the newest resource entry, scored N = now, has left the window (at N + W) both sets
-- mean the same as no keys (every consumer entry is also a resource entry), so both keys are kept until
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
-- KEYS[1]  sorted set: the resource's admitted permits, scored by admission time in µs
-- KEYS[2]  sorted set: this consumer's admitted permits on this resource (same members)
-- ARGV[1]  fixed time in µs since the Unix epoch, or 0 to read TIME
-- ARGV[2]  Lr, permits per window for the resource
-- ARGV[3]  Lc, permits per window for the consumer
-- ARGV[4]  W, window in µs (a multiple of 1000)
-- ARGV[5]  cost, permits asked for (>= 1)
-- Reply:   {allowed 0|1, permits left in the tighter of the two windows, retry-after µs until
--          enough entries have left both windows (0 when allowed, or when cost > Lr or Lc: never),
--          time µs used}
-- Memory:  O(Lr) for the resource plus O(Lc) per consumer.
local now = tonumber(ARGV[1])
local fixed = now ~= nil and now > 0
if not fixed then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local rlimit = tonumber(ARGV[2])
local climit = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
local cost = tonumber(ARGV[5])
local rkey, ckey = KEYS[1], KEYS[2]
-- %d writes integers exactly and costs less than a float format (or a number argument, which
-- Redis writes with %.17g; Lua's own tostring would write 1.7e+15).
local nows = string.format('%d', now)

-- Entries at or before now−W are outside (now−W, now].
local cutoff = string.format('%d', now - window)
redis.call('ZREMRANGEBYSCORE', rkey, '-inf', cutoff)
redis.call('ZREMRANGEBYSCORE', ckey, '-inf', cutoff)
local rcount = redis.call('ZCARD', rkey)
local ccount = redis.call('ZCARD', ckey)

if rcount + cost > rlimit or ccount + cost > climit then
  local left = math.max(0, math.min(rlimit - rcount, climit - ccount))
  if cost > rlimit or cost > climit then return {0, left, 0, now} end
  -- In a set over its limit, the (count+cost−limit)-th oldest entry must leave, at its score + W;
  -- the request fits when that has happened in both sets.
  local retry = 1
  for _, s in ipairs({{rkey, rcount, rlimit}, {ckey, ccount, climit}}) do
    local k = s[2] + cost - s[3]
    if k > 0 then
      local e = redis.call('ZRANGE', s[1], k - 1, k - 1, 'WITHSCORES')
      retry = math.max(retry, tonumber(e[2]) + window - now)
    end
  end
  return {0, left, retry, now}
end

-- Every consumer entry is also a resource entry, so a member new to the resource is new to both.
local seq = rcount
for i = 1, cost do
  seq = seq + 1
  while redis.call('ZADD', rkey, 'NX', nows, nows .. '-' .. seq) == 0 do
    seq = seq + 1
  end
  redis.call('ZADD', ckey, nows, nows .. '-' .. seq)
end
if fixed then
  local ttl = string.format('%d', math.ceil(window / 1000) + 60000)
  redis.call('PEXPIRE', rkey, ttl)
  redis.call('PEXPIRE', ckey, ttl)
else
  local at = string.format('%d', math.ceil((now + window) / 1000))
  redis.call('PEXPIREAT', rkey, at)
  redis.call('PEXPIREAT', ckey, at)
end
return {1, math.min(rlimit - rcount, climit - ccount) - cost, 0, now}
