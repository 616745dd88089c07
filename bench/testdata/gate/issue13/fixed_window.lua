-- fixed_window.lua: a user's own fixed-window limiter, the one of issue 13's example
-- (bench/gate_e2e_test.go, bench/gate_power_test.go): fixed-window(L, W) aligned on Unix time.
--
-- One hash per subject holds one field per window index floor(t/W), counting the requests of
-- that window; a request is admitted while the count, this request included, is at most L. The
-- first request of a window deletes the fields of earlier windows (HLEN > 1) and expires the key
-- at the window's end (PEXPIREAT, absolute, so a stall between TIME and the expiry cannot end the
-- window early). Denied requests are counted too: a window that is full stays full.
--
-- gate_power_test.go slows this script down with extra Lua work put in front of it (a loop of
-- additions whose length it calibrates), the way issue 13's example added 3,000 iterations.
--
-- Clock: Redis TIME in µs, read inside the script; client clock skew has no effect.
--
-- KEYS[1]  hash {<window index> = requests in that window}
-- ARGV[1]  L, permits per window
-- ARGV[2]  W, window in ms
-- Reply:   {allowed 0|1, permits left, decision time µs of Redis TIME}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2]) * 1000
local index = math.floor(now / window)
local field = string.format('%d', index)

local count = redis.call('HINCRBY', KEYS[1], field, 1)
if count == 1 then
  if redis.call('HLEN', KEYS[1]) > 1 then
    for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
      if f ~= field then redis.call('HDEL', KEYS[1], f) end
    end
  end
  redis.call('PEXPIREAT', KEYS[1], string.format('%d', (index + 1) * window / 1000))
end
if count > limit then
  return {0, 0, now}
end
return {1, limit - count, now}
