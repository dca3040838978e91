"""Forward TCP connections from an address on the real node's bridge to the loopback API server.

The API server binds 127.0.0.1 only, so that nothing outside the machine reaches it; pods on
the real node live behind a bridge and cannot reach loopback. The real node's DNAT rule sends
the ``kubernetes`` Service IP to the bridge's own address, where this forwarder listens and
passes the bytes on unchanged: TLS stays end to end between the pod and the API server (whose
certificate covers the Service IP), and the API server sees the forwarder as the client.

    python e2e/localcluster/apiproxy.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT

Standard library only, and runnable by path, so that it starts without the project on
``sys.path``. It runs until SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys

CHUNK = 64 * 1024


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


async def _forward(
    target: tuple[str, int], client_reader: asyncio.StreamReader, client: asyncio.StreamWriter
) -> None:
    try:
        upstream_reader, upstream = await asyncio.open_connection(*target)
    except OSError:
        client.close()
        return
    try:
        await asyncio.gather(_pipe(client_reader, upstream), _pipe(upstream_reader, client))
    finally:
        for writer in (client, upstream):
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()


async def serve(listen: tuple[str, int], target: tuple[str, int]) -> None:
    server = await asyncio.start_server(
        lambda reader, writer: _forward(target, reader, writer), *listen
    )
    print(f"forwarding {listen[0]}:{listen[1]} to {target[0]}:{target[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    listen_host, listen_port, target_host, target_port = argv
    asyncio.run(serve((listen_host, int(listen_port)), (target_host, int(target_port))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
