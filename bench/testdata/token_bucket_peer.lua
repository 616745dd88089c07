-- token_bucket_peer.lua: the public token bucket on the client's clock (the design of the Python
-- library limits and of most blog posts), as BenchmarkAlgorithms runs it as the token-bucket
-- family's peer (peer-token-bucket): one hash {tokens, ts}, refilled from the client's time in ms,
-- written back with its TTL on every call.
-- KEYS[1] the hash; ARGV now (client ms), capacity, refill per ms, cost, TTL ms (the time to
-- refill completely). Replies 1 (admitted) or 0.
local now = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local rate = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local st = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, ts = tonumber(st[1]), tonumber(st[2])
if tokens == nil or ts == nil then
  tokens, ts = capacity, now
end
local elapsed = now - ts
if elapsed < 0 then elapsed = 0 end
tokens = math.min(capacity, tokens + elapsed * rate)
local allowed = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return allowed
