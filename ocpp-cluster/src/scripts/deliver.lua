-- deliver.lua (Redis Cluster, PROTOCOL.md 1.2): route.lua found X held by another node, live;
-- publish the command to that node's inbox, a sharded channel in the slot of its node record.
-- KEYS[1] = the holder's node record {<prefix>}:node:<node>
-- ARGV[1] = the holder's inbox {<prefix>}:inbox:<node>   ARGV[2] = the command message (JSON)
-- Returns {"dead"}: the holder has no live node record;
--         {"unreachable"}: its record lives but nobody reads its inbox;
--         {"sent"}: published to its inbox, which one subscriber read.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'dead'}
end
if redis.call('SPUBLISH', ARGV[1], ARGV[2]) == 0 then
  return {'unreachable'}
end
return {'sent'}
