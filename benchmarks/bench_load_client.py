"""The load client's HTTP library: CPU per request of httpx and aiohttp, side by side.

The online load benchmark (bench_online.py) runs its simulated participants in client
processes on the machine that runs the server; what the clients spend is taken from the
server. This measures what a client pays per request with each library, against one
trivial server (an ASGI app under uvicorn that answers every POST with a small JSON
body, the shape of a trial's answer), the same requests, in one run, alternated: each
client process sends ``--requests`` POSTs of a trial-sized JSON body, ``--connections``
at a time over keep-alive connections, and reports its own CPU time.

    python benchmarks/bench_load_client.py [--requests 6000] [--connections 10,100,300]
        [--runs 2]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SERVER = textwrap.dedent(
    """
    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 201,
                    "headers": [(b"content-type", b"application/json"),
                                (b"server-timing", b"app;dur=0.1")]})
        await send({"type": "http.response.body", "body": b'{"stored": true}'})
    """
)

CLIENT = textwrap.dedent(
    """
    import asyncio, json, sys, time

    library, url = sys.argv[1], sys.argv[2]
    requests, connections = int(sys.argv[3]), int(sys.argv[4])
    body = {"sketch_id": "s01", "image_id": "s01_i07", "onset": 13.0, "blank_onset": 15.0,
            "next_onset": 16.0, "session_start": 9.0, "frames": [13.0, 15.0, 16.0],
            "events": [{"code": "Digit4", "key": "4", "t": 13.8}], "paused_before": 0.0,
            "rating": 4}
    headers = {"Authorization": "Bearer " + "t" * 43}

    async def with_httpx():
        import httpx
        limits = httpx.Limits(max_connections=connections + 10,
                              max_keepalive_connections=connections)
        async with httpx.AsyncClient(limits=limits, timeout=60.0) as client:
            gate = asyncio.Semaphore(connections)
            async def one(k):
                async with gate:
                    answer = await client.put(url, json=body, headers=headers)
                    assert answer.status_code == 201
                    answer.json()
            await asyncio.gather(*(one(k) for k in range(requests)))

    async def with_aiohttp():
        import aiohttp
        connector = aiohttp.TCPConnector(limit=connections + 10)
        async with aiohttp.ClientSession(connector=connector) as client:
            gate = asyncio.Semaphore(connections)
            async def one(k):
                async with gate:
                    async with client.put(url, json=body, headers=headers) as answer:
                        assert answer.status == 201
                        json.loads(await answer.text())
            await asyncio.gather(*(one(k) for k in range(requests)))

    cpu, wall = time.process_time(), time.perf_counter()
    asyncio.run(with_httpx() if library == "httpx" else with_aiohttp())
    print(time.process_time() - cpu, time.perf_counter() - wall)
    """
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--connections", default="10,100,300")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="sbir-bench-client-"))
    (folder / "app.py").write_text(SERVER)
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "app:app",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--no-access-log",
            "--backlog",
            "2048",
        ],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(folder)},
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/api/sessions/1/trials/1"
        print(
            f"{args.requests} PUTs per client process, one trivial uvicorn server; "
            "client CPU per request (ms), each run"
        )
        print("| connections | httpx (ms CPU / request) | aiohttp (ms CPU / request) | ratio |")
        print("|---|---|---|---|")
        for connections in [int(c) for c in args.connections.split(",")]:
            spent = {"httpx": [], "aiohttp": []}
            for _ in range(args.runs):
                for library in ("httpx", "aiohttp"):
                    done = subprocess.run(
                        [
                            sys.executable,
                            "-c",
                            CLIENT,
                            library,
                            url,
                            str(args.requests),
                            str(connections),
                        ],
                        capture_output=True,
                        text=True,
                        check=False,
                    )
                    if done.returncode != 0:
                        sys.exit(f"{library} client, {connections} connections:\n{done.stderr}")
                    cpu = float(done.stdout.split()[0])
                    spent[library].append(1000 * cpu / args.requests)
            ratio = min(spent["httpx"]) / min(spent["aiohttp"])
            print(
                f"| {connections} | {', '.join(f'{v:.3f}' for v in spent['httpx'])} | "
                f"{', '.join(f'{v:.3f}' for v in spent['aiohttp'])} | {ratio:.1f}x |"
            )
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
