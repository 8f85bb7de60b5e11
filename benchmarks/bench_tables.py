"""How the table reader feeds a crowd-size ratings folder to Arrow: one stream over the
files' rows (``_Chain``) beside the library ways of doing it.

On a simulated BIDS dataset of ``--raters`` participants (``simulate --seed 1``, made once
into ``--cache``), each way in a fresh child process, the ways alternated round by round
so that a busy moment of a shared machine falls on all alike:

* ``chain``: the files' rows read by Arrow as one stream over the files' buffers
  (``foundation/tables.py``'s ``_Chain``);
* ``join``: the same bytes joined into one buffer (``b"".join``) for
  ``pyarrow.BufferReader``;
* ``per-file``: one ``pyarrow.csv.read_csv`` per file, the tables concatenated
  (``pyarrow.concat_tables``).

For each: the seconds of ``read_rows`` over the files (read and checked beforehand, as
``load_ratings`` does), the memory the parse adds at its peak (the child's maximum resident
set size less its resident size before the parse), and the seconds of the whole
``load_ratings``. Then the failure path: the same folder with one row of the last file
cut short, the seconds until the message naming its line, beside Arrow alone reporting
the bad row through ``invalid_row_handler`` (its text, not its file or line).

    python benchmarks/bench_tables.py [--raters 2000] [--repeat 5] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

WAYS = ("chain", "join", "per-file")


def _use(way: str) -> None:
    """Make ``foundation.tables`` feed Arrow the ``way`` given (a patch of this process)."""
    import pyarrow as pa

    from sbir_study.foundation import tables

    if way == "join":
        tables._Chain = lambda parts: pa.BufferReader(b"".join(parts))  # type: ignore[misc,assignment]
    elif way == "per-file":
        read_csv = tables._read_csv

        def per_file(pieces, types, sep, quoted, streamed):  # type: ignore[no-untyped-def]
            if len(pieces) == 1:
                return read_csv(pieces, types, sep, quoted, streamed)
            parts = [read_csv([piece], types, sep, quoted, streamed) for piece in pieces]
            return None if any(p is None for p in parts) else pa.concat_tables(parts)

        tables._read_csv = per_file  # type: ignore[assignment]


def _resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def child(way: str, root: Path, task: str) -> dict:
    """One measurement in this (fresh) process."""
    _use(way)
    from sbir_study.foundation.checks import InputError
    from sbir_study.foundation.tables import read_header, read_rows, read_text

    paths = sorted(root.glob("sub-*/beh/*_beh.tsv"))
    if task == "load":
        from sbir_study.analysis import load_ratings

        start = time.perf_counter()
        load_ratings(root)
        return {"seconds": time.perf_counter() - start}
    files = [read_text(path) for path in paths]
    pairs = [(file, read_header(file, "\t", quote=False)) for file in files]
    before = _resident_mib()
    start = time.perf_counter()
    message = ""
    try:
        rows = read_rows(pairs)
        n_rows = len(rows.frame)
    except InputError as error:
        message, n_rows = str(error), 0
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": seconds, "extra_mib": peak - before, "rows": n_rows, "message": message}


def arrow_handler(root: Path) -> dict:
    """Arrow alone over the joined rows, the bad row reported by ``invalid_row_handler``."""
    import pyarrow as pa
    from pyarrow import csv as arrow_csv

    from sbir_study.foundation.tables import read_header, read_text

    paths = sorted(root.glob("sub-*/beh/*_beh.tsv"))
    files = [read_text(path) for path in paths]
    headers = [read_header(file, "\t", quote=False) for file in files]
    bad = []

    def handler(row):  # type: ignore[no-untyped-def]
        bad.append(row)
        return "skip"

    start = time.perf_counter()
    parts = [memoryview(f.data)[h.end : f.end] for f, h in zip(files, headers, strict=True)]
    arrow_csv.read_csv(
        pa.BufferReader(b"".join(parts)),
        read_options=arrow_csv.ReadOptions(column_names=list(headers[0].names)),
        parse_options=arrow_csv.ParseOptions(
            delimiter="\t", quote_char=False, invalid_row_handler=handler
        ),
        convert_options=arrow_csv.ConvertOptions(
            column_types={n: pa.dictionary(pa.int32(), pa.string()) for n in headers[0].names}
        ),
    )
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "rows": len(bad), "message": bad[0].text if bad else ""}


def _run(*arguments: str) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", *arguments],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def _dataset(cache: Path, raters: int) -> Path:
    root = cache / f"bids{raters}"
    if not root.exists():
        sbir_study = str(Path(sys.executable).with_name("sbir-study"))
        subprocess.run(
            [sbir_study, "simulate", "--out", str(root), "--participants", str(raters)]
            + ["--seed", "1"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return root


def _broken(cache: Path, root: Path) -> Path:
    """A copy of ``root`` whose last session file has a row with one field too few."""
    broken = cache / f"{root.name}-broken"
    if not broken.exists():
        shutil.copytree(root, broken)
        last = sorted(broken.glob("sub-*/beh/*_beh.tsv"))[-1]
        lines = last.read_bytes().split(b"\n")
        lines[len(lines) // 2] = lines[len(lines) // 2].rsplit(b"\t", 1)[0]
        last.write_bytes(b"\n".join(lines))
    return broken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raters", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/sbir-bench-tables"))
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        way, root, task = args.child
        result = arrow_handler(Path(root)) if way == "handler" else child(way, Path(root), task)
        print(json.dumps(result))
        return
    args.cache.mkdir(parents=True, exist_ok=True)
    root = _dataset(args.cache, args.raters)
    broken = _broken(args.cache, root)
    size = sum(p.stat().st_size for p in root.glob("sub-*/beh/*_beh.tsv")) / 2**20
    print(f"{args.raters} session files, {size:.0f} MiB; {args.repeat} rounds, alternated\n")
    parse: dict[str, list[dict]] = {way: [] for way in WAYS}
    load: dict[str, list[float]] = {way: [] for way in WAYS}
    fail: dict[str, list[dict]] = {way: [] for way in (*WAYS, "handler")}
    for _ in range(args.repeat):
        for way in WAYS:
            parse[way].append(_run(way, str(root), "parse"))
            load[way].append(_run(way, str(root), "load")["seconds"])
            fail[way].append(_run(way, str(broken), "parse"))
        fail["handler"].append(_run("handler", str(broken), "parse"))
    rows = {parse[way][0]["rows"] for way in WAYS}
    assert len(rows) == 1, rows
    chain = statistics.median(r["seconds"] for r in parse["chain"])
    chain_load = statistics.median(load["chain"])
    chain_fail = statistics.median(r["seconds"] for r in fail["chain"])
    print("| way | read_rows median s | / chain | parse's extra peak MiB | load_ratings median s "
          "| / chain | bad row found, median s | / chain |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for way in WAYS:
        seconds = statistics.median(r["seconds"] for r in parse[way])
        extra = statistics.median(r["extra_mib"] for r in parse[way])
        whole = statistics.median(load[way])
        failed = statistics.median(r["seconds"] for r in fail[way])
        print(
            f"| {way} | {seconds:.3f} | {seconds / chain:.2f} | {extra:.0f} | {whole:.2f} | "
            f"{whole / chain_load:.2f} | {failed:.3f} | {failed / chain_fail:.2f} |"
        )
    handler = statistics.median(r["seconds"] for r in fail["handler"])
    print(
        f"| Arrow + invalid_row_handler (joined rows; no file or line) | - | - | - | - | - | "
        f"{handler:.3f} | {handler / chain_fail:.2f} |"
    )
    print()
    print(f"message (chain): {fail['chain'][0]['message']}")
    print(f"message (per-file): {fail['per-file'][0]['message']}")
    print(f"invalid_row_handler: {fail['handler'][0]['rows']} row(s): "
          f"{fail['handler'][0]['message'][:80]!r}")  # fmt: skip


if __name__ == "__main__":
    main()
