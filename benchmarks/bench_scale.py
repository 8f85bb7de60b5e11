"""``sbir-study analyze`` at crowd scale, from the command line, beside what a user would
otherwise write.

* ``simulate`` (BIDS, or ``--flat``) and ``analyze`` as a user runs them: a fresh
  process each, interpreter start and imports included; peak = the child's maximum
  resident set size (``os.wait4``, as ``/usr/bin/time -v`` reports it);
* the ``--pairwise auto`` switch: tables at sizes around it, time and size on disk;
* in the same run, the ways a user would otherwise do it: reading the BIDS files with
  ``pandas.read_csv`` one file at a time; the all-pairs table with a loop of
  ``scipy.stats.kendalltau`` (timed on a sample of pairs, scaled to all) and written with
  ``DataFrame.to_csv`` (the old ``pairwise_tau.csv``) against Parquet.

    python benchmarks/bench_scale.py [--raters 2000] [--switch 600,700,800,900]
        [--large 10000] [--large-sketches 31]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from bench_analyze import run_usage  # one child process: seconds, peak MiB, CPU seconds

# The console script a user runs, from the same environment.
CLI = [str(Path(sys.executable).with_name("sbir-study"))]


def size_mib(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 2**20


def line(name: str, seconds: float, peak: float | str = "-", note: str = "",
         cpu: float | None = None) -> None:  # fmt: skip
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
    chosen = rng.choice(pairs.participant_a.size, size=min(sample, pairs.participant_a.size),
                        replace=False)  # fmt: skip
    start = time.perf_counter()
    worst = 0.0
    for k in chosen:
        a, b = matrix[pairs.participant_a[k]], matrix[pairs.participant_b[k]]
        both = ~np.isnan(a) & ~np.isnan(b)
        result = scipy.stats.kendalltau(a[both], b[both], method="asymptotic",
                                        alternative="greater")  # fmt: skip
        worst = max(worst, abs(result.pvalue - pairs.pvalue[k]),
                    abs(result.statistic - pairs.statistic[k]))  # fmt: skip
    loop = (time.perf_counter() - start) * pairs.participant_a.size / chosen.size
    n = pairs.participant_a.size
    line(f"inter-user tau_b of one sketch, {len(pairs.participants)} raters ({n:,} pairs): ours",
         ours, "-", "1")  # fmt: skip
    line("the same, loop of scipy.stats.kendalltau (timed on 2,000 pairs, scaled)", loop, "-",
         f"{loop / ours:.0f}x slower; largest difference in tau or p {worst:.1e}")  # fmt: skip
    frame = pd.DataFrame({"sketch_id": pairs.sketch_id,
                          "participant_a": pairs.participants[pairs.participant_a],
                          "participant_b": pairs.participants[pairs.participant_b],
                          "tau_b": pairs.statistic, "p_value": pairs.pvalue,
                          "n_items": pairs.n_items})  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        from sbir_study.analysis.pipeline import _PairwiseWriter

        start = time.perf_counter()
        writer = _PairwiseWriter(Path(folder) / "pairs.parquet")
        writer.write(pairs)
        writer.close()
        parquet = time.perf_counter() - start
        start = time.perf_counter()
        frame.to_csv(Path(folder) / "pairs.csv", index=False)
        csv = time.perf_counter() - start
        line("writing it: Parquet (pairwise_tau.parquet)", parquet, "-",
             f"1; {size_mib(Path(folder) / 'pairs.parquet'):.1f} MiB")  # fmt: skip
        csv_mib = size_mib(Path(folder) / "pairs.csv")
        line("writing it: DataFrame.to_csv (the former pairwise_tau.csv)", csv, "-",
             f"{csv / parquet:.1f}x slower; {csv_mib:.1f} MiB")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raters", dest="participants", type=int, default=2000,
                        help="participants of the simulated study")  # fmt: skip
    parser.add_argument("--switch", default="600,700,800,900")
    parser.add_argument("--large", type=int, default=0, help="also a flat table of this size")
    parser.add_argument("--large-sketches", type=int, default=31)
    args = parser.parse_args()

    print("| run | wall s | CPU s | peak MiB | ratio / note |\n|---|---|---|---|---|")
    print(f"(load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())})")
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for participants in [int(r) for r in args.switch.split(",") if r]:
            table = folder / f"r{participants}.csv"
            run([*CLI, "simulate", "--flat", "--out", str(table), "--participants",
                 str(participants), "--seed", "1"])  # fmt: skip
            out = folder / f"a{participants}"
            seconds, peak, cpu = run(
                [*CLI, "analyze", str(table), "--out", str(out), "--no-figures"]
            )
            written = "written" if (out / "pairwise_tau.parquet").exists() else "summary only"
            note = f"output {size_mib(out):.0f} MiB; pairwise_tau.parquet: {written}"
            line(f"analyze --no-figures, {participants} participants (flat)", seconds, peak, note,
                 cpu=cpu)  # fmt: skip

        bids = folder / "bids"
        seconds, peak, cpu = run([*CLI, "simulate", "--out", str(bids), "--participants",
                             str(args.participants), "--seed", "1"])  # fmt: skip
        line(
            f"simulate, {args.participants} participants, BIDS ({size_mib(bids):.0f} MiB)",
            seconds,
            peak,
            cpu=cpu,
        )
        seconds, peak, cpu = run([*CLI, "analyze", str(bids), "--out", str(folder / "t"),
                             "--no-figures"])  # fmt: skip
        line(
            f"analyze --no-figures, {args.participants} participants, BIDS",
            seconds,
            peak,
            "goal < 15 s",
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
        line("the same with pandas.read_csv per file (unchecked)", theirs, "-",
             f"{theirs / ours:.2f}x the time of load_ratings")  # fmt: skip

        flat = folder / "flat.csv"
        run([*CLI, "simulate", "--flat", "--out", str(flat), "--participants",
             str(args.participants), "--seed", "1"])  # fmt: skip
        pairwise_comparison(flat)

        if args.large:
            large = folder / "large.csv"
            seconds, peak, cpu = run([*CLI, "simulate", "--flat", "--out", str(large),
                                 "--participants", str(args.large), "--sketches",
                                 str(args.large_sketches), "--seed", "1"])  # fmt: skip
            line(f"simulate --flat, {args.large} participants x {args.large_sketches} sketches",
                 seconds, peak, f"{size_mib(large):.0f} MiB", cpu=cpu)  # fmt: skip
            seconds, peak, cpu = run([*CLI, "analyze", str(large), "--out", str(folder / "l"),
                                 "--no-figures"])  # fmt: skip
            line(f"analyze --no-figures, {args.large} participants x {args.large_sketches} "
                 "sketches", seconds, peak, "goal < 90 s, < 8 GiB (31 sketches)",
                 cpu=cpu)  # fmt: skip


if __name__ == "__main__":
    main()
