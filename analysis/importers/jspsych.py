"""jsPsych data: the keyboard-response trials of ``jsPsych.data.get()``'s ``.json`` or ``.csv``.

``sbir-study import jspsych`` (``docs/formats.md``, "Ratings collected elsewhere"): a
trial's key mapped to the scale, its ``rt`` in ms, its pair named by its fields or
found through a stimulus set (:func:`stimulus_paths`).
"""

from __future__ import annotations

import json
import re
import urllib.parse
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import InputError, did_you_mean
from sbir_study.foundation.tables import MISSING_VALUES

from .cells import ALIASES, cell_error, check_ids, parse_number
from .dataset import ImportedRatings, ImportedRatingsWarning
from .delimited import SourceTable, decode_text, parse_delimited

__all__ = ["JSPSYCH_COLUMNS", "JSPSYCH_TRIAL_TYPES", "read_jspsych", "stimulus_paths"]

#: jsPsych's plugins whose trials are ratings: a key pressed while a stimulus is shown.
JSPSYCH_TRIAL_TYPES = ("html-keyboard-response", "image-keyboard-response")
#: The plugin of ``sbir-study serve``'s page: its ratings are on the server, not in jsPsych's data.
_SBIR_PLUGIN = "sbir-rating"
#: The columns of the ratings table a jsPsych import reads, each from a field of the trials.
JSPSYCH_COLUMNS = ("participant", "sketch_id", "image_id", "phase", "rating", "rt")
#: The field of a keyboard trial holding the key (jsPsych 6.3 and later; ``key_press``
#: with a key code before).
_JSPSYCH_KEY_FIELDS = ("response", "key_press")
_ANCHOR_PHASES = ("anchor_demo", "anchor_repeat")
_JSON_GAP = re.compile(r"[\s,]*")


def read_jspsych(
    paths: Sequence[str | Path],
    *,
    keys: Mapping[str, int],
    manifest: pd.DataFrame | None = None,
    columns: Mapping[str, str] | None = None,
    select: Mapping[str, str] | None = None,
    encoding: str | None = None,
    stimulus_set: Mapping[str, str] | None = None,
) -> ImportedRatings:
    """Read jsPsych data files of keyboard-response trials (``.json`` or ``.csv``).

    Parameters
    ----------
    paths
        Files as ``jsPsych.data.get().json()`` or ``.csv()`` writes them; ``*.json`` (or
        a file beginning with ``[``) is JSON.
    keys
        The rating of each key (``--keys``); a key is also found in lower case.
    manifest
        A stimulus set's manifest (``sketch_id, image_id, sketch_path, image_path``,
        ``anchor_rating``): a trial's stimulus (a path, or every ``<img>`` ``src`` of its
        HTML) names a file when the shorter path ends the longer (query and ``./``
        dropped, ``%20`` decoded); the pair is the one whose image (and sketch) it names.
    columns
        Ratings-table column -> trial field: ``sketch_id`` and ``image_id`` (in place of
        ``manifest``), ``participant`` (default ``participant``, ``participant_id``,
        ``subject`` or ``subject_id``, else the file's name), ``phase``, ``rating``
        (default ``response``, or ``key_press`` before jsPsych 6.3) and ``rt`` (ms).
    select
        Field -> value of a rating trial (``task=rating``); without it, the
        keyboard-response trials (:data:`JSPSYCH_TRIAL_TYPES`) whose stimulus names a file
        or whose ``sketch_id`` or ``image_id`` field is given.
    stimulus_set
        What to record of the stimulus set (its folder and digest).

    Returns
    -------
    ImportedRatings
        A row per rating trial in file order (``trial`` from 1 per participant and file),
        ``rt`` in seconds, a trial without a key a missing rating. A stimulus that names
        no one pair, or a key that is no rating key, is refused naming line and field.
    """
    columns = dict(columns or {})
    unknown = [c for c in columns if c not in JSPSYCH_COLUMNS]
    if unknown:
        raise InputError(
            f"--columns: {unknown[0]!r} is not read from jsPsych data; expected "
            f"one of {', '.join(JSPSYCH_COLUMNS)}"
        )
    by_fields = "sketch_id" in columns or "image_id" in columns
    if by_fields and not ("sketch_id" in columns and "image_id" in columns):
        raise InputError(
            "--columns: expected both sketch_id and image_id, the fields naming the pair"
        )
    if by_fields == (manifest is not None):
        raise InputError(
            "jsPsych: expected either a stimulus set (--stimuli) or the fields "
            "naming the pair (--columns sketch_id=...,image_id=...), one of them"
        )
    matcher = None if by_fields else _StimulusMatcher(manifest)
    select = dict(select or {})
    frames: list[pd.DataFrame] = []
    sources: dict[str, str] = {}
    encodings: dict[str, str] = {}
    fields: dict[str, str] = {}
    tags: dict[str, Counter | None] = {}
    for path in map(Path, paths):
        table = _jspsych_records(path, encoding)
        frame, found, rows = _jspsych_ratings(table, columns, select, matcher, keys)
        if not select:
            _count_tags(tags, table, rows, skip=found.values())
        frames.append(frame)
        sources[str(path)] = table.sha256
        encodings[str(path)] = table.encoding
        fields = fields or found  # the first file's, as every sidecar records them
    ratings = pd.concat(frames, ignore_index=True)
    _warn_of_tags(tags, len(ratings))
    ratings["trial"] = ratings.groupby(["_source", "participant"], sort=False).cumcount() + 1
    on_anchor = ratings["phase"].isin(_ANCHOR_PHASES)
    if matcher is not None and "anchor_rating" in matcher.manifest and on_anchor.any():
        prescribed = matcher.manifest.set_index(["sketch_id", "image_id"])["anchor_rating"]
        keys_of = pd.MultiIndex.from_frame(ratings.loc[on_anchor, ["sketch_id", "image_id"]])
        ratings["anchor_rating"] = pd.Series(pd.NA, index=ratings.index, dtype=object)
        ratings.loc[on_anchor, "anchor_rating"] = prescribed.reindex(keys_of).to_numpy()
    settings: dict[str, object] = {
        "Format": "jsPsych",
        "Columns": fields,
        "Pair": "fields" if by_fields else "stimulus paths matched to the stimulus set's files",
        "TrialTypes": list(JSPSYCH_TRIAL_TYPES),
        "Select": select,
        "Keys": dict(keys),
        "RtUnit": "ms",
        "Encoding": encodings,
    }
    if stimulus_set:
        settings["StimulusSet"] = dict(stimulus_set)
    return ImportedRatings(ratings, sources, settings)


def _jspsych_records(path: Path, encoding: str | None) -> SourceTable:
    """A jsPsych file's trials as text cells (missing: ``""``), from ``.json()`` or ``.csv()``."""
    text, sha256, used = decode_text(path, encoding)
    stripped = text.lstrip()
    is_json = path.suffix.lower() == ".json" or (
        path.suffix.lower() != ".csv" and stripped.startswith(("[", "{"))
    )
    if not is_json:
        table = parse_delimited(path, text, sha256, used, sep=",")
        return replace(table, frame=table.frame.astype(str).replace("null", ""))
    return _json_table(path, text, sha256, used)


def _json_table(path: Path, text: str, sha256: str, used: str) -> SourceTable:
    """The trials of ``jsPsych.data.get().json()``'s text as a table: one row per trial,
    one column per field any trial has, each row's line the one its trial begins on."""
    try:
        trials = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"{path}: line {error.lineno}: not JSON ({error.msg} at column "
            f"{error.colno}); expected jsPsych's data as .json() writes it"
        ) from None
    if not isinstance(trials, list):
        raise InputError(
            f"{path}: line 1: a JSON {type(trials).__name__}; expected a list of "
            "trials, as jsPsych.data.get().json() writes it"
        )
    # Where each trial begins, for messages naming its line.
    decoder, starts, at = json.JSONDecoder(), [], text.index("[") + 1
    for _ in trials:
        gap = _JSON_GAP.match(text, at)
        at = gap.end() if gap else at
        starts.append(at)
        at = decoder.raw_decode(text, at)[1]
    newlines = np.array([m.start() for m in re.finditer("\n", text)], dtype=np.int64)
    lines = np.searchsorted(newlines, np.asarray(starts, dtype=np.int64)) + 1
    names: dict[str, None] = {}
    for trial, line in zip(trials, lines, strict=True):
        if not isinstance(trial, dict):
            raise InputError(
                f"{path}: line {line}: a JSON {type(trial).__name__}; expected a trial object"
            )
        names.update(dict.fromkeys(trial))
    frame = pd.DataFrame(
        [[_json_cell(trial.get(name)) for name in names] for trial in trials],
        columns=list(names),
        dtype=object,
    )
    return SourceTable(str(path), sha256, used, "", tuple(names), frame, lines)


def _json_cell(value: object) -> str:
    """A JSON value as the text jsPsych's ``.csv()`` writes for it; null (and absent) ``""``."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _key_lookup(keys: Mapping[str, int]) -> dict[str, int]:
    """The keys, and in lower case too where that is unambiguous (jsPsych records keys in
    lower case unless ``case_sensitive_responses``)."""
    lookup = dict(keys)
    lower: dict[str, list[str]] = {}
    for key in keys:
        lower.setdefault(key.lower(), []).append(key)
    for key, same in lower.items():
        if len(same) == 1:
            lookup.setdefault(key, keys[same[0]])
    return lookup


def _shortened(text: str, limit: int = 120) -> str:
    """A long HTML stimulus cut for a one-line message."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _jspsych_ratings(
    table: SourceTable,
    columns: Mapping[str, str],
    select: Mapping[str, str],
    matcher: _StimulusMatcher | None,
    keys: Mapping[str, int],
) -> tuple[pd.DataFrame, dict[str, str], np.ndarray]:
    """One file's rating trials as rows of the ratings table, the fields they came from, and
    the trials' rows."""
    rows, found, html = _rating_trials(table, columns, select, matcher)
    participant = _field(table, columns, "participant", ("participant", *ALIASES["participant"]))
    key_field = _required_field(table, columns, "rating", _JSPSYCH_KEY_FIELDS)
    rt_field = _required_field(table, columns, "rt", ("rt",))
    phase_field = _field(table, columns, "phase", ())
    sketch, image = _trial_pairs(table, rows, found, matcher, html)
    given = _trial_participants(table, rows, participant)
    found["participant"] = "(the file's name)" if participant is None else participant
    ratings, times = _keys_and_times(table, rows, key_field, rt_field, keys)
    found.update({"rating": key_field, "rt": rt_field})
    phase = "main"
    if phase_field is not None:
        phase = table.frame[phase_field].str.strip().iloc[rows].to_numpy()
        found["phase"] = phase_field
    result = pd.DataFrame(
        {
            "participant": given.to_numpy(),
            "sketch_id": sketch.to_numpy(),
            "image_id": image.to_numpy(),
            "phase": phase,
            "rating": pd.array(ratings, dtype="Int64"),
            "rt": np.asarray(times, dtype=float),
            "_source": table.path,
            "_line": table.lines[rows],
        }
    )
    return result, found, rows


#: jsPsych's own fields of every trial, which tell no rating trial from another.
_JSPSYCH_OWN_FIELDS = (
    *("trial_type", "trial_index", "time_elapsed", "internal_node_id", "plugin_version"),
    "stimulus",
)
#: At most this many values make a field a tag of the trials (``task``: practice, rate).
_MAX_TAG_VALUES = 5


def _count_tags(
    tags: dict[str, Counter | None], table: SourceTable, rows: np.ndarray, skip: Iterable[str]
) -> None:
    """Add the counts of each value of the rating trials' fields (but those read and
    jsPsych's own) to ``tags``; a field with a number, ``true``/``false`` or many values is
    no tag (None)."""
    skipped = {*skip, *_JSPSYCH_OWN_FIELDS}
    for name in table.names:
        before = tags.get(name, Counter())
        if name in skipped or before is None:
            continue
        values = table.frame[name].iloc[rows].str.strip()
        counts = before + Counter(values[values != ""])
        tags[name] = (
            None if len(counts) > _MAX_TAG_VALUES or any(map(_not_text, counts)) else counts
        )


def _not_text(value: str) -> bool:
    """Whether a field's value is a number or a JSON boolean, which no tag is."""
    try:
        float(value)
    except ValueError:
        return value in ("true", "false")
    return True


def _warn_of_tags(tags: dict[str, Counter | None], n_trials: int) -> None:
    """Warn once of the fields that take a few text values on the rating trials (a practice
    block tagged ``task: practice``), each with its values and the ``--select`` keeping one."""
    said = []
    for name, counts in tags.items():
        if counts is None or not 2 <= len(counts) <= min(_MAX_TAG_VALUES, n_trials / 2):
            continue
        values = sorted(counts)
        most = max(values, key=lambda v: counts[v])
        listed = ", ".join(f"{v} ({counts[v]})" for v in values)
        said.append(
            f"field {name!r} takes {len(values)} values on the rating trials: {listed}; pass "
            f"--select {name}={most} to keep one"
        )
    if said:
        warnings.warn("; ".join(said), ImportedRatingsWarning, stacklevel=3)


def _field(
    table: SourceTable, columns: Mapping[str, str], target: str, default: Sequence[str]
) -> str | None:
    """The field of the trials holding ``target``: as ``columns`` maps it, else the first of
    ``default`` the trials have, else None."""
    if target in columns:
        if columns[target] not in table.names:
            word = "column" if table.sep else "field"
            hint = did_you_mean(columns[target], table.names)
            raise InputError(
                f"{table.path}: line 1: no {word} {columns[target]!r} (mapped "
                f"to {target}) in any trial{hint}"
            )
        return columns[target]
    present = [name for name in default if name in table.names]
    return present[0] if present else None


def _required_field(
    table: SourceTable, columns: Mapping[str, str], target: str, default: Sequence[str]
) -> str:
    """:func:`_field`, which the trials must have."""
    found = _field(table, columns, target, default)
    if found is None:
        word = "column" if table.sep else "field"
        raise InputError(
            f"{table.path}: line 1: no {word} {default[0]!r} in any trial; "
            f"expected jsPsych's data of keyboard-response trials"
        )
    return found


def _rating_trials(
    table: SourceTable,
    columns: Mapping[str, str],
    select: Mapping[str, str],
    matcher: _StimulusMatcher | None,
) -> tuple[np.ndarray, dict[str, str], np.ndarray]:
    """The rating trials' rows, the fields naming their pair, and whether each stimulus is HTML."""
    word = "column" if table.sep else "field"
    frame = table.frame
    types = frame[_required_field(table, columns, "trial_type", ("trial_type",))].str.strip()
    chosen = types.isin(JSPSYCH_TRIAL_TYPES).to_numpy().copy()
    if not chosen.any() and (types == _SBIR_PLUGIN).any():
        raise InputError(
            f"{table.path}: no rating trials; its trials are {_SBIR_PLUGIN} trials, whose "
            "ratings the server stores: take the dataset of sbir-study export-online"
        )
    for name, value in select.items():
        if name not in table.names:
            raise InputError(f"{table.path}: line 1: no {word} {name!r} (--select) in any trial")
        chosen &= (frame[name].str.strip() == value).to_numpy()
    html = (types != "image-keyboard-response").to_numpy()
    found: dict[str, str] = {}
    if matcher is None:
        for target in ("sketch_id", "image_id"):
            found[target] = _required_field(table, columns, target, ())
        if not select:
            named = frame[found["sketch_id"]].str.strip().ne("") | frame[
                found["image_id"]
            ].str.strip().ne("")
            chosen &= named.to_numpy()
    else:
        stimulus = _required_field(table, columns, "stimulus", ("stimulus",))
        found.update(sketch_id=stimulus, image_id=stimulus)
        if not select:
            named = [matcher.names_a_file(s, h) for s, h in zip(frame[stimulus], html, strict=True)]
            chosen &= np.array(named, dtype=bool)
    rows = np.flatnonzero(chosen)
    if not len(rows):
        why = f"expected {' or '.join(JSPSYCH_TRIAL_TYPES)} trials" + (
            " whose stimulus names a file of the stimulus set"
            if matcher
            else " whose fields name the sketch and the image"
        )
        if select:
            why += f" and {', '.join(f'{k}={v}' for k, v in select.items())}"
        raise InputError(f"{table.path}: no rating trials; {why}")
    return rows, found, html


def _trial_pairs(
    table: SourceTable,
    rows: np.ndarray,
    found: Mapping[str, str],
    matcher: _StimulusMatcher | None,
    html: np.ndarray,
) -> tuple[pd.Series, pd.Series]:
    """The sketch and the image of each rating trial: from their fields (their ids
    checked), or the pair of the set its stimulus shows."""
    frame = table.frame
    if matcher is None:
        sketch = frame[found["sketch_id"]].str.strip().iloc[rows]
        image = frame[found["image_id"]].str.strip().iloc[rows]
        for target, cells in (("sketch_id", sketch), ("image_id", image)):
            check_ids(table, cells.reindex(frame.index, fill_value="x"), found[target])
        return sketch, image
    pairs = []
    for row in rows:
        cell = frame[found["sketch_id"]].iloc[row]
        pair = matcher.pair(cell, bool(html[row]))
        if isinstance(pair, str):
            raise cell_error(
                table,
                int(row),
                found["sketch_id"],
                f"a stimulus showing one pair of the stimulus set ({pair})",
                _shortened(cell),
            )
        pairs.append(pair)
    return (
        pd.Series([p[0] for p in pairs], dtype=object),
        pd.Series([p[1] for p in pairs], dtype=object),
    )


def _trial_participants(table: SourceTable, rows: np.ndarray, field: str | None) -> pd.Series:
    """Each rating trial's participant id: its ``field``, else the file's name."""
    if field is None:
        return pd.Series(Path(table.path).stem, index=rows, dtype=object)
    given = table.frame[field].str.strip().iloc[rows]
    blank = given.isin(MISSING_VALUES).to_numpy()
    if blank.any():
        raise cell_error(
            table,
            int(rows[np.argmax(blank)]),
            field,
            "the participant's id",
            given.iloc[int(np.argmax(blank))],
        )
    return given


def _keys_and_times(
    table: SourceTable, rows: np.ndarray, key_field: str, rt_field: str, keys: Mapping[str, int]
) -> tuple[list, list[float]]:
    """Each rating trial's rating (its key's; <NA> without one) and its time in seconds."""
    lookup = _key_lookup(keys)
    frame = table.frame
    ratings, times = [], []
    for row in rows:
        key = frame[key_field].iloc[row].strip()
        cell = frame[rt_field].iloc[row]
        if key in MISSING_VALUES:
            ratings.append(pd.NA)
            times.append(np.nan)
            continue
        if key not in lookup:
            raise cell_error(
                table,
                int(row),
                key_field,
                f"a rating key ({', '.join(dict.fromkeys(keys))}) or null; pass "
                "the study's keys with --keys",
                key,
            )
        try:
            rt = parse_number(cell)
        except ValueError:
            rt = -1.0
        if not rt >= 0:
            raise cell_error(table, int(row), rt_field, "a time in ms of 0 or more", cell)
        ratings.append(lookup[key])
        times.append(rt / 1000)
    return ratings, times


class _Sources(HTMLParser):
    """Every ``src`` of an HTML fragment, its character references resolved."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.sources += [value for name, value in attrs if name == "src" and value]


def stimulus_paths(stimulus: str, *, html: bool = True) -> list[str]:
    """The files a jsPsych stimulus names: every ``src`` of its HTML, or (``html=False``) itself.

    Examples
    --------
    >>> stimulus_paths('<img src="sk/cat.png"><img src=\\'img/cat/a&amp;b.jpg\\'>')
    ['sk/cat.png', 'img/cat/a&b.jpg']
    >>> stimulus_paths("<p>Press a key</p>"), stimulus_paths("img/a.jpg", html=False)
    ([], ['img/a.jpg'])
    """
    text = stimulus.strip()
    if not html:
        return [text] if text else []
    parser = _Sources()
    parser.feed(text)
    parser.close()
    return parser.sources


def _path_parts(path: str) -> tuple[str, ...]:
    """A path or URL as its folder and file names (query, fragment and ``./`` dropped)."""
    parsed = urllib.parse.urlsplit(path.strip().replace("\\", "/"))
    if parsed.scheme in ("data", "blob"):
        return ()
    names = urllib.parse.unquote(parsed.path).split("/")
    return tuple(name for name in names if name not in ("", "."))


def _same_file(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether two paths may name one file: the shorter is the end of the longer."""
    n = min(len(a), len(b))
    return n > 0 and a[-n:] == b[-n:]


class _StimulusMatcher:
    """The pair a trial's stimulus shows, through a manifest."""

    def __init__(self, manifest: pd.DataFrame) -> None:
        missing = [
            c for c in ("sketch_id", "image_id", "sketch_path", "image_path") if c not in manifest
        ]
        if missing:
            raise InputError(
                f"manifest: no column {missing[0]!r}; expected a stimulus set's "
                "manifest (sketch_id, image_id, sketch_path, image_path)"
            )
        self.manifest = manifest.reset_index(drop=True)
        # Each file of the set under its file name: (its parts, "sketch" or "image", its path).
        self.files: dict[str, list[tuple[tuple[str, ...], str, str]]] = {}
        for kind in ("sketch", "image"):
            for path in pd.unique(self.manifest[f"{kind}_path"].astype(str)):
                parts = _path_parts(path)
                if parts:
                    self.files.setdefault(parts[-1], []).append((parts, kind, path))

    def names_a_file(self, stimulus: str, html: bool) -> bool:
        """Whether the stimulus names any file (a text screen names none)."""
        return any(_path_parts(path) for path in stimulus_paths(stimulus, html=html))

    def pair(self, stimulus: str, html: bool) -> tuple[str, str] | str:
        """``(sketch_id, image_id)``, or why the stimulus names no one pair of the set."""
        sketches: set[str] = set()
        images: set[str] = set()
        paths = stimulus_paths(stimulus, html=html)
        if not paths:
            return "it names no file"
        for path in paths:
            parts = _path_parts(path)
            found = [
                f for f in self.files.get(parts[-1] if parts else "", []) if _same_file(parts, f[0])
            ]
            if len({f[2] for f in found}) > 1:
                named = " and ".join(sorted({f"{f[1]} {f[2]!r}" for f in found}))
                return f"its file {path!r} could be the set's {named}; name the pair with --columns"
            for _, kind, listed in found:
                (sketches if kind == "sketch" else images).add(listed)
        rows = self.manifest[self.manifest["image_path"].astype(str).isin(images)]
        if sketches:
            rows = rows[rows["sketch_path"].astype(str).isin(sketches)]
        pairs = list(dict.fromkeys(zip(rows["sketch_id"], rows["image_id"], strict=True)))
        if len(pairs) == 1:
            return pairs[0]
        if not images:
            return "its files are no image of the stimulus set"
        if not pairs:
            return "its sketch and image are no pair of the stimulus set"
        return (
            f"its image is in {len(pairs)} pairs of the set ({pairs[0][0]}, {pairs[1][0]}"
            f"{', ...' if len(pairs) > 2 else ''}) and no sketch of the set is shown "
            "with it; name the pair with --columns"
        )
