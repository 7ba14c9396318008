-- refresh.lua: extend this node's claim on identity X, only while it is still this node's.
-- KEYS[1] = claim key <prefix>:cp:<identity>   KEYS[2] = epoch counter <prefix>:epoch
-- KEYS[3] = <prefix>:since
-- ARGV[1] = node id   ARGV[2] = claim TTL in ms
-- ARGV[3] = the connection's OCPP version ("" if not recorded), written back on a restore
-- Ownership is the node: a node holds one connection per identity, so any claim by this node
-- is the one its current connection made, also one past its liveness (the node was stopped).
-- Returns {"held", epoch}: still this node's (under that epoch), live for another TTL;
--         {"restored", new epoch}: the key was gone (expired or Redis lost its data), nobody
--                                  claimed X since, so it is ours again under a new epoch;
--         {"lost", node, epoch}: a newer claim (node, epoch) or a release (node "") replaced ours.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[3], string.format('%.0f', now), 'NX')
local ttl = tonumber(ARGV[2])
local expires = string.format('%.0f', now + ttl)
local cur = redis.call('HMGET', KEYS[1], 'node', 'epoch')
if cur[1] == ARGV[1] then
  redis.call('HSET', KEYS[1], 'expires_ms', expires)
  redis.call('PEXPIRE', KEYS[1], string.format('%.0f', 2 * ttl))
  return {'held', cur[2] or '0'}
end
if not cur[1] then
  if redis.call('EXISTS', KEYS[2]) == 0 then
    redis.call('SET', KEYS[2], string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2])))
  end
  local epoch = string.format('%.0f', redis.call('INCR', KEYS[2]))
  redis.call('HSET', KEYS[1], 'node', ARGV[1], 'epoch', epoch, 'expires_ms', expires,
    'version', ARGV[3] or '', 'claimed_ms', string.format('%.0f', now))
  redis.call('PEXPIRE', KEYS[1], string.format('%.0f', 2 * ttl))
  return {'restored', epoch}
end
return {'lost', cur[1], cur[2] or '0'}
