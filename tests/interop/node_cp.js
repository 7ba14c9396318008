#!/usr/bin/env node
// Interop check: a charge point built on the npm `ocpp-rpc` library's RPCClient against
// mio-server.
//
// usage: node node_cp.js WS_URL --admin HTTP_URL [--version 1.6|2.0.1|2.1] [--identity ID]
//                        [--no-strict] [--timeout S]
//
//   WS_URL   base URL of the CSMS, e.g. ws://127.0.0.1:9000/ocpp (ocpp-rpc appends the identity)
//   --admin  base URL of mio-server's admin API, e.g. http://127.0.0.1:9001
//
// Connects with protocols ['ocpp1.6'] (or ['ocpp2.0.1'], ['ocpp2.1']) in strict mode (every message, both
// ways, validated against ocpp-rpc's OCPP JSON schemas; --no-strict turns that off), then:
//   * BootNotification: expects status Accepted and an interval > 0
//   * Heartbeat: expects currentTime, an ISO 8601 date-time
//   * StatusNotification: expects a (schema-valid) empty CALLRESULT
//   * Reset down through the admin API (POST /chargepoints/ID/call/Reset), answered by
//     client.handle('Reset', ...): checks the handler got the posted payload and the HTTP 200
//     body carries its answer; then a command with no handler (ClearCache) must come back as
//     a 502 CALLERROR NotImplemented.
// Exits 0 on success; 1 with a `FAIL: ...` line on any mismatch; 2 on a usage error. The
// whole run is bounded by --timeout (default 20 s).
'use strict';

const { RPCClient } = require('ocpp-rpc');

const HTTP_TIMEOUT_MS = 10000;

function usage(message) {
  console.error(`node_cp.js: ${message}`);
  console.error('usage: node node_cp.js WS_URL --admin HTTP_URL [--version 1.6|2.0.1|2.1] [--identity ID] [--no-strict] [--timeout S]');
  process.exit(2);
}

function parseArgs(argv) {
  const args = { version: '1.6', strict: true, timeout: 20, identity: undefined, admin: undefined, url: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--admin') args.admin = value();
    else if (a === '--version') args.version = value();
    else if (a === '--identity') args.identity = value();
    else if (a === '--timeout') args.timeout = Number(value());
    else if (a === '--no-strict') args.strict = false;
    else if (a.startsWith('-')) usage(`unknown option ${a}`);
    else if (args.url === undefined) args.url = a;
    else usage(`unexpected argument ${a}`);
  }
  if (!args.url) usage('WS_URL is required');
  if (!args.admin) usage('--admin is required');
  if (!['1.6', '2.0.1', '2.1'].includes(args.version)) usage(`unsupported version ${args.version}`);
  if (!(args.timeout > 0)) usage('--timeout must be a positive number');
  args.identity = args.identity || `node${args.version.replace(/\./g, '')}-${process.pid}`;
  return args;
}

class Failure extends Error {}

function check(condition, message) {
  if (!condition) throw new Failure(message);
}

function checkDateTime(value, what) {
  check(typeof value === 'string', `${what}: expected a date-time string, got ${JSON.stringify(value)}`);
  check(
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value) && !Number.isNaN(Date.parse(value)),
    `${what}: not an ISO 8601 date-time: ${JSON.stringify(value)}`,
  );
}

// Deep equality for JSON values (key order does not matter).
function jsonEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && jsonEqual(a[k], b[k]));
}

async function adminPost(admin, identity, action, payload) {
  const url = `${admin}/chargepoints/${encodeURIComponent(identity)}/call/${action}`;
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(payload),
    signal: AbortSignal.timeout(HTTP_TIMEOUT_MS),
  });
  const text = await response.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch (e) {
    throw new Failure(`POST ${url}: HTTP ${response.status} with a body that is not JSON: ${JSON.stringify(text)}`);
  }
  return { status: response.status, body };
}

async function main(args) {
  const admin = args.admin.replace(/\/+$/, '');
  const protocol = `ocpp${args.version}`;
  const received = [];
  const client = new RPCClient({
    endpoint: args.url.replace(/\/+$/, ''),
    identity: args.identity,
    protocols: [protocol],
    strictMode: args.strict,
    reconnect: false,
    callTimeoutMs: 5000,
  });
  const v16 = args.version === '1.6';
  const resetAnswer = v16 ? { status: 'Accepted' } : { status: 'Scheduled' };
  client.handle('Reset', ({ params }) => {
    received.push({ method: 'Reset', params });
    return resetAnswer;
  });
  // Messages that do not conform (strict mode) or cannot be parsed are failures.
  const problems = [];
  client.on('badMessage', ({ buffer, error }) => problems.push(`bad message ${buffer}: ${error && error.message}`));
  client.on('strictValidationFailure', ({ message, error }) => problems.push(`strict validation failed on ${JSON.stringify(message)}: ${error && error.message}`));
  let closedEarly = null;
  client.on('close', ({ code, reason }) => {
    closedEarly = closedEarly || `code ${code} reason ${JSON.stringify(String(reason || ''))}`;
  });

  console.log(`ocpp-rpc ${args.version}: connecting to ${args.url}/${args.identity} (${protocol}, strictMode ${args.strict})`);
  await client.connect();
  check(client.protocol === protocol, `handshake: subprotocol ${JSON.stringify(client.protocol)}, expected ${protocol}`);

  const bootParams = v16
    ? { chargePointVendor: 'ACME', chargePointModel: 'OcppRpc-16' }
    : { chargingStation: { vendorName: 'ACME', model: `OcppRpc-${args.version.replace(/\./g, '')}` }, reason: 'PowerUp' };
  const boot = await client.call('BootNotification', bootParams);
  check(boot.status === 'Accepted', `BootNotification: status ${JSON.stringify(boot.status)}, expected Accepted`);
  check(Number.isInteger(boot.interval) && boot.interval > 0, `BootNotification: interval ${JSON.stringify(boot.interval)}`);
  checkDateTime(boot.currentTime, 'BootNotification currentTime');
  console.log(`  BootNotification: ${boot.status} interval=${boot.interval}`);

  const beat = await client.call('Heartbeat', {});
  checkDateTime(beat.currentTime, 'Heartbeat currentTime');
  console.log(`  Heartbeat: currentTime=${beat.currentTime}`);

  const statusParams = v16
    ? { connectorId: 1, errorCode: 'NoError', status: 'Available' }
    : { timestamp: new Date().toISOString(), connectorStatus: 'Available', evseId: 1, connectorId: 1 };
  const status = await client.call('StatusNotification', statusParams);
  check(jsonEqual(status, {}), `StatusNotification: expected an empty result, got ${JSON.stringify(status)}`);
  console.log('  StatusNotification: ok');

  // A command down through the admin API, answered by the Reset handler.
  const resetParams = v16 ? { type: 'Soft' } : { type: 'Immediate' };
  const reset = await adminPost(admin, args.identity, 'Reset', resetParams);
  check(reset.status === 200, `Reset: admin API answered HTTP ${reset.status}, expected 200: ${JSON.stringify(reset.body)}`);
  check(reset.body.action === 'Reset', `Reset: admin body names action ${JSON.stringify(reset.body.action)}`);
  check(jsonEqual(reset.body.result, resetAnswer), `Reset: admin body result ${JSON.stringify(reset.body.result)}, expected ${JSON.stringify(resetAnswer)}`);
  check(received.length === 1, `Reset: the charge point handled ${received.length} commands, expected 1`);
  check(jsonEqual(received[0].params, resetParams), `Reset: the charge point received ${JSON.stringify(received[0].params)}, expected ${JSON.stringify(resetParams)}`);
  console.log(`  Reset down: charge point got ${JSON.stringify(received[0].params)}, admin API answered ${JSON.stringify(reset.body.result)}`);

  // A command with no handler: ocpp-rpc answers CALLERROR NotImplemented, the admin API 502.
  const clear = await adminPost(admin, args.identity, 'ClearCache', {});
  check(clear.status === 502, `ClearCache (unhandled): admin API answered HTTP ${clear.status}, expected 502: ${JSON.stringify(clear.body)}`);
  const code = clear.body.error && clear.body.error.code;
  check(code === 'NotImplemented', `ClearCache (unhandled): CALLERROR code ${JSON.stringify(code)}, expected NotImplemented: ${JSON.stringify(clear.body)}`);
  console.log(`  ClearCache down (no handler): 502 ${code}`);

  check(problems.length === 0, problems.join('; '));
  check(closedEarly === null, `the connection closed during the scenario: ${closedEarly}`);
  await client.close({ code: 1000, awaitPending: true });
}

const args = parseArgs(process.argv.slice(2));
const deadline = setTimeout(() => {
  console.error(`FAIL: ocpp-rpc ${args.version}: timed out after ${args.timeout} s`);
  process.exit(1);
}, args.timeout * 1000);
main(args).then(
  () => {
    clearTimeout(deadline);
    console.log(`ocpp-rpc ${args.version}: all checks passed`);
    process.exit(0);
  },
  (e) => {
    clearTimeout(deadline);
    const detail = e instanceof Failure ? e.message : `${e && e.name}: ${e && e.message}${e && e.details ? ` ${JSON.stringify(e.details)}` : ''}`;
    console.error(`FAIL: ocpp-rpc ${args.version}: ${detail}`);
    process.exit(1);
  },
);
