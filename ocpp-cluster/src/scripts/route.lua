-- route.lua: deliver a command for identity X to the node that holds X, in one round trip.
-- KEYS[1] = claim key <prefix>:cp:<identity>
-- One Redis: KEYS[2] = <prefix>:since   KEYS[3] = live node set <prefix>:nodes (announce.lua)
-- Redis Cluster: KEYS[1] alone (a script's keys share a slot; PROTOCOL.md 1.2): the script
-- stops at the claim, and absent.lua or deliver.lua, on the node-level slot, goes on.
-- ARGV[1] = node record prefix <prefix>:node:   ARGV[2] = inbox channel prefix <prefix>:inbox:
-- ARGV[3] = the calling node's id   ARGV[4] = the command message (JSON text)
-- ARGV[5] = the node TTL in ms
-- Returns {"none"}: X is connected nowhere: released, or no claim although Redis has had its
--                   data for a node TTL and every live node has registered its claims since;
--         {"unknown"}: no claim, but Redis started empty (or lost its data) less than a node
--                      TTL ago (a live node may not have announced itself yet), or a live node
--                      has not registered its claims again since: X's holder may be that node;
--         {"unknown", node, epoch}: a claim past its liveness, not released: its node stopped
--                                   refreshing, and may only be stopped;
--         {"self", node, epoch}: the caller holds X by Redis (it runs the command itself);
--         {"dead", node, epoch}: the holder has no live node record;
--         {"unreachable", node, epoch}: the holder's record lives but nobody reads its inbox;
--         {"sent", node, epoch}: published to the holder's inbox, which one subscriber read;
-- and on Redis Cluster, instead of a since check or a delivery:
--         {"absent"}: no claim (absent.lua says whether X is connected nowhere);
--         {"holder", node, epoch}: another node's live claim (deliver.lua publishes to it).
local cur = redis.call('HMGET', KEYS[1], 'node', 'epoch', 'expires_ms')
if cur[1] == '' then
  return {'none'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not cur[1] then
  if not KEYS[2] then
    return {'absent'}
  end
  local since = redis.call('GET', KEYS[2])
  if not since then
    redis.call('SET', KEYS[2], string.format('%.0f', now))
    return {'unknown'}
  end
  if now - tonumber(since) < tonumber(ARGV[5]) then
    return {'unknown'}
  end
  local live = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. string.format('%.0f', now), '+inf')
  for _, node in ipairs(live) do
    if redis.call('HGET', ARGV[1] .. node, 'synced') ~= since then
      return {'unknown'}
    end
  end
  return {'none'}
end
local epoch = cur[2] or '0'
if cur[1] == ARGV[3] then
  return {'self', cur[1], epoch}
end
if cur[3] and tonumber(cur[3]) <= now then
  return {'unknown', cur[1], epoch}
end
if not KEYS[2] then
  return {'holder', cur[1], epoch}
end
if redis.call('EXISTS', ARGV[1] .. cur[1]) == 0 then
  return {'dead', cur[1], epoch}
end
if redis.call('PUBLISH', ARGV[2] .. cur[1], ARGV[4]) == 0 then
  return {'unreachable', cur[1], epoch}
end
return {'sent', cur[1], epoch}
