-- reference.lua: the calibration script, a bare INCR + PEXPIRE.
--
-- Not a limiter: it admits everything. limitbench runs it under the same load as every algorithm
-- so that results carry figures relative to the cheapest sensible Redis round trip, which survive
-- a change of machine (DESIGN.md, issue 7), and the algorithm cost targets are stated against it.
--
-- Clock: none. Skew: no effect.
-- KEYS[1]  counter key
-- ARGV[1]  TTL in milliseconds
-- Reply:   the counter after the increment (integer)
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return n
