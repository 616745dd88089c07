-- fixed_window.lua: fixed-window(L, W) aligned on Unix time (seed 001, corrected).
--
-- Corrected from seed 001 (see fixed_window_published.lua): the window is the server's (its clock
-- sets when the count ends), not the client's minute-of-hour, so clients with skewed clocks all
-- count in the same window; the expiry is set once, when a window's first permit is counted, to
-- the end of the window, instead of being pushed back by every admission; the check and the count
-- are one atomic step and a request is admitted only if its whole cost fits; and W is any whole
-- number of milliseconds, not a minute.
--
-- Structure: the public first-hit window (INCRBY, and an expiry when the counter is new), with the
-- expiry on the epoch: one counter per subject, a string key. The script INCRBYs it; when the
-- counter is new (the count is this request's cost), it reads TIME and sets the key to expire at
-- the end of the window the time is in, [kW, (k+1)W). The caller admits when the count is at most
-- L. Redis removes the key when its clock reaches (k+1)W, so the counter that the next request
-- finds is always the count of the window its own time is in: the key was created at a time in
-- window k (the first hit read TIME after it created the key), every later call ran after that,
-- and Redis serves no call on a key past its expiry. A denied request whose window had room (the
-- count before it was below L: a cost n > 1 that did not fit) takes its increment back
-- (INCRBY −n), since the window may still have room for a smaller one; any other denial leaves
-- it: it found the window full (count ≥ L, which is first reached by an admission to exactly L),
-- and a full window denies everything until it ends, so the decisions are those of a count that
-- stopped at L.
--
-- Cost: INCR (INCRBY for a cost above 1) and nothing else on all but the first call of a window,
-- which adds TIME and PEXPIREAT: the commands of the public first-hit window (INCRBY, PEXPIRE
-- when new), with the server's clock read once per window and subject instead of never. Memory:
-- the same (one integer per subject). The earlier versions read TIME on every call to find the
-- window (a hash of window fields, then a key named by the window that the script checked against
-- TIME); letting the key's expiry end the window makes that read unnecessary, and the count
-- reaches the caller undecided (the caller compares it with L), so the common path converts no
-- number and formats nothing.
--
-- Clock: Redis TIME, read on a window's first call; Redis's own clock ends the window by
-- removing the key. Skew between clients has no effect: no client time is sent. The key expires
-- at an absolute time, (k+1)W − 1 in ms (PEXPIREAT, or SET … PXAT in the window's last ms):
-- Redis removes a key once its ms clock is strictly past the expiry, so the key lives exactly
-- while the server's time is in window k (a relative PEXPIRE would count from the clock reading
-- Redis takes when the script starts, before the TIME call, and could end the window early if
-- the server were preempted in between). Within
-- a script Redis judges expiry by the time the script started (all versions this targets), which
-- is before the script's TIME, so a call sees the key of the window it started in. The decision
-- time of a first call is its TIME; the other calls report none (the caller knows the time only
-- to the interval it sent and received in). A server clock that steps back keeps counting in the
-- current key until Redis removes it on the clock that stepped back, so a window can last longer
-- than W, which only admits less; the script, like the other server-clock scripts, assumes TIME
-- does not step back.
--
-- Tests: ARGV[4], a fixed time in µs, replaces TIME, and the caller then names the key by the
-- window of that time (a fixed time does not move Redis's clock, so the expiry cannot end the
-- window): the expiry is relative, the time left in the window plus one minute, so that a test
-- whose fixed times run ahead of the real clock never loses a key to a stall of the real one.
--
-- KEYS[1]  string: the permits counted in the subject's current window (admitted, plus the
--          denials once full)
-- ARGV[1]  W, the window in ms
-- ARGV[2]  optional: n, permits asked for (>= 1); 1 when absent
-- ARGV[3]  optional: L, permits per window (given with ARGV[2])
-- ARGV[4]  optional, tests only: fixed time in µs since the Unix epoch, used instead of TIME
--          (ARGV[2] and ARGV[3] must then be given)
-- Reply:   the count with this request's cost in it, an integer, on all but a window's first call
--          (the count is then above the cost); on the first call (the count is the cost), the
--          string "<count> <s> <µs>": the count, then the time the window was read from as TIME
--          gives it, seconds and microseconds. The caller admits when the count is at most L.
-- Memory:  O(1) per subject: one integer.
local key = KEYS[1]
local n, cost
if ARGV[2] then
  n = redis.call('INCRBY', key, ARGV[2])
  cost = ARGV[2] + 0
  if n ~= cost then
    local limit = ARGV[3] + 0
    if n > limit and n - cost < limit then
      redis.call('INCRBY', key, -cost)
    end
    return n
  end
else
  n = redis.call('INCR', key)
  if n ~= 1 then
    return n
  end
end

-- The window's first call: the key expires at the end of the window the time is in, in its last
-- ms. PEXPIREAT deletes a key at once when its time is the current ms (Redis 7.0), so a first call
-- in a window's last ms would lose the count and every call after it in that ms would start again
-- from 0: there, and only there, SET … PXAT (which keeps the key until its ms has passed) stands
-- in for it, since SET costs more than PEXPIREAT.
local w = ARGV[1] + 0
local sec, usec, ms
if ARGV[4] then
  local now = ARGV[4] + 0
  sec, usec = math.floor(now / 1000000), now % 1000000
  ms = math.floor(now / 1000)
else
  local t = redis.call('TIME')
  sec, usec = t[1], t[2]
  ms = sec * 1000 + math.floor(usec / 1000)
end
local last = ms - ms % w + w - 1
if cost and n > ARGV[3] + 0 then
  -- A cost above L on a new window never fits: take it back.
  if ARGV[4] then
    redis.call('SET', key, '0', 'PX', w - ms % w + 60000)
  else
    redis.call('SET', key, '0', 'PXAT', last)
  end
elseif ARGV[4] then
  redis.call('PEXPIRE', key, w - ms % w + 60000)
elseif ms < last then
  redis.call('PEXPIREAT', key, last)
else
  redis.call('SET', key, n, 'PXAT', last)
end
-- n is the cost here (a window's first call), so the reply takes its string rather than format n.
return (ARGV[2] or '1') .. ' ' .. sec .. ' ' .. usec
