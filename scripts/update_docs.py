"""Rewrite the numbers the documentation quotes from `make run`, from what it wrote.

`make run` writes a demonstration into build/demo/: a simulated paper-sized study and
its analysis (``analysis/``), and the retrieval benchmark (``retrieval/``). README.md
and docs/*.md quote some of its numbers; each quoted number sits in a marked span::

    the best distance scores tau_b <!-- demo: evaluation.best_distance_tau_b -->0.664<!-- /demo -->

The HTML comments are invisible on GitHub (and in other Markdown renderers), so a
reader sees only ``0.664``. The key after ``demo:`` names one entry of DEFINITIONS
below, which says from which file of the demonstration the value comes, from which
row and column, and how it is rounded; one key may be quoted in several places.

A span opens and closes on one line and holds no other span. It never stands in
code (a fenced block or backticks), where a renderer shows comments as written, nor
at the start of a line, which Markdown would read as an HTML block cut out of its
paragraph. Numbers that are not outputs of `make run` (the paper's published values,
the design, limits, measured times) stay plain text.

This script runs nothing: it reads the files `make run` wrote, rewrites the text of
every span in README.md and docs/*.md, and copies the current Fig. 5 over
docs/img/fig5_interuser.png when its pixels differ.

    python scripts/update_docs.py            # rewrite the spans, copy Fig. 5
    python scripts/update_docs.py --check    # change nothing; exit 1 listing what differs
    python scripts/update_docs.py --list     # every key: its file, row and column, value

``--demo DIR`` reads another demonstration (default build/demo) and ``--root DIR``
another checkout. A missing output, an unknown key or a malformed span is one line
and exit status 2. tests/test_docs.py runs the demonstration afresh and compares
every span with it.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from sbir_study.foundation.checks import InputError

ROOT = Path(__file__).resolve().parents[1]

_ANALYSIS = "analysis"
_EVALUATION = "retrieval/evaluation"
_SUMMARY_JSON = f"{_ANALYSIS}/summary.json"
_KENDALL_W = f"{_ANALYSIS}/kendall_w.csv"
_EVALUATION_JSON = f"{_EVALUATION}/evaluation.json"
_EVALUATION_SUMMARY = f"{_EVALUATION}/summary.csv"
_RETRIEVAL_SIDECARS = "retrieval/data/sub-*/beh/*_beh.json"
_RETRIEVAL_SET = "retrieval/stimuli"

#: Figures the documentation shows: (file in the demonstration, file in the checkout).
FIGURES = [(f"{_ANALYSIS}/figures/fig5_interuser.png", "docs/img/fig5_interuser.png")]

#: The distances whose mean tau_b docs/evaluation.md quotes.
QUOTED_DISTANCES = ("l0.5", "chi2", "hi", "l1", "l2", "mahalanobis", "linf")

SPAN = re.compile(r"<!-- demo: (?P<key>[A-Za-z0-9_.-]+) -->(?P<text>.*?)<!-- /demo -->")
#: Any piece of a marker, to find one that SPAN does not match whole.
_MARKER = re.compile(r"<!--\s*/?\s*demo\b")
#: A line that Markdown reads as the start of an HTML block (a comment).
_BLOCK_START = re.compile(r" {0,3}<!--")


@dataclass(frozen=True)
class Definition:
    """Where one quoted value comes from.

    ``file`` is relative to the demonstration folder; ``where`` names the row and
    column (or the computation over them), ``rounding`` how the text is written, and
    ``read`` returns that text from a demonstration folder.
    """

    key: str
    file: str
    where: str
    rounding: str
    read: Callable[[Path], str]


@dataclass(frozen=True)
class Span:
    """One marked span of a document: its key and text, and where it stands."""

    path: Path
    line: int
    key: str
    text: str


@dataclass(frozen=True)
class Stale:
    """A span whose text differs from the value the demonstration gives."""

    span: Span
    value: str
    source: str

    def describe(self, root: Path) -> str:
        where = _relative(self.span.path, root)
        return (
            f"{where}:{self.span.line}: {self.span.key}: the text says {self.span.text!r}, "
            f"{self.source} gives {self.value!r}"
        )


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _file(demo: Path, relative: str) -> Path:
    path = demo / relative
    if not path.exists():
        raise InputError(
            f"{path}: not found; run `make run` first (or name the folder with --demo)"
        )
    return path


def _json(demo: Path, relative: str) -> dict:
    return json.loads(_file(demo, relative).read_text(encoding="utf-8"))


def _csv(demo: Path, relative: str) -> list[dict[str, str]]:
    with _file(demo, relative).open(newline="", encoding="utf-8") as table:
        return list(csv.DictReader(table))


def _three_decimals(value: float) -> str:
    return f"{value:.3f}"


def _field(demo: Path, relative: str, *names: str) -> object:
    value: object = _json(demo, relative)
    for name in names:
        if not isinstance(value, dict) or name not in value:
            raise InputError(f"{demo / relative}: no field {'.'.join(names)!r}")
        value = value[name]
    return value


def _whole(demo: Path, path: tuple[str, ...]) -> str:
    """A whole number of the analysis' summary.json, at ``path`` (its nested fields)."""
    return str(int(_field(demo, _SUMMARY_JSON, *path)))


def _tau_b_means(demo: Path) -> dict[str, float]:
    """Mean tau_b per system (``human`` included) from evaluate's summary.csv."""
    rows = _csv(demo, _EVALUATION_SUMMARY)
    return {row["system"]: float(row["mean"]) for row in rows if row["measure"] == "tau_b"}


def _mean_tau_b(demo: Path, system: str) -> str:
    means = _tau_b_means(demo)
    if system not in means:
        raise InputError(f"{demo / _EVALUATION_SUMMARY}: no row for system {system!r}, tau_b")
    return _three_decimals(means[system])


def _distances(demo: Path) -> list[str]:
    """The systems `make run` scored: one baseline run per distance."""
    return list(_field(demo, _EVALUATION_JSON, "systems"))


def _best_distance_tau_b(demo: Path) -> str:
    """The largest mean tau_b of the distances (the participants, ``human``, are none)."""
    return max((_mean_tau_b(demo, system) for system in _distances(demo)), key=float)


def _w_cells(demo: Path) -> str:
    return str(sum(int(row["n_raters_all"]) for row in _csv(demo, _KENDALL_W)))


def _set_digest(demo: Path) -> str:
    sidecars = sorted(demo.glob(_RETRIEVAL_SIDECARS))
    if not sidecars:
        raise InputError(f"{demo / _RETRIEVAL_SIDECARS}: no sidecar found; run `make run` first")
    digest = json.loads(sidecars[0].read_text(encoding="utf-8"))["StimulusSetDigest"]
    return digest[:8]


def _set_size_mb(demo: Path) -> str:
    folder = _file(demo, _RETRIEVAL_SET)
    # The output record beside the set's files is not part of the set (docs/outputs.md).
    sizes = [
        path.stat().st_size
        for path in folder.rglob("*")
        if path.is_file() and path.name != ".sbir-study-output.json"
    ]
    return str(round(sum(sizes) / 1e6))


DEFINITIONS: dict[str, Definition] = {
    definition.key: definition
    for definition in [
        Definition(
            "evaluation.n_distances",
            _EVALUATION_JSON,
            "the number of entries of `systems` (one baseline run per distance)",
            "a whole number",
            lambda demo: str(len(_distances(demo))),
        ),
        Definition(
            "evaluation.best_distance_tau_b",
            _EVALUATION_SUMMARY,
            "`mean` of the row of measure `tau_b` with the largest `mean` among the systems "
            "of evaluation.json (the participants, `human`, are not one of them)",
            "3 decimals",
            _best_distance_tau_b,
        ),
        Definition(
            "evaluation.human_tau_b",
            _EVALUATION_SUMMARY,
            "`mean` of system `human`, measure `tau_b` (each participant against the "
            "others' consensus)",
            "3 decimals",
            partial(_mean_tau_b, system="human"),
        ),
        *[
            Definition(
                f"evaluation.tau_b.{system}",
                _EVALUATION_SUMMARY,
                f"`mean` of system `{system}`, measure `tau_b`",
                "3 decimals",
                partial(_mean_tau_b, system=system),
            )
            for system in QUOTED_DISTANCES
        ],
        Definition(
            "agreement.w_raters_min",
            _SUMMARY_JSON,
            "`kendall_w.n_raters_min`: the fewest participants a sketch's W stands on",
            "a whole number",
            partial(_whole, path=("kendall_w", "n_raters_min")),
        ),
        Definition(
            "agreement.w_raters_max",
            _SUMMARY_JSON,
            "`kendall_w.n_raters_max`: the most participants a sketch's W stands on",
            "a whole number",
            partial(_whole, path=("kendall_w", "n_raters_max")),
        ),
        Definition(
            "agreement.w_cells_dropped",
            _SUMMARY_JSON,
            "`kendall_w.n_raters_excluded`: participant-sketch cells left out of W",
            "a whole number",
            partial(_whole, path=("kendall_w", "n_raters_excluded")),
        ),
        Definition(
            "agreement.w_cells",
            _KENDALL_W,
            "the sum of `n_raters_all` over the sketches: participant-sketch cells",
            "a whole number",
            _w_cells,
        ),
        Definition(
            "stimuli.set_digest",
            _RETRIEVAL_SIDECARS,
            "`StimulusSetDigest` of the first sidecar (by name) of the simulated "
            "participants who rated the generated set",
            "its first 8 hexadecimal digits",
            _set_digest,
        ),
        Definition(
            "stimuli.set_size_mb",
            _RETRIEVAL_SET,
            "the bytes of every file of the generated set (its output record aside)",
            "megabytes of 10^6 bytes, to a whole number",
            _set_size_mb,
        ),
    ]
}


def documents(root: Path) -> list[Path]:
    """The documents whose spans this script keeps: README.md and docs/*.md."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def find_spans(text: str, path: Path) -> list[Span]:
    """Every marked span of ``text`` (the contents of ``path``), in order.

    Raises
    ------
    InputError
        A marker that is not part of a whole span on one line, a span in a fenced code
        block, or a span whose key DEFINITIONS does not hold; naming the file and line.
    """
    spans = []
    fence = None
    # Lines as an editor counts them; str.splitlines would also break at a form feed.
    for number, line in enumerate(re.split(r"\r\n|\r|\n", text), start=1):
        stripped = line.lstrip()
        if fence is None and stripped[:3] in ("```", "~~~"):
            fence = stripped[:3]
        elif fence is not None and stripped.startswith(fence):
            fence = None
        found = list(SPAN.finditer(line))
        if _MARKER.search(SPAN.sub("", line)) or any("<!--" in m["text"] for m in found):
            raise InputError(
                f"{path}:{number}: a demo span must open and close on one line and hold no "
                "other: <!-- demo: KEY -->TEXT<!-- /demo -->"
            )
        if found and fence is not None:
            raise InputError(f"{path}:{number}: a demo span in a code block shows as written")
        if found and _BLOCK_START.match(line):
            # CommonMark: a line that begins with "<!--" starts an HTML block, which ends
            # the paragraph and shows the rest of the line as raw HTML, Markdown unread.
            raise InputError(
                f"{path}:{number}: a line must not begin with a demo span (Markdown would "
                "read the line as an HTML block): put a word before it"
            )
        for match in found:
            if match["key"] not in DEFINITIONS:
                raise InputError(
                    f"{path}:{number}: unknown demo key {match['key']!r} "
                    f"(scripts/update_docs.py defines: {', '.join(sorted(DEFINITIONS))})"
                )
            spans.append(Span(path, number, match["key"], match["text"]))
    return spans


def rewrite(text: str, values: dict[str, str], path: Path) -> str:
    """``text`` with every span's text replaced by the value of its key."""
    find_spans(text, path)  # raises on a malformed span before anything is replaced
    return SPAN.sub(
        lambda match: f"<!-- demo: {match['key']} -->{values[match['key']]}<!-- /demo -->", text
    )


def demo_values(demo: Path) -> dict[str, str]:
    """The text of every key of DEFINITIONS, read from the demonstration in ``demo``."""
    return {key: definition.read(demo) for key, definition in DEFINITIONS.items()}


def stale_spans(root: Path, demo: Path, values: dict[str, str]) -> list[Stale]:
    """The spans of the documents under ``root`` whose text differs from ``values``."""
    stale = []
    for path in documents(root):
        for span in find_spans(path.read_bytes().decode("utf-8"), path):
            if span.text != values[span.key]:
                source = _relative(demo / DEFINITIONS[span.key].file, root)
                stale.append(Stale(span, values[span.key], source))
    return stale


def same_pixels(first: Path, second: Path) -> bool:
    """Whether two images hold the same pixels (their metadata may differ)."""
    from PIL import Image

    with Image.open(first) as one, Image.open(second) as other:
        return one.size == other.size and (
            one.convert("RGBA").tobytes() == other.convert("RGBA").tobytes()
        )


def stale_figures(root: Path, demo: Path) -> list[tuple[Path, Path]]:
    """(demonstration figure, checkout copy) for every copy that differs from its figure."""
    pairs = [(_file(demo, made), root / shown) for made, shown in FIGURES]
    return [
        (made, shown) for made, shown in pairs if not shown.exists() or not same_pixels(made, shown)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 listing what differs"
    )
    parser.add_argument(
        "--list", action="store_true", help="every key: its file, row and column, and value"
    )
    parser.add_argument(
        "--demo",
        type=Path,
        default=ROOT / "build" / "demo",
        help="the folder `make run` wrote (default build/demo)",
    )
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the checkout whose README.md and docs/ to read"
    )
    args = parser.parse_args(argv)
    try:
        values = demo_values(args.demo)
        if args.list:
            for key, definition in DEFINITIONS.items():
                print(
                    f"{key} = {values[key]}: {definition.file}: {definition.where}; "
                    f"{definition.rounding}"
                )
            return 0
        stale = stale_spans(args.root, args.demo, values)
        figures = stale_figures(args.root, args.demo)
        if args.check:
            for entry in stale:
                print(entry.describe(args.root))
            for made, shown in figures:
                print(f"{_relative(shown, args.root)}: differs from {_relative(made, args.root)}")
            return 1 if stale or figures else 0
        for path in {entry.span.path for entry in stale}:
            text = path.read_bytes().decode("utf-8")
            path.write_bytes(rewrite(text, values, path).encode("utf-8"))
        for made, shown in figures:
            shutil.copyfile(made, shown)
        for entry in stale:
            where = f"{_relative(entry.span.path, args.root)}:{entry.span.line}"
            print(f"{where}: {entry.span.key}: {entry.span.text} -> {entry.value}")
        for made, shown in figures:
            print(f"copied {_relative(made, args.root)} to {_relative(shown, args.root)}")
    except InputError as error:
        print(f"update_docs.py: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
