-- release.lua: the charge point left this node; give X up, only if the claim is still ours.
-- KEYS[1] = claim key <prefix>:cp:<identity>
-- ARGV[1] = node id   ARGV[2] = the epoch the node holds   ARGV[3] = tombstone TTL in ms
-- The claim becomes a tombstone (node "", same epoch) that expires after the TTL, so a node
-- that missed a takeover cannot mistake the released key for a lost one and restore it.
-- Returns 1 if released, 0 if the claim was not ours (any more).
local cur = redis.call('HMGET', KEYS[1], 'node', 'epoch')
if cur[1] == ARGV[1] and cur[2] == ARGV[2] then
  redis.call('HSET', KEYS[1], 'node', '')
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
return 0
