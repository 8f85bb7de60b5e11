"""How the table reader hands a crowd-size ratings folder to Arrow, beside the other ways,
and how soon it names a bad line there.

On a simulated BIDS dataset of ``--raters`` participants (``simulate --seed 1``, made once
into ``--cache``), each way in a fresh child process, the ways alternated round by round
so that a busy moment of a shared machine falls on all alike:

* ``join``: the files' rows joined into one buffer for ``pyarrow.BufferReader`` (what
  ``foundation/tables.py`` does);
* ``chain``: a ``RawIOBase`` stream over the files' buffers, which Arrow reads without
  the joined copy (:class:`Chain`, defined here);
* ``per-file``: one ``pyarrow.csv.read_csv`` per file, the tables concatenated
  (``pyarrow.concat_tables``).

For each: the wall and CPU seconds of ``read_rows`` over the files (read and checked
beforehand, as ``load_ratings`` does), the memory the parse adds at its peak (the child's
maximum resident set size less its resident size before the parse), and the wall seconds
of the whole ``load_ratings``. Then the failure path, on a copy whose last file has a row
cut short: the seconds until the message naming its line, as the reader finds it (the
files Arrow refuses on their own read line by line), beside the line-by-line pass of
every file, and beside Arrow alone reporting the row through ``invalid_row_handler``
(its text only: the row number is known only to a single-threaded parse).

    python benchmarks/bench_tables.py [--raters 2000] [--repeat 3] [--cache DIR]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

WAYS = ("join", "chain", "per-file")
FAILING = ("join", "every line")


class Chain(io.RawIOBase):
    """Several buffers read as one stream."""

    def __init__(self, parts: list[memoryview]) -> None:
        self._parts = parts
        self._index = 0
        self._offset = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        target = memoryview(buffer).cast("B")
        filled = 0
        while filled < len(target) and self._index < len(self._parts):
            part = self._parts[self._index]
            take = min(len(target) - filled, len(part) - self._offset)
            target[filled : filled + take] = part[self._offset : self._offset + take]
            filled += take
            self._offset += take
            if self._offset == len(part):
                self._index, self._offset = self._index + 1, 0
        return filled


def _use(way: str) -> None:
    """Make ``foundation.tables`` read the ``way`` given (a patch of this process)."""
    import pyarrow as pa

    from sbir_study.foundation import tables

    if way == "chain":
        tables._joined = Chain
    elif way == "per-file":
        read_csv = tables._read_csv

        def per_file(pieces, types, sep, quoted, streamed):
            if len(pieces) == 1:
                return read_csv(pieces, types, sep, quoted, streamed)
            parts = [read_csv([piece], types, sep, quoted, streamed) for piece in pieces]
            return None if any(p is None for p in parts) else pa.concat_tables(parts)

        tables._read_csv = per_file
    elif way == "every line":
        tables._refuse_first = lambda *arguments: None


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
    start, cpu = time.perf_counter(), time.process_time()
    message = ""
    try:
        rows = read_rows(pairs)
        n_rows = len(rows.frame)
    except InputError as error:
        message, n_rows = str(error), 0
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "seconds": seconds,
        "cpu": cpu,
        "extra_mib": peak - before,
        "rows": n_rows,
        "message": message,
    }


def arrow_handler(root: Path) -> dict:
    """Arrow alone over the joined rows, the bad row reported by ``invalid_row_handler``."""
    import pyarrow as pa
    from pyarrow import csv as arrow_csv

    from sbir_study.foundation.tables import read_header, read_text

    paths = sorted(root.glob("sub-*/beh/*_beh.tsv"))
    files = [read_text(path) for path in paths]
    headers = [read_header(file, "\t", quote=False) for file in files]
    bad = []

    def handler(row):
        bad.append(row)
        return "skip"

    start, cpu = time.perf_counter(), time.process_time()
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
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {
        "seconds": seconds,
        "cpu": cpu,
        "rows": len(bad),
        "number": bad[0].number if bad else None,
        "message": bad[0].text if bad else "",
    }


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
            [
                sbir_study,
                "simulate",
                "--out",
                str(root),
                "--seed",
                "1",
                "--participants",
                str(raters),
            ],
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
    fail: dict[str, list[dict]] = {way: [] for way in (*FAILING, "handler")}
    for _ in range(args.repeat):
        for way in WAYS:
            parse[way].append(_run(way, str(root), "parse"))
            load[way].append(_run(way, str(root), "load")["seconds"])
        for way in FAILING:
            fail[way].append(_run(way, str(broken), "parse"))
        fail["handler"].append(_run("handler", str(broken), "parse"))
    assert len({parse[way][0]["rows"] for way in WAYS}) == 1
    assert len({fail[way][0]["message"] for way in FAILING}) == 1

    def median(runs: list[dict], key: str) -> float:
        return statistics.median(run[key] for run in runs)

    print(
        "| way | read_rows wall s | / join | CPU s | / join | parse's extra peak MiB | "
        "load_ratings wall s | / join |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for way in WAYS:
        wall, cpu = median(parse[way], "seconds"), median(parse[way], "cpu")
        whole = statistics.median(load[way])
        print(
            f"| {way} | {wall:.2f} | {wall / median(parse['join'], 'seconds'):.2f} | "
            f"{cpu:.2f} | {cpu / median(parse['join'], 'cpu'):.2f} | "
            f"{median(parse[way], 'extra_mib'):.0f} | {whole:.2f} | "
            f"{whole / statistics.median(load['join']):.2f} |"
        )
    print("\n| a row cut short in the last file | wall s | / reader | CPU s | / reader |")
    print("|---|---|---|---|---|")
    names = {
        "join": "the reader: line by line only the files Arrow refuses alone",
        "every line": "line by line, every file",
        "handler": "Arrow alone, invalid_row_handler (no file, no line)",
    }
    for way, name in names.items():
        wall, cpu = median(fail[way], "seconds"), median(fail[way], "cpu")
        print(
            f"| {name} | {wall:.2f} | {wall / median(fail['join'], 'seconds'):.2f} | "
            f"{cpu:.2f} | {cpu / median(fail['join'], 'cpu'):.2f} |"
        )
    print(f"\nThe message: {fail['join'][0]['message']}")
    handler = fail["handler"][0]
    print(
        f"invalid_row_handler: {handler['rows']} row, number {handler['number']}, "
        f"text {handler['message'][:60]!r}"
    )


if __name__ == "__main__":
    main()
