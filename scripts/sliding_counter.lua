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
-- Every key is passed in KEYS (Redis Cluster) and the window index comes from the server's clock,
-- so one hash per subject holds the index of the current window and both counters; a request in
-- the next window shifts cur into prev, a later one clears both. The key lives until the end of
-- the window after the one in which it was last written (it is still the previous window then);
-- its expiry is set when a window's first permit is admitted.
--
-- Clock: Redis TIME in µs (ARGV[1] > 0 replaces it, for tests only). Skew between clients has no
-- effect; a server clock that steps back into an earlier window is denied until the stored window.
--
-- Expiry: once the window after the stored one has ended, at E = (w + 2)·W, the hash means the same
-- as no key, so the key is kept until E, as an absolute time: PEXPIREAT E/1000 (E is whole ms). A
-- relative PEXPIRE would count from Redis's own clock reading, and since Redis 7.2 that is a
-- snapshot taken when the script started, before its TIME call: if the server is preempted across
-- a ms boundary in between, the key would vanish early and the counters with it. Redis removes a
-- key once its ms clock is strictly past the expiry, so the key lives until E + 1 ms, on every
-- version. With a fixed time (tests) the expiry is relative, E − t plus one minute, so that a test
-- whose fixed times run ahead of the real clock never loses a key to a stall of the real one.
--
-- KEYS[1]  hash {w = current window index floor(t/W), c = permits in w, p = permits in w−1}
-- ARGV[1]  fixed time in µs since the Unix epoch, or 0 to read TIME
-- ARGV[2]  L, permits per window
-- ARGV[3]  W, window in µs (a multiple of 1000; L·W < 2^53)
-- ARGV[4]  cost, permits asked for (>= 1)
-- Reply:   {allowed 0|1, whole permits left by the estimate, retry-after µs until the estimate
--          admits the request (0 when allowed, or when cost > L: never), time µs used}
-- Memory:  O(1) per subject.
local now = tonumber(ARGV[1])
local fixed = now ~= nil and now > 0
if not fixed then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])

local idx = math.floor(now / window)
if idx * window > now then idx = idx - 1 end
local e = now - idx * window -- µs into the current window, 0 <= e < W

local st = redis.call('HMGET', KEYS[1], 'w', 'c', 'p')
local w = tonumber(st[1])
local cur, prev = 0, 0
if w ~= nil then
  if w > idx then
    return {0, 0, w * window - now, now}
  elseif w == idx then
    cur, prev = tonumber(st[2]) or 0, tonumber(st[3]) or 0
  elseif w == idx - 1 then
    prev = tonumber(st[2]) or 0
  end
end

local budget = limit * window - prev * (window - e) -- L·W minus the weighted previous window
if (cur + cost) * window > budget then
  local retry = 0
  if cost <= limit then
    if cur + cost <= limit then
      -- Wait in this window until prev·(W − e') <= (L − cur − n)·W.
      retry = window - math.floor((limit - cur - cost) * window / prev) - e
    else
      -- Wait for the next window, where cur becomes prev and the count starts at 0.
      retry = window - e
      if cur > 0 then
        retry = retry + window - math.floor((limit - cost) * window / cur)
      end
    end
    if retry < 1 then retry = 1 end
  end
  return {0, math.max(0, math.floor((budget - cur * window) / window)), retry, now}
end

cur = cur + cost
-- %d writes integers exactly and costs less than a float format (or a number argument, which
-- Redis writes with %.17g).
redis.call('HSET', KEYS[1], 'w', string.format('%d', idx), 'c', string.format('%d', cur), 'p', string.format('%d', prev))
if cur == cost then
  if fixed then
    redis.call('PEXPIRE', KEYS[1], string.format('%d', math.ceil((2 * window - e) / 1000) + 60000))
  else
    redis.call('PEXPIREAT', KEYS[1], string.format('%d', (idx + 2) * window / 1000))
  end
end
return {1, math.floor((budget - cur * window) / window), 0, now}
