-- route.lua: deliver a command for identity X to the node that holds X, in one round trip.
-- KEYS[1] = claim key <prefix>:cp:<identity>
-- ARGV[1] = node record prefix <prefix>:node:   ARGV[2] = inbox channel prefix <prefix>:inbox:
-- ARGV[3] = the calling node's id   ARGV[4] = the command message (JSON text)
-- Returns {"none"}: no live claim (absent or released);
--         {"self", node, epoch}: the caller holds X by Redis (it runs the command itself);
--         {"dead", node, epoch}: the holder has no live node record;
--         {"unreachable", node, epoch}: the holder's record lives but nobody reads its inbox;
--         {"sent", node, epoch}: published to the holder's inbox, which one subscriber read.
local cur = redis.call('HMGET', KEYS[1], 'node', 'epoch')
if not cur[1] or cur[1] == '' then
  return {'none'}
end
local epoch = cur[2] or '0'
if cur[1] == ARGV[3] then
  return {'self', cur[1], epoch}
end
if redis.call('EXISTS', ARGV[1] .. cur[1]) == 0 then
  return {'dead', cur[1], epoch}
end
if redis.call('PUBLISH', ARGV[2] .. cur[1], ARGV[4]) == 0 then
  return {'unreachable', cur[1], epoch}
end
return {'sent', cur[1], epoch}
