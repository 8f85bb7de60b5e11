"""``sbir-study evaluate`` from files: read, their scale agreed, scored, each file recorded
with its SHA-256."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from sbir_study.foundation.checks import InputError
from sbir_study.foundation.outputs import read_record
from sbir_study.foundation.provenance import file_digest
from sbir_study.foundation.scale import PAPER_SCALE, Scale

from ..orientation import ratings_scale
from ..ratings import load_ratings
from .evaluation import Evaluation, EvaluationOptions, evaluate_runs, ratings_name
from .runs import GroundTruth, Run, load_ground_truth, load_run

__all__ = ["evaluate_files"]


def evaluate_files(
    ground_truth: str | Path,
    run_files: Sequence[str | Path],
    options: EvaluationOptions | None = None,
    *,
    names: Sequence[str] | None = None,
    ratings: str | Path | None = None,
    lower_is_better: bool = False,
    score_precision: str = "float32",
    scale: Scale | None = None,
) -> Evaluation:
    """Load a ground truth, runs and (optionally) ratings and score the runs.

    ``Evaluation.inputs`` records each file read with its SHA-256 and lines. ``names``
    are the systems' names, in order (default: the file names); ``lower_is_better`` and
    ``score_precision`` as :func:`~sbir_study.analysis.retrieval.runs.load_run` takes
    them. The ground truth's scale is that of ``ratings``, else the one the
    ``summary.json`` of its ``analyze`` records, else ``scale`` (also a flat ratings
    table's), else the paper's; two that differ are refused.
    """
    if names is not None and len(names) != len(run_files):
        raise InputError(
            f"--name: given {len(names)} times for {len(run_files)} runs; expected one name "
            "per run, in order"
        )
    table = load_ratings(ratings, scale=scale) if ratings is not None else None
    summary = _analyze_summary(ground_truth)
    truth = load_ground_truth(ground_truth, scale=_ground_truth_scale(table, summary, scale))
    run_names: list[str | None] = list(names) if names is not None else [None] * len(run_files)
    runs = [
        load_run(
            path, truth, lower_is_better=lower_is_better, name=name, score_precision=score_precision
        )
        for path, name in zip(run_files, run_names, strict=True)
    ]
    evaluation = evaluate_runs(truth, runs, options or EvaluationOptions(), ratings=table)
    provenance = table.attrs.get("provenance") if table is not None else None
    evaluation.inputs = {
        "files": _files_read(ground_truth, truth, runs, provenance),
        "lower_is_better": lower_is_better,
        "score_precision": score_precision,
        "simulated": bool(getattr(provenance, "simulated", False))
        or bool(summary and summary[1].get("simulated")),
        "command": "sbir-study evaluate",
    }
    return evaluation


def _files_read(
    ground_truth: str | Path, truth: GroundTruth, runs: list[Run], provenance: Any
) -> list[dict[str, Any]]:
    """Each file read, by role, with its SHA-256 and lines."""
    files = [("ground truth", "", str(ground_truth), truth.sha256, truth.lines)]
    files += [("run", r.name, r.source, r.sha256, r.lines) for r in runs]
    files += [("ratings", "", s.path, s.sha256, s.rows) for s in getattr(provenance, "sources", ())]
    fields = ("role", "name", "path", "sha256", "lines")
    return [dict(zip(fields, file, strict=True)) for file in files]


def _analyze_summary(path: str | Path) -> tuple[Path, dict] | None:
    """The path and contents of the ``summary.json`` of the ``analyze`` whose output record
    lists this very file (its SHA-256), else None."""
    path = Path(path)
    record = read_record(path.parent)
    if record is None or record.command != "analyze":
        return None
    try:
        if record.files.get(path.name) != file_digest(path).sha256:
            return None
        summary_path = path.parent / "summary.json"
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return (summary_path, summary) if isinstance(summary, dict) else None


def _ground_truth_scale(
    ratings: pd.DataFrame | None, summary: tuple[Path, dict] | None, given: Scale | None
) -> Scale:
    """The ground truth's scale: that of the ratings, else of analyze's summary.json, else
    ``given`` (``--scale``), else the paper's; two that differ are refused."""
    known = []
    if ratings is not None:
        known.append((f"the ratings {ratings_name(ratings)}", ratings_scale(ratings)))
    if summary is not None and summary[1].get("scale") is not None:
        path, recorded = summary
        known.append((str(path), Scale.parse(recorded["scale"], what=f"{path}: scale")))
    if given is not None:
        known.append(("--scale", given))
    for name, scale in known[1:]:
        if scale != known[0][1]:
            raise InputError(
                f"{name}: the scale {scale}, where {known[0][0]} is on {known[0][1]}; expected "
                "the one scale of the ground truth"
            )
    return known[0][1] if known else PAPER_SCALE
