-- refresh.lua: extend this node's claim on identity X while it is the newest claim of X.
-- KEYS[1] = claim key <prefix>:cp:<identity>
-- One Redis: KEYS[2] = epoch counter <prefix>:epoch (unused)   KEYS[3] = <prefix>:since
-- Redis Cluster: KEYS[1] alone (a script's keys share a slot; PROTOCOL.md 1.2).
-- ARGV[1] = node id   ARGV[2] = claim TTL in ms
-- ARGV[3] = the connection's OCPP version ("" if not recorded), written back on a restore
-- ARGV[4] = the epoch of this node's claim (as its claim.lua, or a restore, gave it)
-- ARGV[5] = inbox channel prefix <prefix>:inbox: ("" on Redis Cluster: the node publishes the
--           superseded message itself, after the script)   ARGV[6] = identity
-- Ownership is the node: a node holds one connection per identity, so any claim by this node
-- is the one its current connection made, also one past its liveness (the node was stopped).
-- Epochs grow with time, across failovers too (failover.lua), so the larger epoch is the
-- newer claim. A claim key that is gone, or that names an older claim (or its release) than
-- ours, lost our claim's write: Redis lost its data, or a failover promoted a replica that
-- had not received it. Ours is made again under its own epoch, and the older claim's node,
-- if another, is told as claim.lua tells it (it closes that connection if it still holds it).
-- Returns {"held", epoch}: still this node's (under that epoch, raised to ours if older), live
--                          for another TTL;
--         {"restored", epoch, node, node's epoch}: the key was gone or named an older claim
--                              (node "" if none, or released): ours again, under our own
--                              epoch (ARGV[4]);
--         {"lost", node, epoch}: a newer claim (node, epoch) or its release (node "") replaced
--                                ours.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if KEYS[3] then
  redis.call('SET', KEYS[3], string.format('%.0f', now), 'NX')
end
local ttl = tonumber(ARGV[2])
local expires = string.format('%.0f', now + ttl)
local cur = redis.call('HMGET', KEYS[1], 'node', 'epoch')
local mine = tonumber(ARGV[4])
if cur[1] == ARGV[1] then
  -- An older epoch of ours (restored by a refresh of an earlier connection that ran late)
  -- becomes the current connection's.
  local held = cur[2] or '0'
  if tonumber(held) < mine then
    held = ARGV[4]
    redis.call('HSET', KEYS[1], 'epoch', held)
  end
  redis.call('HSET', KEYS[1], 'expires_ms', expires)
  redis.call('PEXPIRE', KEYS[1], string.format('%.0f', 2 * ttl))
  return {'held', held}
end
if not cur[1] or tonumber(cur[2] or '0') < mine then
  redis.call('HSET', KEYS[1], 'node', ARGV[1], 'epoch', ARGV[4], 'expires_ms', expires,
    'version', ARGV[3] or '', 'claimed_ms', string.format('%.0f', now))
  redis.call('PEXPIRE', KEYS[1], string.format('%.0f', 2 * ttl))
  if ARGV[5] ~= '' and cur[1] and cur[1] ~= '' then
    redis.call('PUBLISH', ARGV[5] .. cur[1],
      '{"type":"superseded","identity":' .. cjson.encode(ARGV[6]) ..
      ',"epoch":' .. (cur[2] or '0') .. ',"by_node":' .. cjson.encode(ARGV[1]) ..
      ',"by_epoch":' .. ARGV[4] .. '}')
  end
  return {'restored', ARGV[4], cur[1] or '', cur[2] or '0'}
end
return {'lost', cur[1], cur[2] or '0'}
