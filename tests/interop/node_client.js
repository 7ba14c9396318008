#!/usr/bin/env node
// Interop check: the Node `ws` client against the running echo server.
//
// Usage: node tests/interop/node_client.js ws://127.0.0.1:PORT
//
// Every check runs twice: without compression, then with permessage-deflate (threshold 0, so
// every message is compressed; the run checks that the server accepted it), plus a large
// compressible message and invalid UTF-8 inside a compressed message.
//
// Each check prints one line; the script exits 1 on the first mismatch (or any error) and 0 when
// every check passed. Needs `ws` from tests/interop/node_modules (scripts/interop.sh runs
// `npm ci` there). Every step has a timeout, so a silent server cannot hang it.
'use strict';

const WebSocket = require('ws');

const STEP_TIMEOUT_MS = 10000;
const BIG = 1024 * 1024; // 1 MiB

class Mismatch extends Error {}

function show(value) {
  if (Buffer.isBuffer(value)) return value.length > 64 ? `<Buffer of ${value.length}>` : `<Buffer ${value.toString('hex')}>`;
  const text = JSON.stringify(value);
  return text !== undefined && text.length > 200 ? `<${typeof value} of ${value.length}>` : text;
}

function expect(what, got, want) {
  const same = Buffer.isBuffer(want) ? Buffer.isBuffer(got) && got.equals(want) : got === want;
  if (!same) throw new Mismatch(`${what}: got ${show(got)}, want ${show(want)}`);
  console.log(`ok   ${what}`);
}

// Resolves with the next `event` of `ws` (its arguments as an array), rejects after a timeout or
// on an error event.
function next(ws, event) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`timed out waiting for '${event}'`)), STEP_TIMEOUT_MS);
    const onEvent = (...args) => done(null, args);
    const onError = (err) => done(err);
    function done(err, args) {
      clearTimeout(timer);
      ws.off(event, onEvent);
      ws.off('error', onError);
      if (err) reject(err);
      else resolve(args);
    }
    ws.on(event, onEvent);
    ws.on('error', onError);
  });
}

function open(url, deflate) {
  const perMessageDeflate = deflate ? { threshold: 0 } : false;
  const ws = new WebSocket(url, { perMessageDeflate, maxPayload: 8 * BIG });
  return next(ws, 'open').then(() => {
    const negotiated = ws.extensions.split(/[;,]/)[0].trim();
    expect(`negotiated extension '${deflate ? 'permessage-deflate' : ''}'`, negotiated, deflate ? 'permessage-deflate' : '');
    return ws;
  });
}

// Sends `parts` as one message (fragmented when there is more than one part) and returns the
// echoed message as [data, isBinary].
async function echo(ws, parts, binary) {
  const reply = next(ws, 'message');
  parts.forEach((part, i) => ws.send(part, { binary, fin: i === parts.length - 1 }));
  return reply;
}

async function expectEcho(ws, what, parts, binary) {
  const [data, isBinary] = await echo(ws, parts, binary);
  if (isBinary !== binary) throw new Mismatch(`${what}: echoed as ${isBinary ? 'binary' : 'text'}`);
  const want = Buffer.concat(parts.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p, 'utf8'))));
  expect(what, data, want);
}

async function exchanges(url, deflate) {
  const ws = await open(url, deflate);
  await expectEcho(ws, 'text echoed as text', ['hello'], false);
  await expectEcho(ws, 'unicode text echoed', ['h\u00e9llo w\u00f6rld \u2713 \u4e2d\u6587 \u{1f600}'], false);
  const binary = Buffer.alloc(1024, 0).map((_, i) => i % 256);
  await expectEcho(ws, 'binary echoed as binary', [binary], true);

  // send(data, { fin: false }) starts a fragmented message; the last part has fin: true.
  await expectEcho(ws, 'fragmented text reassembled', ['frag', 'mented ', 'text'], false);
  const emoji = Buffer.from('\u{1f600}', 'utf8');
  const split = [Buffer.concat([Buffer.from('a'), emoji.subarray(0, 2)]), Buffer.concat([emoji.subarray(2), Buffer.from('b')])];
  await expectEcho(ws, 'text fragments splitting a character', split, false);
  await expectEcho(ws, 'fragmented binary reassembled', [Buffer.from([0, 1]), Buffer.from([2]), Buffer.from([3, 4, 5])], true);

  await expectEcho(ws, '1 MiB text echoed', ['0123456789abcdef'.repeat(BIG / 16)], false);
  const big = Buffer.alloc(BIG).map((_, i) => i % 251);
  await expectEcho(ws, '1 MiB binary echoed', [big], true);
  const pieces = [];
  for (let i = 0; i < BIG; i += 65536) pieces.push(big.subarray(i, i + 65536));
  await expectEcho(ws, '1 MiB binary in 16 fragments echoed', pieces, true);

  if (deflate) {
    const meter = '{"timestamp":"2026-11-30T01:00:00Z","value":"1234.5","unit":"Wh"},';
    await expectEcho(ws, '4 MiB compressible text echoed', [`[${meter.repeat(Math.floor((4 * BIG) / meter.length))}{}]`], false);
    for (let i = 0; i < 50; i++) {
      const msg = `[2,"${i}","Heartbeat",{}]`.repeat(i % 7);
      const [data] = await echo(ws, [msg], false);
      if (data.toString('utf8') !== msg) throw new Mismatch(`context takeover message ${i}: got ${show(data.toString('utf8'))}`);
    }
    console.log('ok   50 messages with context takeover echoed');
  }

  const pong = next(ws, 'pong');
  ws.ping(Buffer.from('are you there'));
  const [pongData] = await pong;
  expect('ping answered by a pong with the same payload', pongData, Buffer.from('are you there'));

  const closed = next(ws, 'close');
  ws.close(1000, 'bye from node');
  const [code, reason] = await closed;
  expect('client close: server echoed code', code, 1000);
  expect('client close: server echoed reason', reason.toString('utf8'), 'bye from node');
}

async function protocolError(url, deflate) {
  const ws = await open(url, deflate);
  const closed = next(ws, 'close');
  // ws does not validate what it sends: a Buffer with binary: false goes out as a Text frame.
  ws.send(Buffer.from([0xff, 0xfe, 0x20, 0x78]), { binary: false });
  const [code] = await closed;
  expect('invalid UTF-8: server closed with 1007', code, 1007);
}

async function main() {
  const url = process.argv[2];
  if (!url || process.argv.length !== 3) {
    console.error('usage: node tests/interop/node_client.js ws://127.0.0.1:PORT');
    process.exit(2);
  }
  try {
    for (const deflate of [false, true]) {
      console.log(`--   permessage-deflate ${deflate ? 'on' : 'off'}`);
      await exchanges(url, deflate);
      await protocolError(url, deflate);
    }
  } catch (err) {
    console.log(`FAIL ${err instanceof Mismatch ? '' : `${err.name}: `}${err.message}`);
    process.exit(1);
  }
  console.log('node ws client: all checks passed');
}

main();
