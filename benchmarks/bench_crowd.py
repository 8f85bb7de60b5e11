"""``sbir-study analyze`` at crowd size beside a bare pandas read of the same files.

From the command line, beside what a user would otherwise run.

The ratio (issue 27), in one run: ``analyze --no-figures`` on a simulated study of
``--raters`` participants (a BIDS dataset) and of ``--large`` participants (one flat
table), each beside a fresh process that does only a plain ``pandas.read_csv`` of the
same files and the mean rating and rank of every sketch/image pair (the least a user
without the toolkit would run: :func:`bare_read`), ``--runs`` of each, alternating so
that both see the same load. Goals: within 2x the bare read at 2,000 raters, within 3x
at 10,000. Every run is a fresh process (interpreter start and imports included); peak
= the child's maximum resident set size (``os.wait4``, as ``/usr/bin/time -v``
reports it); user and system CPU seconds apart (system time is page faults of a large
working set, mostly). The studies are simulated once (``--seed 1``) into ``--cache``
and reused.

With ``--extras``, also what the earlier sections of ``RESULTS.md`` measured: the
``--pairwise auto`` switch (``--switch``), ``analyze`` with figures, ``load_ratings``
against one ``read_csv`` per file in-process, and the all-pairs table against a loop
of ``scipy.stats.kendalltau`` and ``DataFrame.to_csv``.

With ``--before DIR`` (a checkout with its own ``.venv``), that checkout's ``sbir-study``
is measured beside this one's, in turn with it and the bare read. With ``--writers``, also
the CSV writers of ``analyze``'s long tables (``consensus_tau.csv``, ...) on the
``--large`` study: ``DataFrame.to_csv`` against ``pyarrow.csv`` (``write_csv``).

    python benchmarks/bench_crowd.py [--raters 2000] [--large 10000] [--runs 5]
        [--cache /tmp/sbir-bench-scale] [--before DIR] [--writers]
        [--extras [--switch 600,700,800,900]]

``python benchmarks/bare_read.py PATH`` is the bare read itself (the child process the
ratio is taken against).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from bench_analyze import run_split, run_usage  # one child: seconds, peak MiB, CPU

# The console script a user runs, from the same environment.
CLI = [str(Path(sys.executable).with_name("sbir-study"))]


def size_mib(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 2**20


def line(
    name: str, seconds: float, peak: float | str = "-", note: str = "", cpu: float | None = None
) -> None:
    peak = f"{peak:.0f}" if isinstance(peak, float) else peak
    cpu_text = "-" if cpu is None else f"{cpu:.1f}"
    print(f"| {name} | {seconds:.1f} | {cpu_text} | {peak} | {note} |", flush=True)


def run(command: list[str]) -> tuple[float, float, float]:
    return run_usage(command)


def read_bids_with_pandas(root: Path) -> float:
    """What a user writes without the toolkit: one read_csv per session file, then concat."""
    start = time.perf_counter()
    frames = []
    for path in sorted(root.glob("sub-*/beh/*_beh.tsv")):
        frame = pd.read_csv(path, sep="\t", dtype={"participant": str}, na_values="n/a")
        frames.append(frame)
    pd.concat(frames, ignore_index=True)
    return time.perf_counter() - start


def pairwise_comparison(table: Path, sketches: int = 1, sample: int = 2000) -> None:
    """One sketch's all-pairs table: ours against a SciPy loop and a pandas CSV."""
    import scipy.stats

    from sbir_study.analysis import inter_user_tau_pairs, load_ratings

    ratings = load_ratings(table)
    ratings = ratings[ratings["phase"] == "main"]
    first = sorted(ratings["sketch_id"].astype(str).unique())[:sketches]
    ratings = ratings[ratings["sketch_id"].astype(str).isin(first)]
    start = time.perf_counter()
    pairs = next(inter_user_tau_pairs(ratings))
    ours = time.perf_counter() - start
    matrix = ratings.pivot(index="participant", columns="image_id", values="rating")
    matrix = matrix.reindex(pairs.participants).to_numpy(dtype=float)
    rng = np.random.default_rng(0)
    chosen = rng.choice(
        pairs.participant_a.size, size=min(sample, pairs.participant_a.size), replace=False
    )
    start = time.perf_counter()
    worst = 0.0
    for k in chosen:
        a, b = matrix[pairs.participant_a[k]], matrix[pairs.participant_b[k]]
        both = ~np.isnan(a) & ~np.isnan(b)
        result = scipy.stats.kendalltau(
            a[both], b[both], method="asymptotic", alternative="greater"
        )
        worst = max(
            worst, abs(result.pvalue - pairs.pvalue[k]), abs(result.statistic - pairs.statistic[k])
        )
    loop = (time.perf_counter() - start) * pairs.participant_a.size / chosen.size
    n = pairs.participant_a.size
    line(
        f"inter-user tau_b of one sketch, {len(pairs.participants)} raters ({n:,} pairs): ours",
        ours,
        "-",
        "1",
    )
    line(
        "the same, loop of scipy.stats.kendalltau (timed on 2,000 pairs, scaled)",
        loop,
        "-",
        f"{loop / ours:.0f}x slower; largest difference in tau or p {worst:.1e}",
    )
    frame = pd.DataFrame(
        {
            "sketch_id": pairs.sketch_id,
            "participant_a": pairs.participants[pairs.participant_a],
            "participant_b": pairs.participants[pairs.participant_b],
            "tau_b": pairs.statistic,
            "p_value": pairs.pvalue,
            "n_items": pairs.n_items,
        }
    )
    with tempfile.TemporaryDirectory() as folder:
        from sbir_study.analysis.table_writers import _PairwiseWriter

        start = time.perf_counter()
        writer = _PairwiseWriter(Path(folder) / "pairs.parquet")
        writer.write(pairs)
        writer.close()
        parquet = time.perf_counter() - start
        start = time.perf_counter()
        frame.to_csv(Path(folder) / "pairs.csv", index=False)
        csv = time.perf_counter() - start
        line(
            "writing it: Parquet (pairwise_tau.parquet)",
            parquet,
            "-",
            f"1; {size_mib(Path(folder) / 'pairs.parquet'):.1f} MiB",
        )
        csv_mib = size_mib(Path(folder) / "pairs.csv")
        line(
            "writing it: DataFrame.to_csv (the former pairwise_tau.csv)",
            csv,
            "-",
            f"{csv / parquet:.1f}x slower; {csv_mib:.1f} MiB",
        )


def cached_study(cache: Path, participants: int, *, flat: bool) -> Path:
    """A simulated study (``--seed 1``), simulated once into ``cache`` and reused."""
    cache.mkdir(parents=True, exist_ok=True)
    study = cache / (f"flat{participants}.csv" if flat else f"bids{participants}")
    if not study.exists():
        run(
            [
                *CLI,
                "simulate",
                *(["--flat"] if flat else []),
                "--out",
                str(study),
                "--participants",
                str(participants),
                "--seed",
                "1",
            ]
        )
    return study


def ratio_rows(name: str, study: Path, runs: int, goal: float, before: Path | None = None) -> None:
    """``runs`` of analyze --no-figures and of the bare read, alternating (with ``before``,
    also the ``sbir-study`` of that checkout, in turn); one row each and the ratio of their
    medians, with its range over the runs' pairs."""
    bare = [sys.executable, str(Path(__file__).with_name("bare_read.py")), str(study)]
    clis = {"analyze --no-figures": CLI}
    if before is not None:
        clis = {"before: analyze --no-figures": [str(before / ".venv/bin/sbir-study")], **clis}
    results: dict[str, list] = {label: [] for label in clis}
    theirs = []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(runs):
            theirs.append(run_split(bare))
            for label, cli in clis.items():
                out = f"{folder}/{len(theirs)}-{len(results[label])}-{label[:6]}"
                results[label].append(
                    run_split([*cli, "analyze", str(study), "--out", out, "--no-figures"])
                )
    for label, result in (*results.items(), ("bare read + consensus", theirs)):
        wall = sorted(r[0] for r in result)
        print(
            f"| {name}: {label} | {wall[0]:.1f}-{wall[-1]:.1f} "
            f"({statistics.median(wall):.1f}) | "
            f"{statistics.median(r[2] for r in result):.1f} | "
            f"{statistics.median(r[3] for r in result):.1f} | "
            f"{min(r[1] for r in result):,.0f}-{max(r[1] for r in result):,.0f} |",
            flush=True,
        )
    for label, ours in results.items():
        ratios = [a[0] / b[0] for a, b in zip(ours, theirs, strict=True)]
        ratio = statistics.median(r[0] for r in ours) / statistics.median(r[0] for r in theirs)
        verdict = "met" if ratio <= goal else "not met"
        print(
            f"| {name}: **ratio**, {label} | {ratio:.2f}x (runs {min(ratios):.2f}-"
            f"{max(ratios):.2f}x) | | | goal <= {goal:g}x: {verdict} |",
            flush=True,
        )


def writer_rows(study: Path, runs: int) -> None:
    """analyze's long tables of ``study`` (analyzed once) written by ``DataFrame.to_csv`` and
    by ``write_csv`` (pyarrow.csv), ``runs`` times each, alternating: wall and CPU seconds."""
    from sbir_study.analysis.table_writers import write_csv

    names = ["consensus_tau.csv", "reliability_prophecy.csv", "anchoring.csv", "participants.csv"]
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "analysis"
        run([*CLI, "analyze", str(study), "--out", str(out), "--no-figures"])
        tables = {n: pd.read_csv(out / n, dtype={"participant": str}) for n in names}
        rows = sum(len(t) for t in tables.values())
        writers = {
            "DataFrame.to_csv": lambda t, path: t.to_csv(path, index=False),
            "pyarrow.csv (write_csv)": write_csv,
        }
        times: dict[str, list[tuple[float, float]]] = {w: [] for w in writers}
        for _ in range(runs):
            for label, writer in writers.items():
                wall, cpu = time.perf_counter(), time.process_time()
                for name, table in tables.items():
                    writer(table, Path(folder) / name)
                times[label].append((time.perf_counter() - wall, time.process_time() - cpu))
    print(
        f"\n| writer of the {rows:,} rows of {', '.join(names)} | wall s | CPU s |\n|---|---|---|"
    )
    for label, result in times.items():
        wall = statistics.median(r[0] for r in result)
        print(f"| {label} | {wall:.2f} | {statistics.median(r[1] for r in result):.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--raters",
        dest="participants",
        type=int,
        default=2000,
        help="participants of the simulated BIDS study",
    )
    parser.add_argument(
        "--large",
        type=int,
        default=10000,
        help="participants of the simulated flat table (0: none)",
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/sbir-bench-scale"))
    parser.add_argument(
        "--extras", action="store_true", help="also the earlier sections' comparisons"
    )
    parser.add_argument("--switch", default="600,700,800,900")
    parser.add_argument(
        "--before",
        type=Path,
        help="a checkout with its own .venv: its sbir-study measured too, alternating",
    )
    parser.add_argument(
        "--writers",
        action="store_true",
        help="also the CSV writers of analyze's long tables, on the --large study",
    )
    args = parser.parse_args()

    print(
        f"(load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; "
        f"{args.runs} runs each, alternating)\n"
    )
    print(
        "| study: run | wall s, range (median) | user CPU s (median) | system CPU s (median) "
        "| peak MiB |\n|---|---|---|---|---|"
    )
    if args.participants:
        bids = cached_study(args.cache, args.participants, flat=False)
        ratio_rows(f"{args.participants:,} raters, BIDS", bids, args.runs, 2.0, args.before)
    if args.large:
        large = cached_study(args.cache, args.large, flat=True)
        ratio_rows(f"{args.large:,} raters, one table", large, args.runs, 3.0, args.before)
        if args.writers:
            writer_rows(large, 3)
    print(f"(load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())})")
    if args.extras and args.participants:
        extras(args, bids)


def extras(args, bids: Path) -> None:
    """The comparisons of the earlier sections of ``RESULTS.md``."""
    print("\n| run | wall s | CPU s | peak MiB | ratio / note |\n|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for participants in [int(r) for r in args.switch.split(",") if r]:
            table = folder / f"r{participants}.csv"
            run(
                [
                    *CLI,
                    "simulate",
                    "--flat",
                    "--out",
                    str(table),
                    "--participants",
                    str(participants),
                    "--seed",
                    "1",
                ]
            )
            out = folder / f"a{participants}"
            seconds, peak, cpu = run(
                [*CLI, "analyze", str(table), "--out", str(out), "--no-figures"]
            )
            written = "written" if (out / "pairwise_tau.parquet").exists() else "summary only"
            note = f"output {size_mib(out):.0f} MiB; pairwise_tau.parquet: {written}"
            line(
                f"analyze --no-figures, {participants} participants (flat)",
                seconds,
                peak,
                note,
                cpu=cpu,
            )

        seconds, peak, cpu = run([*CLI, "analyze", str(bids), "--out", str(folder / "f")])
        line(
            f"analyze with figures, {args.participants} participants, BIDS",
            seconds,
            peak,
            "goal < 30 s",
            cpu=cpu,
        )

        from sbir_study.analysis import load_ratings

        start = time.perf_counter()
        load_ratings(bids)
        ours = time.perf_counter() - start
        theirs = read_bids_with_pandas(bids)
        line(f"reading {args.participants} session files: load_ratings (checked)", ours, "-", "1")
        line(
            "the same with pandas.read_csv per file (unchecked)",
            theirs,
            "-",
            f"{theirs / ours:.2f}x the time of load_ratings",
        )

        flat = folder / "flat.csv"
        run(
            [
                *CLI,
                "simulate",
                "--flat",
                "--out",
                str(flat),
                "--participants",
                str(args.participants),
                "--seed",
                "1",
            ]
        )
        pairwise_comparison(flat)


if __name__ == "__main__":
    main()
