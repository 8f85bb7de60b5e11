"""The numbers README.md and docs/*.md quote from `make run`, against a fresh run of it.

The documentation marks each number it quotes from the demonstration
(``<!-- demo: KEY -->0.664<!-- /demo -->``, the scheme of scripts/update_docs.py). The
module runs `make run`'s commands, read from the Makefile, into a temporary folder
(about a minute on a quiet machine, once for the module) and requires every marked
span, and the README's Fig. 5, to be what that run wrote. When one differs,
``python scripts/update_docs.py`` after ``make run`` rewrites it.

The values the script reads are checked against pandas, hashlib and the file system
reading the same outputs independently (``test_definitions_read_the_outputs``).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sbir_study.foundation.checks import InputError
from tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import update_docs

_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?::=|\?=|=)\s*(.*)$", re.MULTILINE)
_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def make_run_commands(makefile: Path, demo: Path, bin_dir: Path) -> list[str]:
    """The sbir-study lines of the Makefile's ``run`` recipe, as ``/bin/sh`` lines.

    The Makefile's variables are expanded as make expands them, with ``DEMO`` (and so
    ``RETRIEVAL``) set to ``demo`` and ``BIN`` to ``bin_dir``; the recipe's ``rm -rf``
    and ``echo`` lines are left out (``demo`` is a fresh folder).
    """
    text = makefile.read_text(encoding="utf-8").replace("\\\n", " ")
    variables = {name: value.strip() for name, value in _ASSIGNMENT.findall(text)}
    variables |= {"DEMO": shlex.quote(str(demo)), "BIN": shlex.quote(str(bin_dir))}

    def expand(line: str) -> str:
        while match := _REFERENCE.search(line):
            if match[1] not in variables:
                pytest.fail(f"{makefile}: the run recipe uses $({match[1]}), which is not set")
            line = line[: match.start()] + variables[match[1]] + line[match.end() :]
        return line

    recipe = re.search(r"^run:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
    if recipe is None:
        pytest.fail(f"{makefile}: no run target")
    lines = [line.strip() for line in recipe[1].splitlines()]
    return [expand(line) for line in lines if line.startswith("$(BIN)/sbir-study ")]


def _spans() -> list:
    try:
        return [
            span
            for path in update_docs.documents(ROOT)
            for span in update_docs.find_spans(path.read_text(encoding="utf-8"), path)
        ]
    except InputError:
        return []  # test_every_span_is_well_formed names the problem


SPANS = _spans()


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """A fresh demonstration, as `make run` writes it into build/demo."""
    folder = tmp_path_factory.mktemp("make-run") / "demo"
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "sbir-study").exists():
        pytest.fail(f"{bin_dir}: no sbir-study console script beside the interpreter")
    env = {**os.environ, "SBIR_STUDY_PROGRESS": "0"}
    for command in make_run_commands(ROOT / "Makefile", folder, bin_dir):
        # make runs each recipe line with /bin/sh -c, which expands the runs' glob.
        done = subprocess.run(
            command,
            shell=True,
            executable="/bin/sh",
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.fail(f"{command}\nexit {done.returncode}\n{done.stderr[-3000:]}")
    return folder


@pytest.fixture(scope="module")
def values(demo) -> dict[str, str]:
    return update_docs.demo_values(demo)


def test_the_demonstration_is_make_runs_seven_commands(tmp_path):
    commands = make_run_commands(ROOT / "Makefile", tmp_path / "demo", Path("/venv/bin"))
    subcommands = [shlex.split(command)[1] for command in commands]
    assert subcommands == [
        "simulate",
        "analyze",
        "stimuli",
        "simulate",
        "analyze",
        "baseline",
        "evaluate",
    ]
    assert all(str(tmp_path / "demo") in command for command in commands)
    assert "--seed 2011" in commands[0]  # the Makefile's SEED


def test_every_span_is_well_formed():
    for path in update_docs.documents(ROOT):
        update_docs.find_spans(path.read_text(encoding="utf-8"), path)
    assert SPANS, "README.md and docs/*.md mark no number from the demonstration"


def test_every_definition_is_quoted():
    # A definition no document quotes is left over from a sentence that went away.
    assert set(update_docs.DEFINITIONS) == {span.key for span in SPANS}


@pytest.mark.parametrize(
    "span", SPANS, ids=[f"{span.path.relative_to(ROOT)}:{span.line}:{span.key}" for span in SPANS]
)
def test_quoted_number_is_what_make_run_writes(span, values):
    source = update_docs.DEFINITIONS[span.key].file
    assert span.text == values[span.key], (
        f"{span.path.relative_to(ROOT)}:{span.line}: span {span.key}: the text says "
        f"{span.text!r}, a fresh `make run` wrote {values[span.key]!r} ({source}); run "
        "`make run`, then `python scripts/update_docs.py`"
    )


def test_readme_fig5_is_what_make_run_draws(demo):
    for made, shown in update_docs.FIGURES:
        assert update_docs.same_pixels(demo / made, ROOT / shown), (
            f"{shown} is not the {made} of a fresh `make run`; run "
            "`python scripts/update_docs.py` after `make run`"
        )


def test_definitions_read_the_outputs(demo, values):
    # Independently of the script: pandas on the tables, hashlib for the set digest by
    # its documented rule (docs/stimuli.md), os.walk for the set's size.
    evaluation = pd.read_csv(demo / "retrieval/evaluation/summary.csv")
    tau_b = evaluation[evaluation["measure"] == "tau_b"].set_index("system")["mean"]
    distances = [path.stem for path in (demo / "retrieval/runs").glob("*.run")]
    assert values["evaluation.n_distances"] == str(len(distances))
    assert values["evaluation.best_distance_tau_b"] == f"{tau_b[distances].max():.3f}"
    assert values["evaluation.human_tau_b"] == f"{tau_b['human']:.3f}"
    for system in update_docs.QUOTED_DISTANCES:
        assert values[f"evaluation.tau_b.{system}"] == f"{tau_b[system]:.3f}"

    kendall_w = pd.read_csv(demo / "analysis/kendall_w.csv")
    assert values["agreement.w_raters_min"] == str(kendall_w["n_raters"].min())
    assert values["agreement.w_raters_max"] == str(kendall_w["n_raters"].max())
    assert values["agreement.w_cells_dropped"] == str(kendall_w["n_raters_excluded"].sum())
    assert values["agreement.w_cells"] == str(kendall_w["n_raters_all"].sum())

    stimuli = demo / "retrieval/stimuli"
    listing = "".join(
        f"{hashlib.sha256((stimuli / name).read_bytes()).hexdigest()}  {name}\n"
        for name in ("manifest.csv", "SHA256SUMS")
    )
    assert values["stimuli.set_digest"] == hashlib.sha256(listing.encode()).hexdigest()[:8]
    size = sum(
        os.path.getsize(os.path.join(base, name))
        for base, _, names in os.walk(stimuli)
        for name in names
        if name != ".sbir-study-output.json"
    )
    assert values["stimuli.set_size_mb"] == f"{size / 1e6:.0f}"


def test_check_lists_a_stale_span_and_the_update_rewrites_it(demo, values, tmp_path, capsys):
    root = tmp_path / "checkout"
    (root / "docs" / "img").mkdir(parents=True)
    key = "evaluation.human_tau_b"
    (root / "README.md").write_text(
        f"Participants: <!-- demo: {key} -->0.001<!-- /demo -->, twice "
        f"<!-- demo: {key} -->{values[key]}<!-- /demo -->.\r\n",
        encoding="utf-8",
        newline="",
    )
    arguments = ["--demo", str(demo), "--root", str(root)]

    assert update_docs.main(["--check", *arguments]) == 1
    listed = capsys.readouterr().out.splitlines()
    assert listed == [
        f"README.md:1: {key}: the text says '0.001', "
        f"{demo / 'retrieval/evaluation/summary.csv'} gives {values[key]!r}",
        f"docs/img/fig5_interuser.png: differs from {demo / update_docs.FIGURES[0][0]}",
    ]
    assert not (root / "docs/img/fig5_interuser.png").exists()  # --check changed nothing

    assert update_docs.main(arguments) == 0
    assert (root / "README.md").read_bytes().decode() == (
        f"Participants: <!-- demo: {key} -->{values[key]}<!-- /demo -->, twice "
        f"<!-- demo: {key} -->{values[key]}<!-- /demo -->.\r\n"
    )
    assert update_docs.main(["--check", *arguments]) == 0


def test_a_missing_demonstration_is_named(tmp_path, capsys):
    assert update_docs.main(["--check", "--demo", str(tmp_path / "none")]) == 2
    message = capsys.readouterr().err
    assert str(tmp_path / "none") in message
    assert "make run" in message


_NESTED = (
    "<!-- demo: evaluation.human_tau_b --><!-- demo: agreement.w_cells -->1<!-- /demo -->"
    "<!-- /demo -->"
)


@pytest.mark.parametrize(
    "text, line, problem",
    [
        ("a <!-- demo: evaluation.human_tau_b -->0.6\n<!-- /demo -->", 1, "open and close"),
        (f"text\n{_NESTED}", 2, "open and close"),
        ("a <!--demo: evaluation.human_tau_b -->0.6<!-- /demo -->", 1, "open and close"),
        ("a <!-- demo: evaluation.tau_b.l7 -->0.6<!-- /demo -->", 1, "unknown demo key"),
        ("text\n```\n<!-- demo: agreement.w_cells -->868<!-- /demo -->\n```\n", 3, "code block"),
        ("text\n   <!-- demo: agreement.w_cells -->868<!-- /demo --> cells", 2, "must not begin"),
    ],
)
def test_a_malformed_span_is_named_with_its_line(text, line, problem):
    path = Path("docs/page.md")
    with pytest.raises(InputError, match=re.escape(problem)) as raised:
        update_docs.find_spans(text, path)
    assert str(raised.value).startswith(f"{path}:{line}: ")


_PLAIN = st.text(st.characters(blacklist_characters="<`~", blacklist_categories=("Cs",)))
_INLINE = st.text(st.characters(blacklist_characters="<`~\n\r", blacklist_categories=("Cs",)))
_KEYS = st.sampled_from(sorted(update_docs.DEFINITIONS))


@given(
    st.lists(st.one_of(_PLAIN, st.tuples(_KEYS, _INLINE)), max_size=12),
    st.dictionaries(_KEYS, _INLINE),
)
def test_rewrite_replaces_the_spans_and_nothing_else(pieces, new):
    def document(text_of) -> str:
        return "".join(
            piece
            if isinstance(piece, str)
            else f"x <!-- demo: {piece[0]} -->{text_of(piece)}<!-- /demo -->"
            for piece in pieces
        )

    values = {key: new.get(key, f"value of {key}") for key in update_docs.DEFINITIONS}
    text = document(lambda piece: piece[1])
    path = Path("README.md")
    spans = update_docs.find_spans(text, path)
    assert [(span.key, span.text) for span in spans] == [p for p in pieces if isinstance(p, tuple)]
    assert update_docs.rewrite(text, values, path) == document(lambda piece: values[piece[0]])


def test_spans_render_as_invisible_inline_comments():
    # markdown-it-py, a CommonMark parser (what GitHub's renderer extends): every marker
    # must be an inline comment inside its paragraph or table cell, none a block of raw
    # HTML or code, where a reader would see it.
    import markdown_it  # the test extra's; a missing one fails the test

    parser = markdown_it.MarkdownIt("commonmark").enable("table")

    def tokens(stream):
        # An "inline" token holds its paragraph's source text; its children are what it
        # is read as.
        for token in stream:
            if token.type != "inline":
                yield token
            yield from tokens(token.children or [])

    for path in update_docs.documents(ROOT):
        text = path.read_text(encoding="utf-8")
        spans = update_docs.find_spans(text, path)
        seen = [
            t for t in tokens(parser.parse(text)) if "<!--" in t.content and "demo" in t.content
        ]
        assert all(t.type == "html_inline" for t in seen), [
            (path.name, t.type, t.content[:80]) for t in seen if t.type != "html_inline"
        ]
        assert len(seen) == 2 * len(spans), path


def test_update_copies_the_current_fig5(demo, tmp_path):
    root = tmp_path / "checkout"
    (root / "docs" / "img").mkdir(parents=True)
    (root / "README.md").write_text("No number.\n", encoding="utf-8")
    shutil.copyfile(ROOT / "docs/img/stimuli_anchors.jpg", root / "docs/img/fig5_interuser.png")
    assert update_docs.main(["--demo", str(demo), "--root", str(root)]) == 0
    made, shown = update_docs.FIGURES[0]
    assert (root / shown).read_bytes() == (demo / made).read_bytes()
