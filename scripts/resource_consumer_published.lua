-- resource_consumer_published.lua: seed 004 as written: a sliding-window log for a shared
-- resource and one for each of its consumers, in whole seconds of Redis TIME.
--
-- Published design, reproduced with its flaws (see resource_consumer_published.go):
--   * Scores are whole seconds of TIME, and entries scored at or before now_s − W_s are removed, so
--     the window is the current second plus the W_s − 1 before it: between W_s − 1 and W_s seconds
--     of real time. Requests that straddle a second boundary see an emptier window than the
--     contract's, and up to twice the limit can pass in one real window of W.
--   * The resource is refused only when its count is exactly the limit (`==`). A count that ever
--     jumps past the limit (a request of cost > 1 admitted one below it) is never equal to it
--     again, and the resource limit stops applying until enough entries have left the window.
--     The consumer check (`ZCARD < limit`, before adding) lets such a request through as well.
--   * The member is "sec:µs" of TIME: two admissions in the same microsecond are one entry (the
--     second ZADD only updates the score), so the second is not counted.
--   * Nothing expires; the sets are trimmed only when called.
--   * The consumer set is trimmed only when the resource is not full, and a trim that removes a
--     million entries or more refuses the request (the article's `< 1000000` guard).
-- The article returns 'True'/'False'; this returns our integer reply, retry-after always 0 (the
-- design cannot say). A request of cost n adds n members ("sec:µs", then "sec:µs:2" .. ":n").
--
-- Clock: Redis TIME (ARGV[1] > 0 replaces it, for tests only), used in whole seconds. Skew between
-- clients has no effect.
--
-- KEYS[1]  sorted set: the resource's entries, scored by TIME seconds
-- KEYS[2]  sorted set: this consumer's entries on this resource
-- ARGV[1]  fixed time in µs since the Unix epoch, or 0 to read TIME
-- ARGV[2]  W_s, window in whole seconds
-- ARGV[3]  resource limit
-- ARGV[4]  consumer limit
-- ARGV[5]  cost, entries to add (>= 1)
-- Reply:   {allowed 0|1, permits left in the tighter window after an admission (0 on a denial, or
--          when a count is past its limit), 0, time µs used (TIME's seconds and microseconds)}
-- Memory:  O(resource limit) plus O(consumer limit) per consumer; no TTL.
local fixed = tonumber(ARGV[1])
local sec, usec
if fixed ~= nil and fixed > 0 then
  sec = math.floor(fixed / 1000000)
  usec = fixed - sec * 1000000
else
  local t = redis.call('TIME')
  sec = tonumber(t[1])
  usec = tonumber(t[2])
end
local nowus = sec * 1000000 + usec
local window = tonumber(ARGV[2])
local rlimit = tonumber(ARGV[3])
local climit = tonumber(ARGV[4])
local cost = tonumber(ARGV[5])

redis.call('ZREMRANGEBYSCORE', KEYS[1], '0', sec - window)
local rcount = redis.call('ZCARD', KEYS[1])
if rcount == rlimit then
  return {0, 0, 0, nowus}
end
if redis.call('ZREMRANGEBYSCORE', KEYS[2], '0', sec - window) < 1000000 then
  local ccount = redis.call('ZCARD', KEYS[2])
  if ccount < climit then
    local member = string.format('%d:%d', sec, usec)
    for i = 1, cost do
      local m = member
      if i > 1 then m = member .. ':' .. i end
      redis.call('ZADD', KEYS[2], sec, m)
      redis.call('ZADD', KEYS[1], sec, m)
    end
    return {1, math.max(0, math.min(rlimit - rcount, climit - ccount) - cost), 0, nowus}
  end
end
return {0, 0, 0, nowus}
