-- A fixed-window limiter used by the scenario tests; KEYS[1] counter, ARGV[1] limit, ARGV[2] window ms.
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if n > tonumber(ARGV[1]) then return {0, n} end
return {1, n}
