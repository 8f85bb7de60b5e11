"""Time to draw the figures of ``analyze`` at paper and crowd size, per-participant vs aggregate.

For 28, 300 and 2,000 simulated participants (the paper's design otherwise), the
tables are computed once by :func:`sbir_study.analysis.analyze_ratings`; then
:func:`sbir_study.analysis.figures.write_figures` draws Figs. 4-8 (PNG and PDF) from the same
tables twice, alternating:

* ``each``: one box or marker column per participant with its own tick label (at
  2,000 participants it measures and draws thousands of tick labels);
* ``auto``: the default, which switches Figs. 4 and 6 to the distribution over the
  participants sorted by their median past ``PARTICIPANT_VIEW_LIMIT`` participants.

Part of the goal "2,000 participants with figures < 30 s" (the whole command is
measured by ``bench_analyze.py``).

    python benchmarks/bench_figures_crowd.py [--sizes 28,300,2000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from sbir_study.analysis import (
    AnalysisOptions,
    StudyDesign,
    analyze_ratings,
    figures,
    load_ratings,
    simulate_study,
)


def tables_for(participants: int, folder: Path) -> dict:
    """The keyword arguments ``analyze`` gives ``write_figures`` for a simulated study."""
    trials, _ = simulate_study(StudyDesign(participants=participants), seed=2011)
    trials.to_csv(folder / "ratings.csv", index=False, na_rep="n/a")
    ratings = load_ratings(folder / "ratings.csv")
    captured = {}
    draw = figures.write_figures

    def capture(out, **kwargs):
        captured.update(kwargs)
        Path(out).mkdir(parents=True, exist_ok=True)  # as write_figures makes it
        return {}

    figures.write_figures = capture
    try:
        analyze_ratings(ratings, folder / "tables", AnalysisOptions(bootstrap=0, permutations=0))
    finally:
        figures.write_figures = draw
    return captured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="28,300,2000")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    print("| participants | view | best s | median s | each / auto |")
    print("|---|---|---|---|---|")
    for n in sizes:
        with tempfile.TemporaryDirectory() as folder:
            folder = Path(folder)
            kwargs = tables_for(n, folder)
            times = {"each": [], "auto": []}
            for _ in range(args.repeat):
                for view in ("each", "auto"):
                    start = time.perf_counter()
                    figures.write_figures(folder / view, participant_view=view, **kwargs)
                    times[view].append(time.perf_counter() - start)
        ratio = statistics.median(times["each"]) / statistics.median(times["auto"])
        for view in ("each", "auto"):
            runs = times[view]
            shown = f"{ratio:.1f}x" if view == "auto" else ""
            print(f"| {n:,} | {view} | {min(runs):.2f} | {statistics.median(runs):.2f} | {shown} |")


if __name__ == "__main__":
    main()
