"""
A closed loop through TrustGraph's own RequestResponseClient (and its own
pub/sub backend), for bench/trustgraph-client.bench.ts: N callers, each
sending its next tool request as soon as the previous answer arrives; a
warm-up, then a fixed duration. Every answer is checked against --expect.

Prints one JSON line:
  {"requests": n, "seconds": s, "reqPerSec": r, "p50Ms": ..., "p99Ms": ..., "errors": e}
"""

import argparse
import asyncio
import json
import os
import sys
import time

from trustgraph.base.pubsub import get_async_pubsub
from trustgraph.base.request_response_client import RequestResponseClient
from trustgraph.schema import ToolServiceRequest, ToolServiceResponse


def nearest_rank(sorted_ms, p):
    if not sorted_ms:
        return float("nan")
    return sorted_ms[min(len(sorted_ms) - 1, max(0, -(-p * len(sorted_ms) // 100) - 1))]


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="rabbitmq")
    parser.add_argument("--rabbitmq-host", default="127.0.0.1")
    parser.add_argument("--pulsar-host", default="pulsar://127.0.0.1:6650")
    parser.add_argument("--pulsar-admin-url", default="http://127.0.0.1:8081")
    parser.add_argument("--request-queue", required=True)
    parser.add_argument("--response-queue", required=True)
    parser.add_argument("--config", default="{}")
    parser.add_argument("--arguments", default="{}")
    parser.add_argument("--expect", required=True)
    parser.add_argument("--in-flight", type=int, default=1)
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--seconds", type=float, default=3)
    args = parser.parse_args()

    backend = get_async_pubsub(
        pubsub_backend=args.backend,
        rabbitmq_host=args.rabbitmq_host,
        pulsar_host=args.pulsar_host,
        pulsar_admin_url=args.pulsar_admin_url,
    )
    client = await RequestResponseClient.create(
        backend=backend,
        request_topic=args.request_queue,
        response_topic=args.response_queue,
        request_schema=ToolServiceRequest,
        response_schema=ToolServiceResponse,
    )
    request = ToolServiceRequest(config=args.config, arguments=args.arguments)
    # The first answer may take long (a worker thread starting): outside the timing.
    first = await client.request(request, timeout=60)
    if first.error is not None or first.response != args.expect:
        raise SystemExit(f"unexpected first answer: {first.response!r} {first.error!r}")

    latencies = []
    errors = 0
    started = time.perf_counter()
    measure_from = started + args.warmup
    stop_at = measure_from + args.seconds

    async def caller():
        nonlocal errors
        while True:
            t0 = time.perf_counter()
            if t0 >= stop_at:
                return
            try:
                resp = await client.request(request, timeout=10)
                ok = resp.error is None and resp.response == args.expect
            except Exception:
                ok = False
            t1 = time.perf_counter()
            if t0 >= measure_from and t1 <= stop_at:
                if ok:
                    latencies.append((t1 - t0) * 1000)
                else:
                    errors += 1

    try:
        await asyncio.gather(*(caller() for _ in range(args.in_flight)))
    finally:
        await client.close()
    latencies.sort()
    print(
        json.dumps(
            {
                "requests": len(latencies),
                "seconds": args.seconds,
                "reqPerSec": len(latencies) / args.seconds,
                "p50Ms": nearest_rank(latencies, 50),
                "p99Ms": nearest_rank(latencies, 99),
                "errors": errors,
            }
        )
    )
    sys.stdout.flush()


asyncio.run(main())
# Skip the interpreter's teardown: TrustGraph's Pulsar client (a C++ extension)
# now and then aborts there, after the result is out.
os._exit(0)
