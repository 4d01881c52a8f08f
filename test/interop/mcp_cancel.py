"""Cancels a call to toolbridge's /mcp with the Python `mcp` client (test/mcp.cancel.test.ts).

    python mcp_cancel.py <url> <mode>

Asks the `wait` tool how many cancellations it has seen, starts a call to it
(it answers after 10 s unless its caller cancels it), cancels the task that
awaits it once it has run half a second, then asks again until the count
changes (10 s at most), and prints both counts.
"""
import asyncio
import sys

from mcp import Client


async def seen(client: Client) -> int:
    return int((await client.call_tool("wait", {"count": True})).content[0].text)


async def main(url: str, mode: str) -> None:
    async with Client(url, mode=mode) as client:
        before = await seen(client)
        call = asyncio.create_task(client.call_tool("wait", {}))
        await asyncio.sleep(0.5)
        call.cancel()
        try:
            await call
        except asyncio.CancelledError:
            pass
        after = before
        for _ in range(200):
            after = await seen(client)
            if after != before:
                break
            await asyncio.sleep(0.05)
        print(before, after, flush=True)


asyncio.run(main(sys.argv[1], sys.argv[2]))
