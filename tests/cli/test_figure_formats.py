"""``--figure-formats``: the files each figure of analyze, evaluate and power is written as.

PNG is always among them (the reports embed it); PDF is the default beside it; SVG can be
added. What a run writes is exactly the formats asked for, the report's captions name the
other files written, and the same run writes the same bytes again.
"""

import hashlib
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sbir_study.foundation.checks import InputError
from sbir_study.foundation.html import DEFAULT_FIGURE_FORMATS, FIGURE_FORMATS, figure_formats
from tests.helpers import run_main

_TOKENS = st.sampled_from([*FIGURE_FORMATS, "PNG", " pdf ", "Svg", "jpg", "eps", "", "png "])


@given(st.lists(_TOKENS, max_size=6), st.booleans())
@example(["pdf", "png", "pdf"], True)
@example(["pdf"], True)
def test_formats_are_the_named_ones_in_a_fixed_order_png_required(tokens, as_text):
    """The checked formats are the named ones, each once, in FIGURE_FORMATS' order; an
    unknown name, or no png, is an error naming what was given."""
    given_formats = ",".join(tokens) if as_text else tokens
    names = {token.strip().lower() for token in tokens if token.strip()}
    if names <= set(FIGURE_FORMATS) and "png" in names:
        assert figure_formats(given_formats) == tuple(f for f in FIGURE_FORMATS if f in names)
    else:
        with pytest.raises(InputError, match=r"^figure formats: got '"):
            figure_formats(given_formats)


def _files(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _stems(folder: Path) -> set[str]:
    return {p.stem for p in folder.iterdir()}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Four simulated participants of 3 sketches x 4 images."""
    root = tmp_path_factory.mktemp("formats")
    done = run_main(
        "simulate",
        "--out",
        root / "data",
        "--participants",
        "4",
        "--sketches",
        "3",
        "--images",
        "4",
        "--seed",
        "4",
    )
    assert done.returncode == 0, done.stderr
    return root / "data"


@pytest.mark.parametrize("formats", ["png", "svg,png"])
def test_analyze_writes_each_figure_in_the_formats_asked_for(study, tmp_path, formats):
    out = tmp_path / "analysis"
    done = run_main(
        "analyze",
        study,
        "--out",
        out,
        "--figure-formats",
        formats,
        "--bootstrap",
        "20",
        "--permutations",
        "20",
    )
    assert done.returncode == 0, done.stderr
    wanted = figure_formats(formats)
    figures = out / "figures"
    stems = _stems(figures)
    assert stems  # Figs. 4-8 and the reliability prophecy
    assert sorted(p.name for p in figures.iterdir()) == sorted(
        f"{stem}.{suffix}" for stem in stems for suffix in wanted
    )
    report = (out / "report.html").read_text(encoding="utf-8")
    for stem in stems:
        for suffix in ("pdf", "svg"):
            assert (f"<code>figures/{stem}.{suffix}</code>" in report) == (suffix in wanted)
    if "svg" in wanted:
        svg = (figures / "fig5_interuser.svg").read_text(encoding="utf-8")
        assert svg.startswith("<?xml") and "<dc:date>" not in svg


def _figure():
    from matplotlib.figure import Figure

    figure = Figure(figsize=(3.0, 2.0), layout="constrained")
    ax = figure.add_subplot()
    ax.plot([1, 2, 3], [0.2, 0.5, 0.4], "o-", label="τ_b")
    ax.set_title("Kendall's τ_b per sketch")
    ax.legend()
    return figure


def test_each_format_is_the_same_bytes_again_and_adding_one_changes_no_other(tmp_path):
    """Drawn through the save every figure goes through: the same figure gives the same
    bytes in every format (no date, fixed SVG element ids), and the default PNG and PDF are
    the same whether or not an SVG is written beside them."""
    from sbir_study.analysis.figures.style import save_figure as _save

    written = {}
    for run, formats in (
        ("default", DEFAULT_FIGURE_FORMATS),
        ("every", FIGURE_FORMATS),
        ("again", FIGURE_FORMATS),
    ):
        folder = tmp_path / run
        folder.mkdir()
        assert _save(_figure(), folder / "figure", formats) == folder / "figure.png"
        written[run] = _files(folder)
    assert sorted(written["default"]) == ["figure.pdf", "figure.png"]
    assert sorted(written["every"]) == ["figure.pdf", "figure.png", "figure.svg"]
    assert written["again"] == written["every"]
    assert {name: written["every"][name] for name in written["default"]} == written["default"]


def test_evaluate_and_power_take_the_formats_too(retrieval_study, tmp_path):
    root = retrieval_study
    done = run_main(
        "evaluate",
        "--ground-truth",
        root / "analysis" / "ground_truth.csv",
        root / "runs" / "l1.run",
        root / "runs" / "chi2.run",
        "--bootstrap",
        "100",
        "--out",
        tmp_path / "evaluation",
        "--figure-formats",
        "png,svg",
    )
    assert done.returncode == 0, done.stderr
    figures = tmp_path / "evaluation" / "figures"
    assert {p.suffix for p in figures.iterdir()} == {".png", ".svg"}
    assert len(list(figures.iterdir())) == 2 * len(_stems(figures))
    done = run_main(
        "power",
        "--out",
        tmp_path / "power",
        "--participants",
        "3,4",
        "--replications",
        "2",
        "--reference",
        "6",
        "--sketches",
        "3",
        "--images",
        "5",
        "--figure-formats",
        "png",
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "power").glob("power.*")) == [
        "power.csv",
        "power.png",
    ]


@pytest.mark.parametrize("command", ["analyze", "evaluate", "power"])
@pytest.mark.parametrize(
    "formats, expected",
    [
        ("pdf", "got 'pdf', expected png among them (the report embeds the PNG figures)"),
        ("png,jpeg", "got 'jpeg' in 'png,jpeg', expected a comma-separated list of png, pdf, svg"),
        ("", "got '', expected png among them (the report embeds the PNG figures)"),
    ],
)
def test_a_bad_list_is_one_line_and_writes_nothing(
    study, retrieval_study, tmp_path, command, formats, expected
):
    arguments = {
        "analyze": [study],
        "evaluate": [
            "--ground-truth",
            retrieval_study / "analysis" / "ground_truth.csv",
            retrieval_study / "runs" / "l1.run",
        ],
        "power": [],
    }[command]
    done = run_main(command, *arguments, "--out", tmp_path / "out", "--figure-formats", formats)
    assert done.returncode == 2
    assert done.stderr == f"sbir-study {command}: error: argument --figure-formats: {expected}\n"
    assert not (tmp_path / "out").exists()


def test_the_library_checks_the_formats_before_it_writes(study, tmp_path):
    from sbir_study.analysis import analyze_ratings, load_ratings

    with pytest.raises(InputError, match="expected png among them"):
        analyze_ratings(load_ratings(study), tmp_path / "out", figure_formats=("pdf",))
    assert not (tmp_path / "out").exists()
