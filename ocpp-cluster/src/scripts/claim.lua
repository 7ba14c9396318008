-- claim.lua: this node takes identities; the newest claim always wins.
-- One Redis: one call per batch of claims (those that waited together; PROTOCOL.md 6.1).
-- Redis Cluster: one call per claim (a script's keys share a slot; PROTOCOL.md 1.2).
-- KEYS[1..n] = the claim keys <prefix>:cp:<identity>, one per claim
-- One Redis: KEYS[n+1] = epoch counter <prefix>:epoch   KEYS[n+2] = <prefix>:since
-- ARGV[1] = claiming node id   ARGV[2] = claim TTL in ms
-- ARGV[3] = inbox channel prefix <prefix>:inbox: ("" on Redis Cluster: the node publishes the
--           superseded message itself, after the script)
-- Claim i (of KEYS[i]): ARGV[2i+2] = identity   ARGV[2i+3] = the connection's OCPP version as
--           its subprotocol ("ocpp1.6"; "" if not recorded)
-- The claim is live until expires_ms (Redis time + TTL); its key lingers twice as long, so that
-- a claim whose node stopped refreshing reads as unknown, not as absent (route.lua).
-- The epoch: one Redis INCRs the counter (seeded from Redis's clock in microseconds when it is
-- missing); Redis Cluster has no key every claim's slot shares, so the epoch is Redis's clock
-- in microseconds, raised above the epoch the key holds if it is not already.
-- Returns one answer per claim, in the order of KEYS: {new epoch, previous node ("" if none or
-- released), previous epoch ("0" if none)}.
local n = math.floor((#ARGV - 3) / 2)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
local counter = KEYS[n + 1]
if counter then
  redis.call('SET', KEYS[n + 2], string.format('%.0f', now), 'NX')
  if redis.call('EXISTS', counter) == 0 then
    redis.call('SET', counter, string.format('%.0f', clock))
  end
end
local ttl = tonumber(ARGV[2])
local answers = {}
for i = 1, n do
  local identity = ARGV[2 * i + 2]
  local old = redis.call('HMGET', KEYS[i], 'node', 'epoch')
  local old_node = old[1] or ''
  local old_epoch = old[2] or '0'
  local epoch
  if counter then
    epoch = string.format('%.0f', redis.call('INCR', counter))
  else
    epoch = string.format('%.0f', math.max(clock, (tonumber(old_epoch) or 0) + 1))
  end
  redis.call('HSET', KEYS[i], 'node', ARGV[1], 'epoch', epoch,
    'expires_ms', string.format('%.0f', now + ttl),
    'version', ARGV[2 * i + 3] or '', 'claimed_ms', string.format('%.0f', now))
  redis.call('PEXPIRE', KEYS[i], string.format('%.0f', 2 * ttl))
  -- Also a claim past its liveness: its node may be stopped, not gone, and still hold the socket.
  if ARGV[3] ~= '' and old_node ~= '' and old_node ~= ARGV[1] then
    redis.call('PUBLISH', ARGV[3] .. old_node,
      '{"type":"superseded","identity":' .. cjson.encode(identity) ..
      ',"epoch":' .. old_epoch .. ',"by_node":' .. cjson.encode(ARGV[1]) ..
      ',"by_epoch":' .. epoch .. '}')
  end
  answers[i] = {epoch, old_node, old_epoch}
end
return answers
