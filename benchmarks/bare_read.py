"""The least a user without the toolkit would run on a ratings study: the baseline of the
crowd-size ratio in ``bench_crowd.py`` (issue 27).

A plain ``pandas.read_csv`` of the files (every ``sub-*/beh/*_beh.tsv`` of a BIDS dataset,
concatenated, or one flat table), then the mean rating of every sketch/image pair of the
main phase and its rank within the sketch (1 = best, the lowest mean): the consensus
ground truth, unchecked. Nothing of sbir_study is imported, so the process pays only
for Python, pandas and the work.

    python benchmarks/bare_read.py PATH
"""

import sys
from pathlib import Path

import pandas as pd


def bare_read(path: Path) -> pd.DataFrame:
    if path.is_dir():
        files = sorted(path.glob("sub-*/beh/*_beh.tsv"))
        ratings = pd.concat([pd.read_csv(f, sep="\t") for f in files], ignore_index=True)
    else:
        ratings = pd.read_csv(path, sep="\t" if path.suffix == ".tsv" else ",")
    if "phase" in ratings:
        ratings = ratings[ratings["phase"] == "main"]
    mean = ratings.groupby(["sketch_id", "image_id"])["rating"].mean()
    rank = mean.groupby(level="sketch_id").rank(method="first")
    return pd.DataFrame({"mean_rating": mean, "rank": rank})


if __name__ == "__main__":
    table = bare_read(Path(sys.argv[1]))
    print(f"{len(table)} pairs")
