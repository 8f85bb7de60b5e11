"""Scoring patch and image retrieval in the HPatches benchmark's file formats.

A task ``NAME`` is ``NAME.benchmark`` (line 1 the pool of patch-images, then one query
patch a line), ``NAME.labels`` (the pool, then line for line each query and the patches
that correspond to it) and, per descriptor, ``NAME.results`` (the pool, then each query
and its ``top`` most similar patches, best first). A patch is ``sequence.image.patch``
(``v_bricks.e1.85``).

Average precision is that of the benchmark's 2016 code (``retrieval_eval.m`` with
VLFeat's ``vl_pr``): over ranks 2 to top + 1, divided by the positives retrieved there;
a positive is a patch of the query's labels line (the query included) for *patch*
retrieval, or of the patch-image of one of them for *image* retrieval. The mAP is the
mean over the N queries, where the reference divides by N + 1 (``docs/evaluation.md``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from sbir_study.foundation.checks import InputError
from sbir_study.foundation.outputs import output_folder

__all__ = [
    "HPatchesTask",
    "evaluate_hpatches",
    "format_hpatches",
    "hpatches_average_precision",
    "image_of",
    "read_hpatches_task",
    "sequence_of",
    "write_hpatches",
]


@dataclass(frozen=True)
class HPatchesTask:
    """One benchmark task; ``labels[i]`` holds the patches of the labels line of query
    ``queries[i]``, the query included (the same line in both files, as the reference
    pairs them)."""

    name: str
    pool: str
    queries: tuple[str, ...]
    labels: tuple[frozenset[str], ...]


def sequence_of(patch: str) -> str:
    """The image sequence a patch comes from: its name up to the first dot.

    >>> sequence_of("v_bricks.e1.85")
    'v_bricks'
    """
    return patch.split(".", 1)[0]


def image_of(patch: str) -> str:
    """The patch-image a patch comes from: its name without the patch number.

    >>> image_of("v_bricks.e1.85")
    'v_bricks.e1'
    """
    return patch.rsplit(".", 1)[0]


def _check_names(path: Path, number: int, names: list[str]) -> None:
    """Every name is ``sequence.image.patch``, as the reference requires."""
    for name in names:
        if name.count(".") != 2 or any(not part for part in name.split(".")):
            raise InputError(
                f"{path}, line {number}: {name!r} is not a patch name; expected "
                "sequence.image.patch (e.g. v_bricks.e1.85)"
            )


def _lines(path: Path) -> list[str]:
    """The file's lines, trailing blank lines dropped."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise InputError(f"{path}: empty; expected the list of patch-images on line 1")
    return lines


def _entries(path: Path, number: int, line: str) -> list[str]:
    """The comma-separated names of a line, none empty."""
    entries = [entry.strip() for entry in line.split(",")]
    if any(not entry for entry in entries):
        raise InputError(f"{path}, line {number}: an empty entry; expected comma-separated names")
    return entries


def _same_pool(path: Path, line: str, pool: str, benchmark: str, expected: str) -> None:
    """Line 1 of ``path`` lists the pool of line 1 of ``benchmark``."""
    if ",".join(entry.strip() for entry in line.split(",")) != pool:
        raise InputError(
            f"{path}, line 1: the pool of patch-images differs from line 1 of {benchmark}; "
            f"expected {expected}"
        )


def read_hpatches_task(benchmark: str | Path) -> HPatchesTask:
    """Read ``NAME.benchmark`` and the ``NAME.labels`` beside it."""
    benchmark = Path(benchmark)
    labels_path = benchmark.with_suffix(".labels")
    lines = _lines(benchmark)
    pool = ",".join(entry.strip() for entry in lines[0].split(","))
    queries = []
    for number, line in enumerate(lines[1:], start=2):
        entries = _entries(benchmark, number, line)
        if len(entries) != 1:
            raise InputError(
                f"{benchmark}, line {number}: {len(entries)} entries; expected one query patch"
            )
        _check_names(benchmark, number, entries)
        queries.append(entries[0])
    if not queries:
        raise InputError(f"{benchmark}: no query patches after line 1")
    if not labels_path.is_file():
        raise InputError(f"{labels_path}: missing; expected the labels beside {benchmark.name}")
    label_lines = _lines(labels_path)
    _same_pool(labels_path, label_lines[0], pool, benchmark.name, "the same list")
    if len(label_lines) != len(lines):
        raise InputError(
            f"{labels_path}: {len(label_lines) - 1} labels lines; expected one per query of "
            f"{benchmark.name} ({len(queries)}), in the same order"
        )
    labels = []
    for number, (line, query) in enumerate(zip(label_lines[1:], queries, strict=True), start=2):
        entries = _entries(labels_path, number, line)
        _check_names(labels_path, number, entries)
        if query not in entries:
            raise InputError(
                f"{labels_path}, line {number}: does not list the query {query!r} (line "
                f"{number} of {benchmark.name}); expected the query and its correspondences"
            )
        labels.append(frozenset(entries))
    return HPatchesTask(benchmark.stem, pool, tuple(queries), tuple(labels))


def hpatches_average_precision(positive: ArrayLike) -> np.ndarray:
    """AP of each row of ``positive`` (queries x retrieved, best first, the query left
    out): the precision at each positive, averaged over the positives retrieved.

    Examples
    --------
    >>> hpatches_average_precision([[True, False, True, False], [False, False, False, False]])
    array([0.83333333, 0.        ])
    """
    positive = np.atleast_2d(np.asarray(positive, dtype=bool))
    hits = np.cumsum(positive, axis=1)
    rank = np.arange(1, positive.shape[1] + 1)
    found = hits[:, -1] if positive.shape[1] else np.zeros(positive.shape[0])
    total = np.where(positive, hits / rank, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(found > 0, total / np.maximum(found, 1), 0.0)


def _score_results(task: HPatchesTask, results: Path, top: int) -> pd.DataFrame:
    """Each query's AP in one ``.results`` file, checked against its task."""
    lines = _lines(results)
    _same_pool(results, lines[0], task.pool, f"{task.name}.benchmark", "it copied unchanged")
    body = lines[1:]
    if len(body) != len(task.queries):
        raise InputError(
            f"{results}: {len(body)} result lines; expected one per query of "
            f"{task.name}.benchmark ({len(task.queries)})"
        )
    pool = frozenset(task.pool.split(","))
    patch = np.zeros((len(body), top), dtype=bool)
    image = np.zeros((len(body), top), dtype=bool)
    for row, (number, line, query, positives) in enumerate(
        zip(range(2, len(body) + 2), body, task.queries, task.labels, strict=True)
    ):
        entries = _entries(results, number, line)
        if entries[0] != query:
            raise InputError(
                f"{results}, line {number}: starts with {entries[0]!r}; expected the query "
                f"{query!r} (line {number} of {task.name}.benchmark) first"
            )
        if len(entries) != top + 1:
            raise InputError(
                f"{results}, line {number}: {len(entries)} entries; expected the query and "
                f"{top} retrieved patches ({top + 1})"
            )
        _check_names(results, number, entries)
        outside = [p for p in entries if image_of(p) not in pool]
        if outside:
            raise InputError(
                f"{results}, line {number}: {outside[0]!r} is not from a patch-image of the "
                f"pool (line 1 of {task.name}.benchmark)"
            )
        retrieved = entries[1:]
        images = {image_of(p) for p in positives}
        patch[row] = [p in positives for p in retrieved]
        image[row] = [image_of(p) in images for p in retrieved]
    return pd.DataFrame(
        {
            "task": task.name,
            "query": list(task.queries),
            "ap_patch": hpatches_average_precision(patch),
            "ap_image": hpatches_average_precision(image),
            "n_positive_patch": patch.sum(axis=1),
            "n_positive_image": image.sum(axis=1),
        }
    )


def evaluate_hpatches(
    benchmark_dir: str | Path, results_dir: str | Path, *, top: int = 50
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score every ``*.results`` of ``results_dir`` (or of each of its folders, one per
    descriptor) against its task in ``benchmark_dir``.

    Returns ``(per_query, summary)``: ``descriptor, task, query, ap_patch, ap_image,
    n_positive_patch, n_positive_image`` and ``descriptor, task, n_queries, map_patch,
    map_image``. A task without results is skipped with a warning; results without a
    task are an error.
    """
    benchmark_dir, results_dir = Path(benchmark_dir), Path(results_dir)
    if not isinstance(top, int) or top < 1:
        raise InputError(f"top: expected a whole number >= 1, got {top!r}")
    for folder, what in ((benchmark_dir, "benchmark"), (results_dir, "results")):
        if not folder.is_dir():
            raise InputError(f"{folder}: not a folder; expected the {what} folder")
    tasks = {p.stem: p for p in sorted(benchmark_dir.glob("*.benchmark"))}
    if not tasks:
        raise InputError(f"{benchmark_dir}: no *.benchmark files")
    if any(results_dir.glob("*.results")):
        descriptors = {results_dir.name: results_dir}
    else:
        descriptors = {
            d.name: d
            for d in sorted(results_dir.iterdir())
            if d.is_dir() and any(d.glob("*.results"))
        }
    if not descriptors:
        raise InputError(
            f"{results_dir}: no *.results files, in it or in its subfolders (one per descriptor)"
        )
    read = {}
    frames = []
    for descriptor, folder in descriptors.items():
        results = {p.stem: p for p in sorted(folder.glob("*.results"))}
        for stem, path in results.items():
            if stem not in tasks:
                raise InputError(
                    f"{path}: no task {stem}.benchmark in {benchmark_dir}; expected results "
                    "named after their benchmark task"
                )
        skipped = sorted(set(tasks) - set(results))
        if skipped:
            warnings.warn(
                f"{folder}: no results for {len(skipped)} task(s) ({', '.join(skipped[:3])}"
                f"{', ...' if len(skipped) > 3 else ''}); scored the others",
                UserWarning,
                stacklevel=2,
            )
        for stem, path in results.items():
            if stem not in read:
                read[stem] = read_hpatches_task(tasks[stem])
            scored = _score_results(read[stem], path, top)
            scored.insert(0, "descriptor", descriptor)
            frames.append(scored)
    per_query = pd.concat(frames, ignore_index=True)
    summary = (
        per_query.groupby(["descriptor", "task"], sort=False)
        .agg(
            n_queries=("query", "size"),
            map_patch=("ap_patch", "mean"),
            map_image=("ap_image", "mean"),
        )
        .reset_index()
    )
    return per_query, summary


def write_hpatches(
    per_query: pd.DataFrame,
    summary: pd.DataFrame,
    out: str | Path,
    *,
    overwrite: bool = False,
    inputs: Sequence[str | Path] = (),
) -> Path:
    """Write ``hpatches_per_query.csv`` and ``hpatches_summary.csv`` into the folder ``out``,
    as every output is written (``docs/outputs.md``); ``inputs`` are never targets."""
    with output_folder(out, "evaluate-hpatches", overwrite=overwrite, inputs=inputs) as folder:
        per_query.to_csv(folder / "hpatches_per_query.csv", index=False)
        summary.to_csv(folder / "hpatches_summary.csv", index=False)
    return Path(out)


def format_hpatches(summary: pd.DataFrame, top: int) -> str:
    """The table ``sbir-study evaluate-hpatches`` prints: mAP in percent per task."""
    shown = summary.copy()
    shown[["map_patch", "map_image"]] = (100 * shown[["map_patch", "map_image"]]).round(2)
    return f"mAP (%) over ranks 2 to {top + 1} per task:\n{shown.to_string(index=False)}"
