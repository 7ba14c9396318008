#!/usr/bin/env python3
"""A bare OCPP 1.6 central system on Python `websockets` with permessage-deflate, for the
interop test of our charge-point side's compression (examples/tests/deflate_interop.rs).

It listens on 127.0.0.1 (a free port), prints `listening <port>` on stdout, accepts one
connection on ocpp1.6 and answers each CALL with a CALLRESULT: a DataTransfer with
{"status": "Accepted", "data": <the request's data>}, anything else with {}. It prints
`extensions <names>` once connected (the negotiated extensions, as websockets sees them) and
exits 0 when the peer closes, or 1 after --timeout seconds.

usage: python3 tests/interop/python_deflate_csms.py [--timeout S]
"""

import argparse
import asyncio
import json
import sys

from websockets.asyncio.server import serve


async def handler(ws):
    names = [extension.name for extension in ws.protocol.extensions]
    print("extensions " + ",".join(names), flush=True)
    async for message in ws:
        call = json.loads(message)
        if call[0] != 2:
            continue
        payload = {}
        if call[2] == "DataTransfer":
            payload = {"status": "Accepted", "data": call[3].get("data", "")}
        await ws.send(json.dumps([3, call[1], payload]))
    print("closed", flush=True)


async def main(timeout):
    done = asyncio.get_running_loop().create_future()

    async def once(ws):
        try:
            await handler(ws)
        finally:
            if not done.done():
                done.set_result(None)

    async with serve(once, "127.0.0.1", 0, subprotocols=["ocpp1.6"], max_size=2**24) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"listening {port}", flush=True)
        await asyncio.wait_for(done, timeout)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=30)
    args = parser.parse_args()
    try:
        asyncio.run(main(args.timeout))
    except asyncio.TimeoutError:
        print("timed out", flush=True)
        sys.exit(1)
