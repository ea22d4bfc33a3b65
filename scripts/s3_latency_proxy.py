#!/usr/bin/env python3
"""An HTTP proxy in front of an S3 store that makes a store on loopback behave like a distant
one: every request waits --delay-ms after its head arrives before it goes on (the round trip to
a store in another zone or region), and with --throttle a fraction of requests is answered
`503 SlowDown` without reaching the store (S3's throttling answer). Benchmarks put it between
the broker and s3s-fs so that the commit interval, upload concurrency, retries and the
coordinator's commit are measured as a real store would make them behave.

Requests on one connection are taken one at a time, as HTTP/1.1 clients that do not pipeline
send them (Shoal's client, boto3); a request body must carry Content-Length (no chunked
bodies), and bodies over --max-body-bytes end the connection.

    python3 scripts/s3_latency_proxy.py --listen 127.0.0.1:9100 --store 127.0.0.1:9000 \
        --delay-ms 50 [--throttle 0.01] [--seed 1]

It prints `ready` once it listens; on SIGTERM or SIGINT it prints one JSON line of counts
(requests, throttled, by method) and exits.
"""

import argparse
import asyncio
import json
import random
import signal
import sys

SLOW_DOWN_BODY = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
                  b"<Message>Please reduce your request rate.</Message></Error>")
SLOW_DOWN = (b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\n"
             b"Content-Length: " + str(len(SLOW_DOWN_BODY)).encode() + b"\r\n\r\n"
             + SLOW_DOWN_BODY)
MAX_HEAD_BYTES = 64 * 1024


def content_length(head):
    """The request's Content-Length (0 when absent); chunked bodies are refused."""
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"transfer-encoding" and b"chunked" in value.lower():
            raise ValueError("chunked request bodies are not supported")
        if name == b"content-length":
            length = int(value.strip())
    return length


class LatencyProxy:
    def __init__(self, store, delay_s, throttle, max_body_bytes, seed):
        self.store = store
        self.delay_s = delay_s
        self.throttle = throttle
        self.max_body_bytes = max_body_bytes
        self.random = random.Random(seed)
        self.counts = {"requests": 0, "throttled": 0, "by_method": {}}

    async def handle(self, client_reader, client_writer):
        loop = asyncio.get_running_loop()
        try:
            store_reader, store_writer = await asyncio.open_connection(*self.store)
        except OSError:
            client_writer.close()
            return
        answers = asyncio.create_task(self.relay(store_reader, client_writer))
        try:
            while True:
                head = await client_reader.readuntil(b"\r\n\r\n")
                arrived = loop.time()
                if len(head) > MAX_HEAD_BYTES:
                    break
                length = content_length(head)
                if length > self.max_body_bytes:
                    break
                body = await client_reader.readexactly(length)
                method = head.split(b" ", 1)[0].decode("ascii", "replace")
                self.counts["requests"] += 1
                self.counts["by_method"][method] = self.counts["by_method"].get(method, 0) + 1
                if self.throttle and self.random.random() < self.throttle:
                    # The store never sees it; the client waits for no earlier answer (no
                    # pipelining), so this answer cannot interleave with the store's.
                    self.counts["throttled"] += 1
                    await asyncio.sleep(max(0.0, arrived + self.delay_s - loop.time()))
                    client_writer.write(SLOW_DOWN)
                    await client_writer.drain()
                    continue
                await asyncio.sleep(max(0.0, arrived + self.delay_s - loop.time()))
                store_writer.write(head + body)
                await store_writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError,
                ValueError):
            pass
        finally:
            store_writer.close()
            answers.cancel()
            client_writer.close()

    @staticmethod
    async def relay(reader, writer):
        try:
            while chunk := await reader.read(1 << 20):
                writer.write(chunk)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()


async def serve(args):
    host, port = args.listen.rsplit(":", 1)
    store_host, store_port = args.store.rsplit(":", 1)
    proxy = LatencyProxy((store_host, int(store_port)), args.delay_ms / 1000, args.throttle,
                         args.max_body_bytes, args.seed)
    server = await asyncio.start_server(proxy.handle, host, int(port), limit=MAX_HEAD_BYTES)
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stopping.set)
    print("ready", flush=True)
    async with server:
        await stopping.wait()
    print(json.dumps(proxy.counts), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen", required=True, help="host:port to listen on")
    ap.add_argument("--store", required=True, help="host:port of the S3 store")
    ap.add_argument("--delay-ms", type=float, default=50)
    ap.add_argument("--throttle", type=float, default=0.0,
                    help="fraction of requests answered 503 SlowDown (0 to 1)")
    ap.add_argument("--max-body-bytes", type=int, default=256 << 20)
    ap.add_argument("--seed", type=int, default=1)
    asyncio.run(serve(ap.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
