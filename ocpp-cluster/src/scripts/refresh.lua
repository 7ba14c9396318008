-- refresh.lua: extend each of this node's claims while it is the newest claim of its identity.
-- One Redis: one call per batch of claims (PROTOCOL.md 6.3). Redis Cluster: one call per claim
-- (a script's keys share a slot and the claims spread over the slots; PROTOCOL.md 1.2).
-- KEYS[1..n] = the claim keys <prefix>:cp:<identity>, one per claim
-- One Redis: KEYS[n+1] = <prefix>:since   Redis Cluster: none
-- ARGV[1] = node id   ARGV[2] = claim TTL in ms
-- ARGV[3] = inbox channel prefix <prefix>:inbox: ("" on Redis Cluster: the node publishes the
--           superseded message itself, after the script)
-- Claim i (of KEYS[i]): ARGV[3i+1] = the epoch of this node's claim (as its claim.lua, or a
--           restore, gave it)   ARGV[3i+2] = the connection's OCPP version ("" if not
--           recorded), written back on a restore   ARGV[3i+3] = identity
-- Ownership is the node: a node holds one connection per identity, so any claim by this node
-- is the one its current connection made, also one past its liveness (the node was stopped).
-- Epochs grow with time, across failovers too (failover.lua), so the larger epoch is the
-- newer claim. A claim key that is gone, or that names an older claim (or its release) than
-- ours, lost our claim's write: Redis lost its data, or a failover promoted a replica that
-- had not received it. Ours is made again under its own epoch, and the older claim's node,
-- if another, is told as claim.lua tells it (it closes that connection if it still holds it).
-- Returns one answer per claim, in the order of KEYS:
--         {"held", epoch}: still this node's (under that epoch, raised to ours if older), live
--                          for another TTL;
--         {"restored", epoch, node, node's epoch}: the key was gone or named an older claim
--                              (node "" if none, or released): ours again, under our own
--                              epoch (ARGV[3i+1]);
--         {"lost", node, epoch}: a newer claim (node, epoch) or its release (node "") replaced
--                                ours;
--         {"error", message}: the claim key is not a claim (not a hash): this claim alone
--                             fails, as its own call would, not the batch.
-- Cost, measured (Redis 7.0, 100,000 held claims, tests/refresh.rs; BENCHMARKS.md, issue 38):
-- a call of 1,000 claims runs 3.3 to 3.7 ms in Redis (3.4 to 3.7 us a claim; 8.6 to 10.6 us
-- when each claim is a call of its own: the call's own cost is paid once per batch, as are
-- TIME and since's SET NX). Redis serves nothing else meanwhile: keep batches to a few ms.
local n = (#ARGV - 3) / 3
if n < 1 or n % 1 ~= 0 or #KEYS < n then
  return redis.error_reply('refresh.lua: ' .. #KEYS .. ' keys for ' .. #ARGV .. ' arguments')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if KEYS[n + 1] then
  redis.call('SET', KEYS[n + 1], string.format('%.0f', now), 'NX')
end
local node, inbox = ARGV[1], ARGV[3]
local ttl = tonumber(ARGV[2])
local expires = string.format('%.0f', now + ttl)
local keep = string.format('%.0f', 2 * ttl)
local claimed = string.format('%.0f', now)
local answers = {}
for i = 1, n do
  local key, ours = KEYS[i], ARGV[3 * i + 1]
  local mine = tonumber(ours)
  local cur = redis.pcall('HMGET', key, 'node', 'epoch')
  if cur.err then
    answers[i] = {'error', cur.err}
  elseif cur[1] == node then
    -- An older epoch of ours (restored by a refresh of an earlier connection that ran late)
    -- becomes the current connection's.
    local held = cur[2] or '0'
    if tonumber(held) < mine then
      held = ours
      redis.call('HSET', key, 'epoch', held)
    end
    redis.call('HSET', key, 'expires_ms', expires)
    redis.call('PEXPIRE', key, keep)
    answers[i] = {'held', held}
  elseif not cur[1] or tonumber(cur[2] or '0') < mine then
    redis.call('HSET', key, 'node', node, 'epoch', ours, 'expires_ms', expires,
      'version', ARGV[3 * i + 2] or '', 'claimed_ms', claimed)
    redis.call('PEXPIRE', key, keep)
    if inbox ~= '' and cur[1] and cur[1] ~= '' then
      redis.call('PUBLISH', inbox .. cur[1],
        '{"type":"superseded","identity":' .. cjson.encode(ARGV[3 * i + 3]) ..
        ',"epoch":' .. (cur[2] or '0') .. ',"by_node":' .. cjson.encode(node) ..
        ',"by_epoch":' .. ours .. '}')
    end
    answers[i] = {'restored', ours, cur[1] or '', cur[2] or '0'}
  else
    answers[i] = {'lost', cur[1], cur[2] or '0'}
  end
end
return answers
