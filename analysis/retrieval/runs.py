"""The ground truth and retrieval runs (``docs/formats.md``), laid out for scoring.

Only the ground truth's images of each sketch (the *judged* images) matter to the
measures, so a run is reduced to each judged image's score and position in the run, and
the number of images it returns per sketch, however large the collection it ranks.

Positions follow trec_eval: decreasing score, ties by image id in decreasing string
order. trec_eval up to 9.0.8 (inside pytrec_eval, behind most published numbers) reads
scores as single-precision floats, trec_eval 10 as doubles: ``score_precision`` chooses.
Judged images a run does not return rank after every returned one, tied (for tau_b,
which compares the scores in double precision as SciPy does), or count as not retrieved
(for the trec_eval and SHREC measures).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from sbir_study.foundation.checks import (
    ID_RULE,
    InputError,
    bad_ids,
    check_input_file,
    check_option,
)
from sbir_study.foundation.memory import release_freed
from sbir_study.foundation.scale import PAPER_SCALE, Scale
from sbir_study.foundation.tables import (
    COMMA,
    MISSING_VALUES,
    Header,
    LineNumbers,
    read_header,
    read_rows,
    read_table,
    read_text,
)
from sbir_study.foundation.text import TextFile

__all__ = [
    "SCORE_PRECISIONS",
    "GroundTruth",
    "Run",
    "RunWarning",
    "ground_truth_from_frame",
    "ground_truth_from_qrels",
    "load_ground_truth",
    "load_run",
    "run_from_scores",
]

_TREC_FIELDS = ("query_id", "q0", "doc_id", "rank", "score", "tag")
#: How scores are compared when a run is put in order: as trec_eval 9 (float) or 10 (double).
SCORE_PRECISIONS = ("float32", "float64")
_TABLE_COLUMNS = ("sketch_id", "image_id", "score")
_QRELS_FIELDS = ("query_id", "iteration", "doc_id", "grade")
# How a run's messages name a line and word the reader's problems.
_RUN = replace(COMMA, not_utf8="not UTF-8 text")
_TREC = replace(
    _RUN,
    field_count="{found} fields; expected 6 (query_id Q0 doc_id rank score tag) as in a TREC "
    "run, or a table with a sketch_id,image_id,score header",
)
_RUN_TABLE = replace(_RUN, field_count="{found} fields; expected {expected} as in the header")
_QRELS = replace(
    _RUN,
    field_count="{found} fields; expected 4 (sketch_id 0 image_id grade) as in TREC qrels, "
    "or a ground_truth.csv with a sketch_id,image_id,mean_rating header",
)


class RunWarning(UserWarning):
    """A run was read, but something in it deserves attention."""


@dataclass(frozen=True)
class GroundTruth:
    """The consensus ground truth as sketches x judged images.

    ``mean_rating[s, j]`` is the mean rating of image ``images[s][j]`` of sketch
    ``sketches[s]``, in the paper's orientation as ``analyze`` writes it (``scale.low``
    best); NaN pads the sketches with fewer images than the widest.
    """

    sketches: np.ndarray
    images: tuple[np.ndarray, ...]
    mean_rating: np.ndarray
    source: str = "ground truth"
    sha256: str | None = None
    lines: int = 0
    scale: Scale = PAPER_SCALE
    #: The grades of TREC qrels (None for a ground_truth.csv); with qrels, ``mean_rating``
    #: is minus the grade, which tau_b correlates with.
    qrels_grade: np.ndarray | None = None

    @property
    def judged(self) -> np.ndarray:
        """Where ``mean_rating`` holds a judged image (not padding)."""
        return ~np.isnan(self.mean_rating)

    @property
    def from_qrels(self) -> bool:
        """Whether the ground truth was read from TREC qrels."""
        return self.qrels_grade is not None

    @property
    def grade(self) -> np.ndarray:
        """The qrels grade, high - round(mean_rating) of the scale as
        ``sbir_study.analysis.write_qrels`` writes it (halves round to the worse grade);
        from qrels, theirs. NaN for padding."""
        if self.qrels_grade is not None:
            return self.qrels_grade
        grade = np.full(self.mean_rating.shape, np.nan)
        grade[self.judged] = self.scale.grade(self.mean_rating[self.judged])
        return grade

    def relevant(self, below: float | None) -> np.ndarray:
        """Binary relevance: a mean rating below ``below``; from qrels, grade >= 1 (as
        trec_eval counts it)."""
        with np.errstate(invalid="ignore"):
            if self.qrels_grade is not None:
                return self.qrels_grade >= 1
            return self.mean_rating < below

    def table(self) -> pd.DataFrame:
        """``sketch_id, image_id, mean_rating`` in long form."""
        counts = [len(images) for images in self.images]
        return pd.DataFrame(
            {
                "sketch_id": np.repeat(self.sketches, counts),
                "image_id": np.concatenate(self.images) if counts else [],
                "mean_rating": self.mean_rating[self.judged],
            }
        )


@dataclass(frozen=True)
class Run:
    """One system's run reduced to the judged images of a :class:`GroundTruth`.

    ``score[s, j]`` is the run's score of judged image j of sketch s (higher = more
    similar) and ``rank[s, j]`` its 1-based position in the run, both NaN where the run
    does not return it; ``n_returned[s]`` counts the images returned for s, judged or not.
    """

    name: str
    score: np.ndarray
    rank: np.ndarray
    n_returned: np.ndarray
    source: str = ""
    sha256: str | None = None
    lines: int = 0
    score_precision: str = "float32"


# --- the ground truth ------------------------------------------------------------------------


def load_ground_truth(path: str | Path, *, scale: Scale = PAPER_SCALE) -> GroundTruth:
    """Read ``ground_truth.csv`` as ``analyze`` writes it (other columns ignored, mean
    ratings on ``scale``) or TREC qrels (:func:`ground_truth_from_qrels`): a first line
    without ``sketch_id`` or a comma is qrels.

    Bad input (a missing column, an empty id, a mean rating off the scale, a pair listed
    twice) raises :class:`~sbir_study.foundation.checks.InputError` naming the file, line
    and field. Pairs nobody rated are left out.
    """
    path = check_input_file(path, "a ground truth table (ground_truth.csv)")
    file = read_text(path, COMMA)
    first = file.first_line()
    if first is None:
        raise InputError(f"{path}: empty; expected a ground truth table with a header")
    if "sketch_id" not in first[1] and "," not in first[1]:
        header = Header.none(file, _QRELS_FIELDS)
        rows = read_rows([(file, header)], wording=_QRELS, columns=_QRELS_FIELDS, categorical=False)
        truth = ground_truth_from_qrels(rows.frame, rows.lines, source=str(path), scale=scale)
        return replace(truth, sha256=file.sha256, lines=file.lines)
    frame = read_table(file, "\t" if "\t" in first[1] else ",", wording=COMMA)
    truth = ground_truth_from_frame(frame, source=str(path), scale=scale)
    return replace(truth, sha256=file.sha256, lines=file.lines)


def ground_truth_from_frame(
    frame: pd.DataFrame,
    *,
    source: str = "ground truth",
    sha256: str | None = None,
    scale: Scale = PAPER_SCALE,
) -> GroundTruth:
    """Check a ground-truth table as :func:`load_ground_truth` does. Row r is line
    ``frame.attrs["lines"][r]`` of ``source`` (as ``read_table`` records it), else r + 2.

    Examples
    --------
    >>> truth = ground_truth_from_frame(pd.DataFrame({
    ...     "sketch_id": ["s1", "s1", "s2"], "image_id": ["a", "b", "c"],
    ...     "mean_rating": [2.5, 1.0, 6.0]}))
    >>> truth.sketches.tolist(), [list(i) for i in truth.images]
    (['s1', 's2'], [['a', 'b'], ['c']])
    >>> truth.grade
    array([[ 4.,  6.],
           [ 1., nan]])

    On a 5-point scale the grades run from 4 (best) to 0:

    >>> ground_truth_from_frame(pd.DataFrame({
    ...     "sketch_id": "s", "image_id": ["a", "b"], "mean_rating": [1.0, 4.5]}),
    ...     scale=Scale(1, 5)).grade
    array([[4., 0.]])
    """
    missing = [c for c in ("sketch_id", "image_id", "mean_rating") if c not in frame.columns]
    if missing:
        raise InputError(
            f"{source}: missing column {missing[0]!r}; expected sketch_id, image_id, mean_rating "
            "(the ground_truth.csv that sbir-study analyze writes)"
        )
    if frame.empty:
        raise InputError(f"{source}: no rows; expected one row per sketch/image pair")
    line = np.asarray(frame.attrs.get("lines", ()))
    if len(line) != len(frame):  # not a table as read, or rows taken out since
        line = np.arange(2, len(frame) + 2)
    ids = {}
    for column in ("sketch_id", "image_id"):
        values = frame[column].astype(str).str.strip()
        empty = (values == "") | frame[column].isna().to_numpy()
        if empty.any():
            row = int(np.flatnonzero(empty)[0])
            raise InputError(f"{source}, line {line[row]}: {column}: empty; expected an id")
        bad = bad_ids(values)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"{source}, line {line[row]}: {column}: expected {ID_RULE}, "
                f"got {values.iloc[row]!r}"
            )
        ids[column] = values.to_numpy(dtype=object)
    raw = frame["mean_rating"]
    text = raw.astype(str).str.strip()
    absent = text.isin(MISSING_VALUES).to_numpy() | raw.isna().to_numpy()
    mean = pd.to_numeric(text.where(~absent), errors="coerce").to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~absent & ~((mean >= scale.low) & (mean <= scale.high))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{source}, line {line[row]}: mean_rating: got {text.iloc[row]!r}; expected a number "
            f"from {scale.low} to {scale.high}, the scale {scale} (or empty for a pair nobody "
            "rated)"
        )
    keys = pd.Series(ids["sketch_id"]) + "\x00" + pd.Series(ids["image_id"])
    twice = keys.duplicated(keep="first").to_numpy()
    if twice.any():
        row = int(np.flatnonzero(twice)[0])
        first = int(np.flatnonzero((keys == keys.iloc[row]).to_numpy())[0])
        raise InputError(
            f"{source}, line {line[row]}: the pair ({ids['sketch_id'][row]}, "
            f"{ids['image_id'][row]}) is listed again (first on line {line[first]}); expected "
            "each pair once"
        )
    keep = ~absent
    long = pd.DataFrame(
        {
            "sketch_id": ids["sketch_id"][keep],
            "image_id": ids["image_id"][keep],
            "mean_rating": mean[keep],
        }
    ).sort_values(["sketch_id", "image_id"], kind="stable")
    if long.empty:
        raise InputError(f"{source}: no pair has a mean rating; nothing to score against")
    sketches, sketch_code = np.unique(long["sketch_id"].to_numpy(dtype=object), return_inverse=True)
    counts = np.bincount(sketch_code, minlength=len(sketches))
    mean_rating = np.full((len(sketches), int(counts.max())), np.nan)
    mean_rating[sketch_code, long.groupby("sketch_id").cumcount()] = long["mean_rating"].to_numpy()
    images = tuple(np.split(long["image_id"].to_numpy(dtype=object), np.cumsum(counts)[:-1]))
    return GroundTruth(sketches.astype(object), images, mean_rating, source, sha256, scale=scale)


def ground_truth_from_qrels(
    frame: pd.DataFrame, lines: ArrayLike, *, source: str = "qrels", scale: Scale = PAPER_SCALE
) -> GroundTruth:
    """A ground truth from TREC qrels, ``query_id, iteration, doc_id, grade`` (text), row r
    from line ``lines[r]`` of ``source``. A grade is a whole number >= 0: nDCG's gain;
    grade >= 1 is relevant (trec_eval's default level); tau_b correlates the scores with
    the grades, equal grades tied. An id against the id rule, a bad grade or a pair listed
    twice raises :class:`~sbir_study.foundation.checks.InputError`.

    Examples
    --------
    >>> truth = ground_truth_from_qrels(pd.DataFrame({
    ...     "query_id": ["s1", "s1", "s2"], "iteration": "0", "doc_id": ["a", "b", "c"],
    ...     "grade": ["2", "0", "1"]}), [1, 2, 3])
    >>> truth.grade, truth.relevant(None)
    (array([[ 2.,  0.],
           [ 1., nan]]), array([[ True, False],
           [ True, False]]))
    """
    line = np.asarray(lines)
    text = frame["grade"].astype(str).str.strip()
    grade = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~(np.isfinite(grade) & (grade >= 0) & (grade == np.round(grade)))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{source}, line {line[row]}: grade: got {text.iloc[row]!r}; expected a whole number "
            ">= 0 (the relevance of TREC qrels: sketch_id 0 image_id grade)"
        )
    # ground_truth_from_frame lays out and checks the ids and pairs; the grades replace
    # its placeholder mean ratings.
    placeholder = pd.DataFrame(
        {
            "sketch_id": frame["query_id"],
            "image_id": frame["doc_id"],
            "mean_rating": float(scale.low),
        }
    )
    placeholder.attrs["lines"] = LineNumbers(line.tolist())
    truth = ground_truth_from_frame(placeholder, source=source, scale=scale)
    graded = pd.DataFrame(
        {
            "sketch_id": frame["query_id"].astype(str).str.strip(),
            "image_id": frame["doc_id"].astype(str).str.strip(),
            "grade": grade,
        }
    )
    grades = np.full(truth.mean_rating.shape, np.nan)
    pairs = truth.table()[["sketch_id", "image_id"]].astype(str)  # in the judged cells' order
    grades[truth.judged] = pairs.merge(graded, how="left")["grade"].to_numpy()
    return replace(truth, mean_rating=-grades, qrels_grade=grades)


# --- runs ------------------------------------------------------------------------------------


def load_run(
    path: str | Path,
    truth: GroundTruth,
    *,
    lower_is_better: bool = False,
    name: str | None = None,
    score_precision: str = "float32",
) -> Run:
    """Read a retrieval run and rank it against ``truth``.

    Parameters
    ----------
    path
        A TREC run (six whitespace-separated fields a line) or a comma- or tab-separated
        table whose header has ``sketch_id, image_id, score``.
    lower_is_better
        The scores are distances: smaller means more similar.
    name
        The system's name; default, the file name without its extension.
    score_precision
        ``"float32"`` compares scores as trec_eval 9 (and pytrec_eval), ``"float64"`` as
        trec_eval 10.

    A line with the wrong number of fields, a score that is not finite, a sketch the
    ground truth lacks or an image listed twice for a sketch raises
    :class:`~sbir_study.foundation.checks.InputError` naming the file and line. A
    ground-truth sketch the run does not rank is a :class:`RunWarning`.
    """
    path = check_input_file(path, "a retrieval run (TREC run or sketch_id,image_id,score table)")
    # A stream: the run's bytes are not held while Arrow reads it.
    file = read_text(path, _RUN, stream=True)
    first = file.first_line()
    if first is None:
        raise InputError(f"{path}: empty; expected a TREC run or a sketch_id,image_id,score table")
    fields = first[1].replace("\t", ",").split(",")
    if any(field.strip().strip('"') == "sketch_id" for field in fields):
        sketch_id, image_id, score, lines = _read_table(file, "\t" if "\t" in first[1] else ",")
    else:
        sketch_id, image_id, score, lines = _read_trec(file)
    digest, n_lines = file.sha256, file.lines
    del file
    release_freed()  # the run's bytes, before the ranking needs the memory

    def locate(row: int) -> str:
        return f"{path}, line {lines[row]}"

    run = run_from_scores(
        truth,
        sketch_id,
        image_id,
        score,
        name=name or path.stem,
        lower_is_better=lower_is_better,
        locate=locate,
        score_precision=score_precision,
    )
    return replace(run, source=str(path), sha256=digest, lines=n_lines)


def run_from_scores(
    truth: GroundTruth,
    sketch_id: ArrayLike | pd.Categorical,
    image_id: ArrayLike | pd.Categorical,
    score: ArrayLike,
    *,
    name: str = "system",
    lower_is_better: bool = False,
    locate: Callable[[int], str] | None = None,
    score_precision: str = "float32",
) -> Run:
    """Rank a run given as three parallel arrays, one entry per returned image (ids as
    strings or pandas Categoricals). ``locate(row)`` names a row in errors (default
    ``"row N"``); positions compare the scores at ``score_precision``, ``Run.score``
    keeps them as doubles.

    Examples
    --------
    >>> truth = ground_truth_from_frame(pd.DataFrame({
    ...     "sketch_id": "s", "image_id": ["a", "b", "c"], "mean_rating": [1.0, 4.0, 7.0]}))
    >>> r = run_from_scores(truth, ["s"] * 4, ["x", "b", "a", "y"], [0.9, 0.5, 0.5, 0.1])
    >>> r.rank  # b before a: equal scores, ids in decreasing order (trec_eval)
    array([[ 3.,  2., nan]])
    >>> int(r.n_returned[0])
    4

    Scores equal in single precision are a tie for trec_eval 9:

    >>> near = run_from_scores(truth, ["s", "s"], ["a", "b"], [0.1 + 1e-12, 0.1])
    >>> near.rank, near.score[0, 0] > near.score[0, 1]
    (array([[ 2.,  1., nan]]), np.True_)
    >>> run_from_scores(truth, ["s", "s"], ["a", "b"], [0.1 + 1e-12, 0.1],
    ...                 score_precision="float64").rank
    array([[ 1.,  2., nan]])
    """
    check_option("score_precision", score_precision, SCORE_PRECISIONS)
    if locate is None:

        def locate(row: int) -> str:
            return f"{name}, row {row + 1}"

    score = np.asarray(score, dtype=np.float64)
    query = pd.Categorical(sketch_id)
    doc = pd.Categorical(image_id)
    for column, values in (("sketch_id", query), ("image_id", doc)):
        # The id rule, once per distinct id; a run's ids go into tables and reports.
        bad = bad_ids(values.categories)
        if bad.any():
            row = int(np.flatnonzero(bad[np.asarray(values.codes)])[0])
            raise InputError(f"{locate(row)}: {column}: expected {ID_RULE}, got {values[row]!r}")
    if not (len(query) == len(doc) == len(score)):
        raise InputError(
            f"{name}: sketch_id, image_id and score differ in length "
            f"({len(query)}, {len(doc)}, {len(score)})"
        )
    finite = np.isfinite(score)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        raise InputError(f"{locate(row)}: score: got {score[row]!r}; expected a finite number")
    if lower_is_better:
        score = -score
    sketch_index = pd.Index(truth.sketches).get_indexer(np.asarray(query.categories, dtype=object))
    query_code = np.asarray(query.codes)
    unknown = sketch_index[query_code] < 0
    if unknown.any():
        row = int(np.flatnonzero(unknown)[0])
        raise InputError(
            f"{locate(row)}: sketch {query.categories[query_code[row]]!r} is not in the ground "
            f"truth ({truth.source}); expected one of its {len(truth.sketches)} sketches"
        )
    sketch_of_row = sketch_index[query_code].astype(np.int64)
    doc_names = np.asarray(doc.categories, dtype=object)
    doc_code = np.asarray(doc.codes).astype(np.int64)
    # One key per (sketch, image): its index finds a judged image's row in the kernel.
    keys = pd.Index(sketch_of_row * max(len(doc_names), 1) + doc_code)
    if not keys.is_unique:
        row = int(np.flatnonzero(keys.duplicated(keep="first"))[0])
        first = int(np.flatnonzero(keys == keys[row])[0])
        raise InputError(
            f"{locate(row)}: image {doc_names[doc_code[row]]!r} is listed again for sketch "
            f"{truth.sketches[sketch_of_row[row]]!r} (first at {locate(first)}); expected each "
            "image once per sketch"
        )
    n_returned = np.bincount(sketch_of_row, minlength=len(truth.sketches))
    absent = np.flatnonzero(n_returned == 0)
    if absent.size:
        shown = ", ".join(map(str, truth.sketches[absent[:5]]))
        more = f" and {absent.size - 5} more" if absent.size > 5 else ""
        warnings.warn(
            f"{name}: ranks no image for {absent.size} ground-truth sketch(es): {shown}{more}; "
            "they score as --missing says (0 by default, as trec_eval -c)",
            RunWarning,
            stacklevel=2,
        )
    judged_score, rank = _rank(
        truth, sketch_of_row, doc_code, doc_names, keys, score, n_returned, score_precision
    )
    return Run(
        name, judged_score, rank, n_returned.astype(np.int64), score_precision=score_precision
    )


def _rank(
    truth: GroundTruth,
    sketch_of_row: np.ndarray,
    doc_code: np.ndarray,
    doc_names: np.ndarray,
    keys: pd.Index,
    score: np.ndarray,
    n_returned: np.ndarray,
    score_precision: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Each judged image's score and position in its sketch's order (NaN where not
    returned), from checked rows; ``keys[r]`` is ``sketch * len(doc_names) + image``."""
    n_sketches, width = truth.mean_rating.shape
    n_docs = max(len(doc_names), 1)
    doc_lookup = pd.Index(doc_names)
    judged_rows = np.full((n_sketches, width), -1, dtype=np.int64)
    for s, images in enumerate(truth.images):
        codes = doc_lookup.get_indexer(images)
        judged_keys = np.where(codes >= 0, s * n_docs + codes, -1)
        judged_rows[s, : len(images)] = keys.get_indexer(judged_keys)
    returned = judged_rows >= 0
    judged_score = np.where(returned, score[np.maximum(judged_rows, 0)], np.nan)
    rank = np.full((n_sketches, width), np.nan)
    # trec_eval 9 parses a double and stores it in a float (TEXT_RESULTS.sim).
    with np.errstate(over="ignore"):  # beyond float32's range: infinite there too
        key = score.astype(np.float32).astype(np.float64) if score_precision == "float32" else score
    judged_key = np.where(returned, key[np.maximum(judged_rows, 0)], np.nan)

    # Decreasing string order of the image ids breaks ties in score (trec_eval).
    id_order = np.empty(len(doc_names), dtype=np.int64)
    id_order[np.argsort(doc_names.astype(str), kind="stable")] = np.arange(len(doc_names))
    by_sketch = np.argsort(sketch_of_row, kind="stable")
    ends = np.cumsum(n_returned)
    for s in np.flatnonzero(returned.any(axis=1)):
        rows = by_sketch[ends[s] - n_returned[s] : ends[s]]
        group_score = key[rows]
        ordered = np.sort(group_score)
        columns = np.flatnonzero(returned[s])
        values = judged_key[s, columns]
        left = np.searchsorted(ordered, values, side="left")
        right = np.searchsorted(ordered, values, side="right")
        position = len(ordered) - right + 1.0  # 1 + the number of higher scores
        for k in np.flatnonzero(right - left > 1):
            tied = rows[group_score == values[k]]
            own = id_order[doc_code[judged_rows[s, columns[k]]]]
            position[k] += np.count_nonzero(id_order[doc_code[tied]] > own)
        rank[s, columns] = position
    return judged_score, rank


# --- parsing ---------------------------------------------------------------------------------


def _read_trec(file: TextFile) -> tuple[pd.Series, pd.Series, np.ndarray, np.ndarray]:
    """A TREC run's sketch ids, image ids, scores and the line of each row."""
    header = Header.none(file, _TREC_FIELDS)
    rows = read_rows(
        [(file, header)], wording=_TREC, numbers=["score"], columns=("query_id", "doc_id", "score")
    )
    return rows.frame["query_id"], rows.frame["doc_id"], rows.frame["score"].to_numpy(), rows.lines


def _read_table(
    file: TextFile, sep: str
) -> tuple[pd.Categorical, pd.Categorical, np.ndarray, np.ndarray]:
    """A ``sketch_id, image_id, score`` table's columns (ids stripped) and row lines."""
    header = read_header(file, sep, wording=_RUN_TABLE)
    missing = [c for c in _TABLE_COLUMNS if c not in header.names]
    if missing:
        raise InputError(
            f"{file.path}, line {header.line}: missing column {missing[0]!r}; expected a header "
            "with sketch_id, image_id, score"
        )
    rows = read_rows(
        [(file, header)], wording=_RUN_TABLE, numbers=["score"], columns=_TABLE_COLUMNS
    )
    frame = rows.frame
    return (
        _stripped(frame["sketch_id"]),
        _stripped(frame["image_id"]),
        frame["score"].to_numpy(),
        rows.lines,
    )


def _stripped(ids: pd.Series) -> pd.Categorical:
    """Ids without surrounding blanks (docs/formats.md), stripped once per distinct id."""
    column = pd.Categorical(ids)
    categories = pd.Index(column.categories, dtype=object)
    stripped = categories.str.strip()
    if stripped.equals(categories):
        return column
    merged, distinct = pd.factorize(stripped)
    return pd.Categorical.from_codes(merged[np.asarray(column.codes)], distinct)
