-- release.lua: charge points left this node; give each up, only if its claim is still ours.
-- One Redis: one call per batch of releases (those that waited together, or a drain's).
-- Redis Cluster: one call per claim (a script's keys share a slot; PROTOCOL.md 1.2).
-- KEYS[1..n] = the claim keys <prefix>:cp:<identity>, one per claim
-- ARGV[1] = node id   ARGV[2] = tombstone TTL in ms
-- Claim i (of KEYS[i]): ARGV[i+2] = the epoch the node holds
-- A claim released becomes a tombstone (node "", same epoch) that expires after the TTL, so a
-- node that missed a takeover cannot mistake the released key for a lost one and restore it.
-- Returns one answer per claim, in the order of KEYS: 1 if released (now, or already: the
-- key is the tombstone of that epoch, which a key holds for one claim only, so an earlier
-- release of this node's made it, such as a give-back of a refresh round that ran meanwhile),
-- 0 if the claim was not ours (any more).
local answers = {}
for i, key in ipairs(KEYS) do
  local cur = redis.call('HMGET', key, 'node', 'epoch')
  if cur[1] == ARGV[1] and cur[2] == ARGV[i + 2] then
    redis.call('HSET', key, 'node', '')
    redis.call('PEXPIRE', key, ARGV[2])
    answers[i] = 1
  elseif cur[1] == '' and cur[2] == ARGV[i + 2] then
    answers[i] = 1
  else
    answers[i] = 0
  end
end
return answers
