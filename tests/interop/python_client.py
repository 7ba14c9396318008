#!/usr/bin/env python3
"""Interop check: the Python `websockets` client against the running echo server.

Usage: python3 tests/interop/python_client.py ws://127.0.0.1:PORT

Every check runs twice: without compression, then with permessage-deflate (websockets
offers it by default; the run checks that the server accepted it), plus a large
compressible message and invalid UTF-8 inside a compressed message.

Each check prints one line; the script exits 1 on the first mismatch (or any
error) and 0 when every check passed. Needs `websockets` (pinned in
scripts/interop.sh). Every step has a timeout, so a silent server cannot hang it.
"""

import asyncio
import sys

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

STEP_TIMEOUT = 10.0  # seconds per exchange
BIG = 1024 * 1024  # 1 MiB


class Mismatch(Exception):
    pass


def expect(what, got, want):
    if got != want:
        shown_got = got if len(repr(got)) < 200 else f"<{type(got).__name__} of {len(got)}>"
        shown_want = want if len(repr(want)) < 200 else f"<{type(want).__name__} of {len(want)}>"
        raise Mismatch(f"{what}: got {shown_got!r}, want {shown_want!r}")
    print(f"ok   {what}")


async def echo(ws, message, text=None):
    await asyncio.wait_for(ws.send(message, text=text), STEP_TIMEOUT)
    return await asyncio.wait_for(ws.recv(), STEP_TIMEOUT)


def open_connection(url, compression):
    # No keep-alive pings of our own (they would interleave with the ping check).
    return connect(
        url,
        compression=compression,
        ping_interval=None,
        max_size=8 * BIG,
        open_timeout=STEP_TIMEOUT,
        close_timeout=STEP_TIMEOUT,
    )


def check_extensions(ws, compression):
    negotiated = [extension.name for extension in ws.protocol.extensions]
    want = ["permessage-deflate"] if compression else []
    expect(f"negotiated extensions {want}", negotiated, want)


async def exchanges(url, compression):
    async with open_connection(url, compression) as ws:
        check_extensions(ws, compression)
        expect("text echoed as text", await echo(ws, "hello"), "hello")
        unicode = "h\u00e9llo w\u00f6rld \u2713 \u4e2d\u6587 \U0001f600"
        expect("unicode text echoed", await echo(ws, unicode), unicode)
        expect("empty text echoed", await echo(ws, ""), "")
        binary = bytes(range(256)) * 4
        expect("binary echoed as binary", await echo(ws, binary), binary)

        fragments = ["frag", "mented ", "text"]
        expect("fragmented text reassembled", await echo(ws, fragments), "fragmented text")
        # A 4-byte character split across two frames: the server validates UTF-8 across them.
        emoji = "\U0001f600".encode()
        split = [b"a" + emoji[:2], emoji[2:] + b"b"]
        expect("text fragments splitting a character", await echo(ws, split, text=True), "a\U0001f600b")
        parts = [b"\x00\x01", b"\x02", b"\x03\x04\x05"]
        expect("fragmented binary reassembled", await echo(ws, parts), b"\x00\x01\x02\x03\x04\x05")

        big_text = "0123456789abcdef" * (BIG // 16)
        expect("1 MiB text echoed", await echo(ws, big_text), big_text)
        big_binary = bytes(i % 251 for i in range(BIG))
        expect("1 MiB binary echoed", await echo(ws, big_binary), big_binary)
        big_fragments = [big_binary[i : i + 65536] for i in range(0, BIG, 65536)]
        expect("1 MiB binary in 16 fragments echoed", await echo(ws, big_fragments), big_binary)

        if compression:
            # 4 MiB of JSON-like text: about 1% of it on the wire each way.
            meter = '{"timestamp":"2026-11-30T01:00:00Z","value":"1234.5","unit":"Wh"},'
            huge = "[" + meter * (4 * BIG // len(meter)) + "{}]"
            expect("4 MiB compressible text echoed", await echo(ws, huge), huge)
            for i in range(50):
                msg = f'[2,"{i}","Heartbeat",{{}}]' * (i % 7)
                got = await echo(ws, msg)
                if got != msg:
                    raise Mismatch(f"context takeover message {i}: got {got!r}, want {msg!r}")
            print("ok   50 messages with context takeover echoed")

        pong = await asyncio.wait_for(ws.ping(b"are you there"), STEP_TIMEOUT)
        latency = await asyncio.wait_for(pong, STEP_TIMEOUT)
        expect("ping answered by a pong with the same payload", latency >= 0, True)

        await asyncio.wait_for(ws.close(code=1000, reason="bye from python"), STEP_TIMEOUT)
        expect("client close: server echoed code", ws.close_code, 1000)
        expect("client close: server echoed reason", ws.close_reason, "bye from python")


async def protocol_error(url, compression):
    async with open_connection(url, compression) as ws:
        check_extensions(ws, compression)
        # `text=True` sends bytes in a Text frame without checking them: invalid UTF-8 on the wire.
        await asyncio.wait_for(ws.send(b"\xff\xfe invalid", text=True), STEP_TIMEOUT)
        try:
            message = await asyncio.wait_for(ws.recv(), STEP_TIMEOUT)
        except ConnectionClosed as closed:
            code = closed.rcvd.code if closed.rcvd else None
            expect("invalid UTF-8: server closed with 1007", code, 1007)
        else:
            raise Mismatch(f"invalid UTF-8: expected a close, got a message {message!r}")


async def main(url):
    for compression in (None, "deflate"):
        print(f"--   compression={compression}")
        await exchanges(url, compression)
        await protocol_error(url, compression)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    try:
        asyncio.run(main(sys.argv[1]))
    except Mismatch as e:
        print(f"FAIL {e}")
        sys.exit(1)
    except Exception as e:  # a timeout, a refused connection, an unexpected close...
        print(f"FAIL {type(e).__name__}: {e}")
        sys.exit(1)
    print("python websockets client: all checks passed")
