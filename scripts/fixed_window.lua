-- fixed_window.lua: fixed-window(L, W) aligned on Unix time (seed 001, corrected).
--
-- Corrected from seed 001 (see fixed_window_published.lua): the window is read from the server's
-- clock (Redis TIME), not the client's minute-of-hour, so clients with skewed clocks all count in
-- the same window; the expiry is set once, when a window's first permit is admitted, to the end of
-- the window, instead of being pushed back by every admission; the check and the count are one
-- atomic step and a request is admitted only if its whole cost fits; and W is any whole number of
-- milliseconds, not a minute.
--
-- Design choice: every key must be passed in KEYS (Redis Cluster), and the window index comes from
-- the server's clock inside the script, so it cannot be part of a key name. One hash per subject
-- has one field per window index holding that window's count: "one counter per window index".
-- The script HINCRBYs the current window's field first; when the count passes L the request is
-- denied. A denied request of cost n > 1 takes its increment back (HINCRBY −n), since the window
-- may still have room for a smaller one. A denied request of cost 1 leaves it: it found the window
-- full (count = L), and a full window denies everything until it ends, so the decisions are those
-- of a count that stopped at L (the field then counts the admitted permits plus those denials) and
-- a denial costs one HINCRBY, like an admission. Only the first admission of a window (HINCRBY
-- answered n) does more: on a hash that has other fields (HLEN > 1) it deletes those of earlier
-- windows, so the hash keeps one field, and it sets the expiry to the window's end. The common
-- path is TIME + HINCRBY. State is O(1).
--
-- Clock: Redis TIME in µs (ARGV[4], when given, replaces it, for tests only). Skew between
-- clients has no effect; a server clock that steps back into an earlier window (whose field is
-- gone) is answered with a denial until the later window is reached again, never an admission
-- that could overfill that window.
--
-- Expiry: once its window has ended, at E = (floor(t/W) + 1)·W, the hash means the same as no key,
-- so the key is kept until E, as an absolute time: PEXPIREAT E/1000 (E is whole ms). A relative
-- PEXPIRE would count from Redis's own clock reading, and since Redis 7.2 that is a snapshot taken
-- when the script started, before its TIME call: if the server is preempted across a ms boundary
-- in between, the key would vanish before its window ends and the window would admit L more.
-- Redis removes a key once its ms clock is strictly past the expiry, so the key lives until
-- E + 1 ms, on every version; a PEXPIREAT that is not in the future deletes the key at once, which
-- only happens once the window has ended. With a fixed time (tests) the expiry is relative, the
-- time left in the window plus one minute, so that a test whose fixed times run ahead of the real
-- clock never loses a key to a stall of the real one.
--
-- Cost: the script does what the decision needs and no more, since each step is a measurable
-- share of a call (bench/BenchmarkAlgorithms). Numbers are read by arithmetic on the strings
-- (tonumber parses its argument twice), the cost is passed only when it is not 1 (the script then
-- uses constants), and the reply is one string made mostly of strings the script already has
-- (TIME's two fields, the field name), which Redis sends for a fraction of what a table costs; the
-- Go decoder (algorithms/fixed_window.go) derives the remaining permits and the retry-after.
--
-- KEYS[1]  hash {<window index floor(t/W)> = permits admitted in that window (plus the cost-1
--          denials once it was full)}
-- ARGV[1]  L, permits per window
-- ARGV[2]  W, window in µs (a multiple of 1000, at least 1 ms)
-- ARGV[3]  optional: cost, permits asked for (>= 1); 1 when absent
-- ARGV[4]  optional, tests only: fixed time in µs since the Unix epoch, used instead of TIME
--          (ARGV[3] must then be given)
-- Reply:   the string "<allowed 0|1> <count> <window> <s> <µs>": the window index the request was
--          counted in, floor(t/W), and its count with this request's cost in it (so a denial has
--          count > L); or, when the hash holds a later window (the clock stepped back), that
--          window's index, a count of 0 and a denial until it starts. Then the time the decision
--          used as TIME gives it, seconds and microseconds.
local now, sec, usec
if ARGV[4] then
  now = ARGV[4] + 0
  sec, usec = string.format('%d', math.floor(now / 1000000)), string.format('%d', now % 1000000)
else
  local t = redis.call('TIME')
  sec, usec = t[1], t[2]
  now = sec * 1000000 + usec
end
local window = ARGV[2] + 0
local key = KEYS[1]
local cost, incr = 1, '1'
if ARGV[3] then
  incr = ARGV[3]
  cost = incr + 0
end

-- floor(now/W) is exact for integers below 2^53 (now is about 2^51); the check guards it anyway.
local idx = math.floor(now / window)
if idx * window > now then idx = idx - 1 end
-- %d writes integers exactly (and is cheaper than a float format); idx < 2^53.
local field = string.format('%d', idx)

local n = redis.call('HINCRBY', key, field, incr)
local allowed = '1 '
if n == cost then
  -- The window's first permits: drop earlier windows, look for a later one. A new hash (the
  -- usual case: the key expires with its window) has only this field.
  if redis.call('HLEN', key) > 1 then
    local later, lf = nil, nil
    for _, f in ipairs(redis.call('HKEYS', key)) do
      local fi = tonumber(f)
      if fi == nil or fi < idx then
        redis.call('HDEL', key, f)
      elseif fi > idx and (later == nil or fi > later) then
        later, lf = fi, f
      end
    end
    if later ~= nil then
      redis.call('HDEL', key, field)
      return '0 0 ' .. lf .. ' ' .. sec .. ' ' .. usec
    end
  end
  if cost > ARGV[1] + 0 then
    redis.call('HDEL', key, field)
    allowed = '0 '
  elseif ARGV[4] then
    redis.call('PEXPIRE', key, string.format('%d', math.ceil(((idx + 1) * window - now) / 1000) + 60000))
  else
    redis.call('PEXPIREAT', key, string.format('%d', (idx + 1) * window / 1000))
  end
elseif n > ARGV[1] + 0 then
  -- Denied. A denial of one permit means the window was full (count = L before it), and every
  -- later request of this window is denied whatever the count, so the increment is left in
  -- place (one HINCRBY instead of two); a larger cost may not have been denied by a full window,
  -- so it is taken back.
  if cost > 1 then
    redis.call('HINCRBY', key, field, '-' .. incr)
  end
  allowed = '0 '
end
return allowed .. string.format('%d', n) .. ' ' .. field .. ' ' .. sec .. ' ' .. usec
