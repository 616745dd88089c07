-- gcra_slow.lua: the gate self-test's slowed-down limiter (bench/gate_test.go), a GCRA like
-- scripts/gcra.lua written as a custom script: token-bucket(burst, limit per window).
--
-- One key holds the theoretical arrival time TAT in µs. With emission interval T = ceil(W/L) µs
-- and burst C, a request for n permits at time t is admitted when max(TAT, t) + n·T − t <= C·T,
-- and then TAT becomes max(TAT, t) + n·T. Nothing is written on a denial.
--
-- THIS IS gcra_slow.lua: gcra.lua plus extra work (the loop of redis.sha1hex below), calibrated
-- so that Redis spends about 25% more CPU per decision than on gcra.lua in the gate self-test's
-- scenario. Its decisions are gcra.lua's.
--
-- Clock: Redis TIME in µs, read inside the script; client clock skew has no effect.
--
-- KEYS[1]  string: TAT in µs since the Unix epoch
-- ARGV[1]  limit: permits per window
-- ARGV[2]  window in ms
-- ARGV[3]  burst C (permits)
-- ARGV[4]  cost: permits asked for
-- Reply:   {allowed 0|1, whole permits left, retry-after µs, decision time µs of Redis TIME}
-- EXTRA WORK, the only change from gcra.lua: hash the key 24 times.
local h = KEYS[1]
for _ = 1, 24 do h = redis.sha1hex(h) end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
local interval = math.ceil(tonumber(ARGV[2]) * 1000 / limit)
local tolerance = tonumber(ARGV[3]) * interval
local cost = tonumber(ARGV[4])

local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then tat = now end
local new_tat = tat + cost * interval
local allow_at = new_tat - tolerance

if allow_at > now then
  return {0, math.max(0, math.floor((tolerance - (tat - now)) / interval)), allow_at - now, now}
end

redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil((new_tat - now) / 1000))
return {1, math.floor((tolerance - (new_tat - now)) / interval), 0, now}
