'use strict';
// Benchmark peer: an OCPP 1.6 central system on ocpp-rpc's RPCServer.
// node server.js LISTEN_ADDR PUSH_INTERVAL_MS
// Strict mode (schema validation of every CALL and answer, both ways) is ON for ocpp1.6, as
// ocpp-rpc's README recommends; PEER_STRICT=0 turns it off.

const http = require('http');
const { RPCServer } = require('ocpp-rpc');

const [listen, pushArg] = process.argv.slice(2);
if (!listen || pushArg === undefined) {
    console.error('usage: server.js LISTEN_ADDR PUSH_INTERVAL_MS');
    process.exit(2);
}
const pushMs = Number(pushArg);
const sep = listen.lastIndexOf(':');
const host = listen.slice(0, sep).replace(/^\[|\]$/g, '');
const port = Number(listen.slice(sep + 1));
const strict = process.env.PEER_STRICT !== '0';
const HEARTBEAT_INTERVAL = 300;

let nextTransactionId = 1;
const accepted = () => ({ status: 'Accepted' });
const now = () => new Date().toISOString();

const server = new RPCServer({
    protocols: ['ocpp1.6'],
    strictMode: strict,
});

// Unix time in nanoseconds: Node has no sub-millisecond wall clock, so the monotonic clock
// (process.hrtime) is anchored once, at start, to the instant Date.now() ticks over to a new
// millisecond (within a few microseconds of the wall clock).
const hrtimeAtEpoch = (() => {
    const first = Date.now();
    let ms;
    while ((ms = Date.now()) === first) { /* spin at most 1 ms */ }
    return process.hrtime.bigint() - BigInt(ms) * 1000000n;
})();

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// One DataTransfer CALL every pushMs through client.call(), which waits for the CALLRESULT
// (ocpp-rpc's callConcurrency 1). The stamp is taken as the params are built, right before
// client.call() validates (strict mode), encodes and sends them.
async function push(client) {
    let due = Date.now() + pushMs;
    for (let seq = 1; ; seq++) {
        await sleep(Math.max(0, due - Date.now()));
        if (client.state !== 1 /* OPEN */) return;
        const nanos = process.hrtime.bigint() - hrtimeAtEpoch;
        try {
            await client.call('DataTransfer', {
                vendorId: 'bench',
                messageId: 'ts',
                data: `${seq}:${nanos}`,
            });
        } catch (error) {
            // Timeout (callTimeoutMs, 30 s), CALLERROR, or the socket closed.
            if (client.state !== 1) return;
        }
        due += pushMs;
        if (due < Date.now()) due = Date.now(); // fell behind: missed ticks are dropped
    }
}


server.on('client', (client) => {
    client.handle('BootNotification', () => ({
        status: 'Accepted',
        currentTime: now(),
        interval: HEARTBEAT_INTERVAL,
    }));
    client.handle('Heartbeat', () => ({ currentTime: now() }));
    client.handle('StatusNotification', () => ({}));
    client.handle('MeterValues', () => ({}));
    client.handle('Authorize', () => ({ idTagInfo: accepted() }));
    client.handle('StartTransaction', () => ({
        transactionId: nextTransactionId++,
        idTagInfo: accepted(),
    }));
    client.handle('StopTransaction', () => ({ idTagInfo: accepted() }));
    client.handle('DataTransfer', () => ({ status: 'Accepted' }));
    client.on('error', () => {});
    if (pushMs > 0) push(client);
});
server.on('error', (error) => console.error('server error:', error.message));

// Our own HTTP server (instead of server.listen()) for a listen backlog of 4096.
const httpServer = http.createServer({ noDelay: true }, (req, res) => {
    res.statusCode = 404;
    res.end();
});
httpServer.on('upgrade', server.handleUpgrade);
httpServer.listen({ host, port, backlog: 4096 }, () => {
    console.error(`node-ocpp-rpc peer listening on ${listen}, push every ${pushMs} ms, strict ${strict}`);
});
