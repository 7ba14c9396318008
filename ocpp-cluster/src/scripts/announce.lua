-- announce.lua: this node is alive; its record lives one node TTL (seconds) unless announced again.
-- KEYS[1] = node record <prefix>:node:<node>   KEYS[2] = <prefix>:since
-- KEYS[3] = live node set <prefix>:nodes (node id -> Redis time, Unix ms, its record expires)
-- ARGV[1] = node id   ARGV[2] = node TTL in ms   ARGV[3] = address   ARGV[4] = started_ms
-- ARGV[5] = instance
-- ARGV[6] = synced: the `since` this node last registered all its claims under ("" if none yet)
-- A reader (route.lua) counts a node's claims as all in Redis only while its record's synced
-- equals `since`: a node that has not registered its claims again since Redis lost its data
-- makes a missing claim unknown, not connected nowhere.
-- Returns `since` (set now if missing): a node whose synced differs registers its claims again.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[2], string.format('%.0f', now), 'NX')
local since = redis.call('GET', KEYS[2])
local ttl = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'node', ARGV[1], 'address', ARGV[3], 'started_ms', ARGV[4],
  'instance', ARGV[5], 'synced', ARGV[6])
redis.call('PEXPIRE', KEYS[1], string.format('%.0f', ttl))
redis.call('ZADD', KEYS[3], string.format('%.0f', now + ttl), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. string.format('%.0f', now))
return since
