-- absent.lua (Redis Cluster, PROTOCOL.md 1.2): route.lua found no claim of X; whether X is
-- connected nowhere, as route.lua decides it on one Redis.
-- KEYS[1] = {<prefix>}:since   KEYS[2] = live node set {<prefix>}:nodes (announce.lua)
-- ARGV[1] = node record prefix {<prefix>}:node:   ARGV[2] = the node TTL in ms
-- Every key it reads (the node records too) has the hash tag {<prefix>}: one slot.
-- Returns {"none"}: Redis has had its data for a node TTL and every live node has registered
--                   its claims since;
--         {"unknown"}: otherwise (X's holder may be a node that has not registered again).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local since = redis.call('GET', KEYS[1])
if not since then
  redis.call('SET', KEYS[1], string.format('%.0f', now))
  return {'unknown'}
end
if now - tonumber(since) < tonumber(ARGV[2]) then
  return {'unknown'}
end
local live = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. string.format('%.0f', now), '+inf')
for _, node in ipairs(live) do
  if redis.call('HGET', ARGV[1] .. node, 'synced') ~= since then
    return {'unknown'}
  end
end
return {'none'}
