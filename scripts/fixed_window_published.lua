-- fixed_window_published.lua: seed 001 as written (Spring WebFlux filter, fixed window per client
-- and minute-of-hour). Reproduces the article's behaviour, flaws included.
--
-- The article's filter builds the key from the *client's* LocalTime minute-of-hour, and its script
-- GETs the counter, then (when it is missing or below the limit) INCRs it and EXPIREs it for 59 s
-- on every admitted request. The window is therefore forced to one minute: L is the limit per
-- minute whatever window the caller configured.
--
-- Flaws kept on purpose: the window is the client's minute, so clients whose clocks disagree count
-- in different keys for the same real minute and together admit more than L in one server minute;
-- the expiry is pushed back by each admission; the key has no hour, so it is reused every hour
-- (harmless only while the 59 s expiry ends it first).
--
-- Clock: the client's time, passed in ARGV[3] (µs; used to report the decision time and retry-
-- after) and, through the minute in the key name, chosen by the caller. Skew: a client that is off
-- by s seconds counts in the minute its own clock shows; see above.
--
-- KEYS[1]  counter "…{subject}:<minute of hour 0..59 on the client's clock>"
-- ARGV[1]  L, max requests per minute
-- ARGV[2]  expiry in seconds (the article passes 59)
-- ARGV[3]  client time in µs since the Unix epoch
-- Reply:   {allowed 0|1, remaining in this minute, retry-after µs until the client's next minute
--          (0 when allowed), client time µs}
local key = KEYS[1]
local max_requests = tonumber(ARGV[1])
local expiry = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local requests = tonumber(redis.call('GET', key) or '-1')
if (requests == -1) or (requests < max_requests) then
  local n = redis.call('INCR', key)
  redis.call('EXPIRE', key, expiry)
  return {1, math.max(0, max_requests - n), 0, now}
end
return {0, 0, 60000000 - now % 60000000, now}
