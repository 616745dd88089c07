-- incr_expire.lua: the public first-hit window (the Python library limits' incr_expire.lua, the
-- INCR pattern of the Redis documentation), as BenchmarkAlgorithms runs it as the fixed-window
-- family's peer (peer-first-hit-window): INCRBY the cost, PEXPIRE the window when the counter is
-- new; the caller admits when the count is at most L. It reads no clock.
--
-- KEYS[1]  the counter
-- ARGV[1]  cost
-- ARGV[2]  window in ms
-- Reply:   the count after this request
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n == tonumber(ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return n
