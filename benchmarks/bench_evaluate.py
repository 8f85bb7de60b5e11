"""Scoring a large retrieval run, and the mass-based distance, against what a user would
otherwise run, in one process.

1. A TREC run of 31 sketches each ranking a 101,240-image collection (3.1 million
   lines), scored against a 31 x 40 ground truth, parsing included:
   * analysis: load_run + every measure (tau_b, nDCG, nDCG@k, P@k, AP, R-precision,
     SHREC's, average rank, PR curve),
   * pytrec_eval-terrier: pytrec_eval.parse_run + RelevanceEvaluator(ndcg, ndcg_cut.10,
     P.10, map, Rprec) on graded and binary qrels,
   * ranx: Run.from_file + evaluate (the same measures), best of fewer repeats.
   The values must agree (checked) and analysis be at least as fast as pytrec_eval.
   Beside it, load_run with the plain ranking (one lexsort of every row by sketch,
   decreasing score and decreasing image id) in place of its kernel, which finds the
   positions of the judged images only (equal ranks, checked).
2. m_p over a reference set of 10,000 vectors of 500 dimensions: sbir_study.analysis.mass_based
   (columns sorted once, binary search) against the direct count of the definition
   (every reference value compared per pair and dimension); goal at least 50x faster.

    python benchmarks/bench_evaluate.py [--images 101240] [--repeat 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.analysis.retrieval import runs as run_module
from sbir_study.analysis.retrieval.distances import mass_based
from sbir_study.analysis.retrieval.evaluation import EvaluationOptions, score_run
from sbir_study.analysis.retrieval.runs import ground_truth_from_frame, load_run


def best_of(function, repeat: int) -> tuple[float, float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), float(np.median(times)), result


def write_benchmark(folder: Path, sketches: int, images: int, judged: int, seed: int = 2011):
    rng = np.random.default_rng(seed)
    names = np.array([f"img{i:06d}" for i in range(images)], dtype=object)
    truth_rows, qrels_lines, binary_lines = [], [], []
    with (folder / "run.txt").open("w") as stream:
        for s in range(sketches):
            sketch = f"s{s:02d}"
            chosen = rng.choice(images, judged, replace=False)
            mean = np.round(rng.uniform(1, 7, judged), 4)
            for image, m in zip(names[chosen], mean, strict=True):
                truth_rows.append((sketch, image, m))
                grade = 7 - int(np.floor(m + 0.5))
                qrels_lines.append(f"{sketch} 0 {image} {grade}\n")
                binary_lines.append(f"{sketch} 0 {image} {int(m < 3.5)}\n")
            score = rng.random(images)
            score[chosen] += (7 - mean) / 6  # judged images score by their consensus, noisily
            score = np.round(score, 6)  # and some scores tie
            order = np.lexsort((-np.arange(images), -score))
            stream.writelines(
                f"{sketch} Q0 {names[i]} {r} {score[i]:.6f} bench\n"
                for r, i in enumerate(order, start=1)
            )
    (folder / "graded.qrels").write_text("".join(qrels_lines))
    (folder / "binary.qrels").write_text("".join(binary_lines))
    return pd.DataFrame(truth_rows, columns=["sketch_id", "image_id", "mean_rating"])


def ours(folder: Path, truth):
    ranking = load_run(folder / "run.txt", truth)
    options = EvaluationOptions(cutoffs=(10,), relevant_below=3.5)  # binary.qrels: m < 3.5
    values, _curve = score_run(truth, ranking, options)
    return values


def plain_rank(truth, sketch_of_row, doc_code, doc_names, keys, score, n_returned, score_precision):
    """The ranking of run_from_scores by one lexsort of every row, for comparison."""
    n_sketches, width = truth.mean_rating.shape
    doc_lookup = pd.Index(doc_names)
    judged_rows = np.full((n_sketches, width), -1, dtype=np.int64)
    for s, images in enumerate(truth.images):
        codes = doc_lookup.get_indexer(images)
        judged_keys = np.where(codes >= 0, s * max(len(doc_names), 1) + codes, -1)
        judged_rows[s, : len(images)] = keys.get_indexer(judged_keys)
    returned = judged_rows >= 0
    key = score.astype(np.float32).astype(np.float64) if score_precision == "float32" else score
    id_order = np.empty(len(doc_names), dtype=np.int64)
    id_order[np.argsort(doc_names.astype(str), kind="stable")] = np.arange(len(doc_names))
    order = np.lexsort((-id_order[doc_code], -key, sketch_of_row))
    position = np.empty(len(order))
    position[order] = np.arange(1, len(order) + 1)
    position -= (np.cumsum(n_returned) - n_returned)[sketch_of_row]
    rows = np.maximum(judged_rows, 0)
    return (
        np.where(returned, score[rows], np.nan),
        np.where(returned, position[rows], np.nan),
    )


def ours_plain(folder: Path, truth):
    kernel, run_module._rank = run_module._rank, plain_rank
    try:
        return load_run(folder / "run.txt", truth)
    finally:
        run_module._rank = kernel


def with_pytrec_eval(folder: Path):
    import pytrec_eval

    with (folder / "graded.qrels").open() as stream:
        graded = pytrec_eval.parse_qrel(stream)
    with (folder / "binary.qrels").open() as stream:
        binary = pytrec_eval.parse_qrel(stream)
    with (folder / "run.txt").open() as stream:
        run = pytrec_eval.parse_run(stream)
    result = pytrec_eval.RelevanceEvaluator(graded, {"ndcg", "ndcg_cut.10"}).evaluate(run)
    for query, values in (
        pytrec_eval.RelevanceEvaluator(binary, {"P.10", "map", "Rprec"}).evaluate(run).items()
    ):
        result[query].update(values)
    return result


def with_ranx(folder: Path):
    from ranx import Qrels, Run, evaluate

    run = Run.from_file(str(folder / "run.txt"), kind="trec")
    graded = evaluate(
        Qrels.from_file(str(folder / "graded.qrels"), kind="trec"),
        run,
        ["ndcg", "ndcg@10"],
        return_mean=False,
    )
    binary = evaluate(
        Qrels.from_file(str(folder / "binary.qrels"), kind="trec"),
        run,
        ["precision@10", "map", "r-precision"],
        return_mean=False,
    )
    return {**graded, **binary}


def direct_mass_based(x, y, reference, p=2.0):
    """m_p by the definition: for each pair and dimension, count the reference values
    between the two (the O(N d) scan per pair the sorted columns avoid)."""
    result = np.empty((len(x), len(y)))
    n = len(reference)
    for i, a in enumerate(x):
        for j, b in enumerate(y):
            low, high = np.minimum(a, b), np.maximum(a, b)
            mass = ((reference >= low) & (reference <= high)).sum(axis=0)
            result[i, j] = np.mean((mass / n) ** p) ** (1 / p)
    return result


def command_line(folder: Path, truth_frame: pd.DataFrame, repeat: int) -> dict:
    """What a user sees: ``sbir-study evaluate`` on the same run, imports and writing included."""
    import sys

    from bench_analyze import run  # one child process: seconds and peak MiB

    truth_frame.to_csv(folder / "ground_truth.csv", index=False)
    cli = [
        str(Path(sys.executable).with_name("sbir-study")),
        "evaluate",
        "--ground-truth",
        str(folder / "ground_truth.csv"),
        str(folder / "run.txt"),
    ]
    results = {}
    for case, (name, extra) in enumerate(
        (("tables (--no-figures)", ["--no-figures"]), ("with figures", []))
    ):
        runs = [run([*cli, "--out", str(folder / f"cli{case}-{k}"), *extra]) for k in range(repeat)]
        seconds = sorted(s for s, _ in runs)
        results[name] = (seconds[0], float(np.median(seconds)), max(m for _, m in runs))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sketches", type=int, default=31)
    parser.add_argument("--images", type=int, default=101_240)
    parser.add_argument("--judged", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        truth_frame = write_benchmark(folder, args.sketches, args.images, args.judged)
        lines = args.sketches * args.images
        print(
            f"wrote a run of {lines:,} lines ({(folder / 'run.txt').stat().st_size / 1e6:.0f} "
            f"MB) in {time.perf_counter() - start:.1f} s"
        )
        truth = ground_truth_from_frame(truth_frame)

        ours_best, ours_median, values = best_of(lambda: ours(folder, truth), args.repeat)
        kernel_best, kernel_median, kernel = best_of(
            lambda: load_run(folder / "run.txt", truth), args.repeat
        )
        plain_best, plain_median, plain = best_of(lambda: ours_plain(folder, truth), args.repeat)
        np.testing.assert_array_equal(plain.rank, kernel.rank)
        trec_best, trec_median, trec = best_of(lambda: with_pytrec_eval(folder), args.repeat)
        ranx_best, ranx_median, ranx = best_of(lambda: with_ranx(folder), 2)
        from_cli = command_line(folder, truth_frame, args.repeat)

        sketches = list(truth.sketches)
        pairs = {
            "ndcg": "ndcg",
            "ndcg@10": "ndcg_cut_10",
            "p@10": "P_10",
            "ap": "map",
            "r_precision": "Rprec",
        }
        trec_difference = max(
            float(np.max(np.abs(values[m] - np.array([trec[s][t] for s in sketches]))))
            for m, t in pairs.items()
        )
        ranx_names = {
            "ndcg": "ndcg",
            "ndcg@10": "ndcg@10",
            "p@10": "precision@10",
            "ap": "map",
            "r_precision": "r-precision",
        }
        ranx_difference = max(
            float(np.max(np.abs(values[m] - np.asarray(ranx[r])))) for m, r in ranx_names.items()
        )

        print()
        print(
            "| implementation (parse + score) | best s | median s | ratio to analysis "
            "(median) | max abs difference |"
        )
        print("|---|---|---|---|---|")
        print(
            f"| analysis: load_run + all measures | {ours_best:.2f} | {ours_median:.2f} | 1 | - |"
        )
        print(
            f"| pytrec_eval: parse_run + evaluate (5 measures) | {trec_best:.2f} | "
            f"{trec_median:.2f} | {trec_median / ours_median:.1f}x slower | "
            f"{trec_difference:.1e} |"
        )
        print(
            f"| ranx: Run.from_file + evaluate (5 measures; 2 runs) | {ranx_best:.2f} | "
            f"{ranx_median:.2f} | {ranx_median / ours_median:.1f}x slower | "
            f"{ranx_difference:.1e} (ties ordered otherwise) |"
        )
        print()
        print("| load_run (parse + rank) | best s | median s |")
        print("|---|---|---|")
        print(f"| judged positions only (the kernel) | {kernel_best:.2f} | {kernel_median:.2f} |")
        print(f"| one lexsort of every row (plain) | {plain_best:.2f} | {plain_median:.2f} |")
        print()
        print(
            "| `sbir-study evaluate` from the command line (fresh process) | best s | "
            "median s | peak MiB |"
        )
        print("|---|---|---|---|")
        for name, (best, median, peak) in from_cli.items():
            print(f"| {name} | {best:.2f} | {median:.2f} | {peak:.0f} |")

    rng = np.random.default_rng(7)
    reference = rng.random((10_000, 500))
    x, y = reference[:31], reference[1000:1100]
    _fast_best, fast_median, fast = best_of(
        lambda: mass_based(x, y, reference=reference), args.repeat
    )
    pairs_direct = (4, 5)
    _direct_best, direct_median, direct = best_of(
        lambda: direct_mass_based(x[: pairs_direct[0]], y[: pairs_direct[1]], reference), 1
    )
    per_pair_fast = fast_median / (len(x) * len(y))
    per_pair_direct = direct_median / (pairs_direct[0] * pairs_direct[1])
    difference = float(np.max(np.abs(fast[: pairs_direct[0], : pairs_direct[1]] - direct)))
    print()
    print("| m_p, 10,000 x 500 reference | pairs | seconds (median) | ms per pair | ratio |")
    print("|---|---|---|---|---|")
    print(
        "| sbir_study.analysis.mass_based (sorted columns, binary search; sorting included) | "
        f"{len(x) * len(y):,} | {fast_median:.2f} | {1000 * per_pair_fast:.3f} | 1 |"
    )
    print(
        f"| direct count of the definition | {pairs_direct[0] * pairs_direct[1]} | "
        f"{direct_median:.2f} | {1000 * per_pair_direct:.2f} | "
        f"{per_pair_direct / per_pair_fast:.0f}x slower per pair |"
    )
    print(f"max abs difference on the pairs both computed: {difference:.1e}")


if __name__ == "__main__":
    main()
