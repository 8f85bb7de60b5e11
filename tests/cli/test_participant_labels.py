"""A participant label stays the text it was written as, from a flat table to the report.

``01``, ``1`` and ``001`` are three participants: nothing may read them as numbers (which
would merge them into one and print them as 1), whatever the table's separator or line
endings.
"""

import json

import pandas as pd
import pytest

from tests.helpers import PNG, run_main

LABELS = {"01": "01", "02": "1", "03": "001", "04": "0010"}


@pytest.fixture(scope="module")
def flat_tables(tmp_path_factory):
    """One simulated study as a CSV with CRLF line endings and as a TSV, labels renamed."""
    root = tmp_path_factory.mktemp("labels")
    result = run_main(
        "simulate",
        "--out",
        str(root / "sim.csv"),
        "--flat",
        "--participants",
        "4",
        "--sketches",
        "3",
        "--images",
        "8",
        "--seed",
        "5",
    )
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(root / "sim.csv", dtype=str, keep_default_na=False)
    table["participant"] = table["participant"].map(LABELS)
    assert set(table["participant"]) == set(LABELS.values())
    csv = root / "ratings.csv"
    csv.write_bytes(table.to_csv(index=False, lineterminator="\r\n").encode())
    tsv = root / "ratings.tsv"
    table.to_csv(tsv, sep="\t", index=False)
    return [csv, tsv]


def _texts(path, column):
    return set(pd.read_csv(path, dtype=str, keep_default_na=False)[column])


@pytest.mark.parametrize("which", [0, 1], ids=["csv_crlf", "tsv"])
def test_labels_stay_text_through_tables_figures_and_report(
    flat_tables, tmp_path, which, monkeypatch
):
    import sbir_study.analysis.figures.layout
    from sbir_study.analysis import AnalysisOptions, analyze_ratings, load_ratings

    tables = flat_tables
    labels = set(LABELS.values())
    ratings = load_ratings(tables[which])
    assert set(ratings["participant"].astype(str)) == labels

    drawn = {}
    save = sbir_study.analysis.figures.layout.save_figure

    def record(figure, stem, formats):
        drawn[stem.name] = [tick.get_text() for ax in figure.axes for tick in ax.get_xticklabels()]
        return save(figure, stem, formats)

    monkeypatch.setattr(sbir_study.analysis.figures.layout, "save_figure", record)
    out = tmp_path / "out"
    analyze_ratings(
        ratings, out, AnalysisOptions(bootstrap=50, permutations=50), figure_formats=PNG
    )

    # Tables, read back as text.
    for name, column in [
        ("consensus_tau.csv", "participant"),
        ("anchoring.csv", "participant"),
        ("participants.csv", "participant"),
    ]:
        assert _texts(out / name, column) <= labels and len(_texts(out / name, column)) >= 3
    assert _texts(out / "participants.csv", "participant") == labels
    pairs = pd.read_parquet(out / "pairwise_tau.parquet")
    assert set(pairs["participant_a"]) | set(pairs["participant_b"]) == labels
    assert json.loads((out / "summary.json").read_text())["n_participants"] == 4

    # Figures: the participant axes of Figs. 4 and 6 are labelled with the labels as written.
    for figure in ("fig4_anchoring", "fig6_vs_consensus"):
        assert set(drawn[figure]) == labels, figure

    # The report's participants table.
    page = (out / "report.html").read_text(encoding="utf-8")
    for label in labels:
        assert f"<tr><td>{label}</td>" in page


def test_labels_stay_text_through_the_command_line(flat_tables, tmp_path):
    tables = flat_tables
    out = tmp_path / "out"
    result = run_main(
        "analyze",
        str(tables[0]),
        "--out",
        str(out),
        "--no-figures",
        "--bootstrap",
        "0",
        "--permutations",
        "0",
    )
    assert result.returncode == 0, result.stderr
    assert _texts(out / "participants.csv", "participant") == set(LABELS.values())
    assert "Analysed 4 participants" in result.stdout
    # Four participants, with a warning that 01, 1 and 001 differ only by leading zeros.
    assert "differ only by leading zeros: '001' (" in result.stderr
    assert "'01' (" in result.stderr and "'1' (" in result.stderr and "'0010'" not in result.stderr


def test_a_table_whose_labels_were_read_as_numbers_is_refused(flat_tables, tmp_path):
    # pandas.read_csv with its default types has already made 01 and 1 the same number:
    # analysing it would merge two participants, so it is an error naming the column.
    from sbir_study.analysis import AnalysisOptions, analyze_ratings, validate_ratings
    from sbir_study.foundation.checks import InputError

    numbers = pd.read_csv(flat_tables[0])
    assert numbers["participant"].nunique() == 2  # 01, 1 and 001 are one participant now
    with pytest.raises(InputError, match="participant: the labels are numbers"):
        analyze_ratings(numbers, tmp_path / "out", AnalysisOptions())
    with pytest.raises(InputError, match="dtype=str"):
        validate_ratings(numbers)
    assert not (tmp_path / "out").exists()
