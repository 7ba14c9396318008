-- claim.lua: this node takes identity X; the newest claim always wins.
-- KEYS[1] = claim key <prefix>:cp:<identity>
-- One Redis: KEYS[2] = epoch counter <prefix>:epoch   KEYS[3] = <prefix>:since
-- Redis Cluster: KEYS[1] alone (a script's keys share a slot; PROTOCOL.md 1.2).
-- ARGV[1] = claiming node id   ARGV[2] = claim TTL in ms
-- ARGV[3] = inbox channel prefix <prefix>:inbox: ("" on Redis Cluster: the node publishes the
--           superseded message itself, after the script)   ARGV[4] = identity
-- ARGV[5] = the connection's OCPP version as its subprotocol ("ocpp1.6"; "" if not recorded)
-- The claim is live until expires_ms (Redis time + TTL); its key lingers twice as long, so that
-- a claim whose node stopped refreshing reads as unknown, not as absent (route.lua).
-- The epoch: one Redis INCRs the counter (seeded from Redis's clock in microseconds when it is
-- missing); Redis Cluster has no key every claim's slot shares, so the epoch is Redis's clock
-- in microseconds, raised above the epoch the key holds if it is not already.
-- Returns {new epoch, previous node ("" if none or released), previous epoch ("0" if none)}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
local old = redis.call('HMGET', KEYS[1], 'node', 'epoch')
local old_node = old[1] or ''
local old_epoch = old[2] or '0'
local epoch
if KEYS[2] then
  redis.call('SET', KEYS[3], string.format('%.0f', now), 'NX')
  if redis.call('EXISTS', KEYS[2]) == 0 then
    redis.call('SET', KEYS[2], string.format('%.0f', clock))
  end
  epoch = string.format('%.0f', redis.call('INCR', KEYS[2]))
else
  epoch = string.format('%.0f', math.max(clock, (tonumber(old_epoch) or 0) + 1))
end
local ttl = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'node', ARGV[1], 'epoch', epoch,
  'expires_ms', string.format('%.0f', now + ttl),
  'version', ARGV[5] or '', 'claimed_ms', string.format('%.0f', now))
redis.call('PEXPIRE', KEYS[1], string.format('%.0f', 2 * ttl))
-- Also a claim past its liveness: its node may be stopped, not gone, and still hold the socket.
if ARGV[3] ~= '' and old_node ~= '' and old_node ~= ARGV[1] then
  redis.call('PUBLISH', ARGV[3] .. old_node,
    '{"type":"superseded","identity":' .. cjson.encode(ARGV[4]) ..
    ',"epoch":' .. old_epoch .. ',"by_node":' .. cjson.encode(ARGV[1]) ..
    ',"by_epoch":' .. epoch .. '}')
end
return {epoch, old_node, old_epoch}
