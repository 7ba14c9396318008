-- failover.lua: a node that follows a failover runs this on the new master before anything
-- else. The replication was asynchronous: the new master may lack the old one's last writes
-- (claims, and INCRs of the epoch counter).
-- KEYS[1] = <prefix>:since   KEYS[2] = epoch counter <prefix>:epoch (Sentinel; on Redis Cluster,
-- where a node runs it on the node-level slot when a master with other data serves, KEYS[1]
-- alone: no counter there, PROTOCOL.md 1.2)
-- `since` becomes now: for a claim TTL a missing claim reads as unknown, not as connected
-- nowhere, until the holders have made their claims again (route.lua).
-- The epoch counter is raised to Redis's clock in microseconds, as it is seeded: above every
-- epoch the old master handed out (the counter grows by one per claim, slower than the clock),
-- so that no epoch is handed out twice.
-- Returns 1.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[1], string.format('%.0f', now))
if KEYS[2] then
  local floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if tonumber(redis.call('GET', KEYS[2]) or '0') < floor then
    redis.call('SET', KEYS[2], string.format('%.0f', floor))
  end
end
return 1
