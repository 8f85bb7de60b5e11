"""A lab's own study from end to end: a 5-point protocol with its own keys and German texts.

One participant in the lab (``run --simulate`` in a PsychoPy window under Xvfb), one on the
online page (headless Chromium), ``export-online --with-lab`` to one dataset; last year's
ratings of the same pairs from a PsychoPy Builder CSV and a Qualtrics wide export, imported
with ``sbir-study import psychopy`` and ``import wide`` and merged into it; then ``analyze``.
Every statistic is checked against pandas and SciPy on the ratings read back with pandas.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import tomllib
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from tests.helpers import run_main, toml_text
from tests.study.online.browser_participant import Participant
from tests.study.online.support import END_S
from tests.study.session_harness import start_session

ROOT = Path(__file__).resolve().parents[3]
TASK = "sbirlab"
KEYS = ["a", "s", "d", "f", "g"]  # rating 1..5; g (5) is the best match
LOW, HIGH = 1, 5
MAIN = """Bewerten Sie nun jedes Paar selbst: Wie gut passt das Bild zur Skizze?

Drücken Sie eine der Tasten A S D F G: G heißt passt am besten, A passt am schlechtesten. \
Sie können Ihre Bewertung ändern, bis das nächste Paar erscheint.

Drücken Sie die Leertaste, um zu beginnen."""
ANCHORING = """Zuerst sehen Sie Beispielpaare mit der Bewertung, die sie verdienen: \
von G (passt am besten) bis A (passt am schlechtesten).

Drücken Sie die Leertaste, um zu beginnen."""


def write_protocol(folder: Path) -> Path:
    """protocols/example_de.toml with 5 keys of the lab's own, the high end best, short timing."""
    settings = tomllib.loads((ROOT / "protocols" / "example_de.toml").read_text("utf-8"))
    settings["task"] = TASK
    # As short as the other window and browser tests show them.
    settings["timing"] = {"stimulus_s": 0.4, "blank_s": 0.3, "anchor_demo_s": 0.4}
    settings["response"] = {"keys": KEYS, "best": "high", "pause_key": "p", "quit_key": "escape"}
    settings["participants"] = {"details": ["age"]}
    settings["instructions"]["main"] = MAIN
    settings["instructions"]["anchoring"] = ANCHORING
    settings.setdefault("online", {})["stimulus_px"] = 200
    settings["display"] = {"fullscreen": False, "resolution": [800, 600]}
    path = folder / "protocol.toml"
    path.write_text(toml_text(settings), encoding="utf-8")
    return path


def cli(*args: str) -> subprocess.CompletedProcess:
    """``sbir-study ARGS`` in this process (:func:`tests.helpers.run_main`): what the commands
    write is tested here, not the process they run in."""
    return run_main(*args)


def ok(*args: str) -> subprocess.CompletedProcess:
    done = cli(*args)
    assert done.returncode == 0, f"{args[0]}: {done.stderr}"
    return done


def last_years_files(folder: Path, pairs: list[tuple[str, str]]) -> tuple[Path, Path, Path]:
    """A PsychoPy Builder CSV of one participant and a Qualtrics wide export of two, of the
    same pairs, as docs/examples/ shows the formats; the ratings are spread over every key."""
    builder = folder / "P-7_sbir_rating_2025-03-05_10h12.33.120.csv"
    header = [
        "sketch",
        "image",
        "trials.thisN",
        "key_resp.keys",
        "key_resp.rt",
        "participant",
        "session",
        "date",
        "expName",
        "psychopyVersion",
        "frameRate",
        "",
    ]
    info = ["P-7", "001", "2025-03-05_10h12.33.120", "sbir_rating", "2024.1.4", "60.0", ""]
    with builder.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerow(["", "", "", "", "", *info])  # Builder's row before the loop
        for n, (sketch, image) in enumerate(pairs):
            if n == 3:  # no key pressed
                keys, rt = "None", "None"
            elif n == 4:  # two presses, the last one the rating, as Builder stores them
                keys, rt = "['a', 's']", "[0.512, 0.907]"
            else:
                keys, rt = KEYS[(n * 2) % 5], f"{0.6 + n / 100:.3f}"
            writer.writerow([sketch, image, n, keys, rt, *info])
    columns = [f"Q{n + 1}_1" for n in range(len(pairs))]
    mapping = folder / "mapping.csv"
    pd.DataFrame(
        {"column": columns, "sketch_id": [s for s, _ in pairs], "image_id": [i for _, i in pairs]}
    ).to_csv(mapping, index=False)
    export = folder / "qualtrics.csv"
    rows = [
        ["ResponseId", *columns],
        ["Response ID", *(f"{s} - Wie gut passt das Bild?\nG = am besten - {i}" for s, i in pairs)],
        [
            json.dumps({"ImportId": "_recordId"}),
            *(json.dumps({"ImportId": f"QID{n + 1}_1"}) for n in range(len(pairs))),
        ],
    ]
    labels = {5: "5 - passt am besten", 1: "1 - passt am schlechtesten"}
    for person, step in (("R_3kVq9xTq2bLm1pA", 1), ("R_1aB2cD3eF4gH5iJ", 3)):
        answers = [(n * step + person.count("a")) % 5 + 1 for n in range(len(pairs))]
        texts = [labels.get(a, str(a)) for a in answers]
        if person.startswith("R_1"):
            texts[2] = ""  # not answered
        rows.append([person, *texts])
    with export.open("w", newline="", encoding="utf-8-sig") as handle:
        csv.writer(handle).writerows(rows)
    return builder, export, mapping


def read_back(dataset: Path) -> pd.DataFrame:
    """Every _beh.tsv of the dataset as pandas reads it: one row per trial, with participant."""
    tables = [
        pd.read_csv(
            path,
            sep="\t",
            na_values=["n/a"],
            keep_default_na=False,
            dtype={"sketch_id": str, "image_id": str},
        ).assign(participant=path.parent.parent.name.removeprefix("sub-"))
        for path in sorted(dataset.glob("sub-*/beh/*_beh.tsv"))
    ]
    return pd.concat(tables, ignore_index=True)


def half_up(value: float) -> int:
    """A mean rounded half up as decimal arithmetic does: 2.5 -> 3, the worse point."""
    return int(Decimal(repr(float(value))).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def test_a_5_point_german_study_through_lab_online_and_imports(
    display, browser, start_server, tmp_path
):
    protocol = write_protocol(tmp_path)
    stimuli = tmp_path / "set"
    ok(
        "stimuli",
        "generate",
        "--out",
        str(stimuli),
        "--sketches",
        "2",
        "--images",
        "6",
        "--anchor-sketches",
        "1",
        "--anchor-images",
        "5",
        "--scale",
        "1-5:high-is-best",
        "--width",
        "96",
        "--height",
        "72",
        "--seed",
        "11",
    )

    # The lab and the online participant at the same time, as the export test runs them.
    lab = tmp_path / "lab"
    session = start_session(
        display, protocol, stimuli, lab, "--simulate", "--seed", "5", participant="lab01"
    )
    online = tmp_path / "online"
    server = start_server(protocol, stimuli, online)
    participant = Participant(browser(), server.url)
    participant.open("?participant=web-01")
    participant.intake({"age": 31})
    participant.rate_every_trial(lambda trial: KEYS[trial % 5], after_s=0.15)
    try:
        participant.wait(lambda: participant.phase() == "complete", timeout=END_S, what="the end")
    except AssertionError as failure:
        raise AssertionError(f"{failure}\nserve's log:\n{server.log.read_text()[-4000:]}") from None
    status, _, err = session.finish(timeout=180)
    assert status == 0, err

    data = tmp_path / "data"
    ok(
        "export-online",
        "--db",
        f"sqlite:///{online / 'online.sqlite3'}",
        "--out",
        str(data),
        "--with-lab",
        str(lab),
        "--keep-platform-ids",  # the labels the participants were given (web01)
    )

    # Last year's ratings of the main pairs, from two other tools.
    manifest = pd.read_csv(stimuli / "manifest.csv", dtype=str)
    main_pairs = sorted(
        {(r.sketch_id, r.image_id) for r in read_back(data).itertuples() if r.phase == "main"}
    )
    assert len(main_pairs) == 12 and set(main_pairs) <= set(
        zip(manifest["sketch_id"], manifest["image_id"], strict=True)
    )
    builder, export, mapping = last_years_files(tmp_path, main_pairs)
    imported = []
    for name, args in (
        (
            "psychopy",
            [
                "psychopy",
                str(builder),
                "--protocol",
                str(protocol),
                "--columns",
                "sketch_id=sketch,image_id=image",
            ],
        ),
        (
            "wide",
            [
                "wide",
                str(export),
                "--mapping",
                str(mapping),
                "--scale",
                "1-5:high-is-best",
                "--participant-column",
                "ResponseId",
            ],
        ),
    ):
        out = tmp_path / f"imported-{name}"
        ok("import", *args, "--out", str(out))
        imported.append(out)
    # Merged: one dataset holding every participant's folder.
    for out in imported:
        for folder in out.glob("sub-*"):
            shutil.copytree(folder, data / folder.name)
        rows = pd.read_csv(out / "participants.tsv", sep="\t", dtype=str, keep_default_na=False)
        people = pd.read_csv(data / "participants.tsv", sep="\t", dtype=str, keep_default_na=False)
        pd.concat([people, rows], ignore_index=True).fillna("n/a").to_csv(
            data / "participants.tsv", sep="\t", index=False
        )

    analysis = tmp_path / "analysis"
    ok("analyze", str(data), "--out", str(analysis), "--no-figures")
    summary = json.loads((analysis / "summary.json").read_text())

    trials = read_back(data)
    people = sorted(trials["participant"].unique())
    assert people == sorted(["lab01", "web01", "P7", "R3kVq9xTq2bLm1pA", "R1aB2cD3eF4gH5iJ"])
    assert summary["n_participants"] == 5
    assert trials["rating"].dropna().between(LOW, HIGH).all()
    # Online, every rating is the key pressed, by its place in the protocol's list.
    web = trials[(trials["participant"] == "web01") & (trials["phase"] != "anchor_demo")]
    assert web["rating"].tolist() == [k % 5 + 1 for k in web["trial"]]
    lab_rated = trials.loc[(trials["participant"] == "lab01") & (trials["phase"] == "main")]
    assert lab_rated["rating"].notna().sum() >= 10
    sidecars = [json.loads(p.read_text()) for p in data.glob("sub-*/beh/*_beh.json")]
    assert all(s["RatingScale"] == {"Low": 1, "High": 5, "Best": "high"} for s in sidecars)
    # The imported ratings are the source's: Builder's keys by their place in the protocol's
    # list, the export's leading numbers.
    psy = trials[trials["participant"] == "P7"].set_index(["sketch_id", "image_id"])["rating"]
    source = pd.read_csv(builder).dropna(subset=["sketch"])
    last_key = source["key_resp.keys"].str.extract(r"(\w)'?\]?$")[0]
    expected = last_key.map({k: i + 1 for i, k in enumerate(KEYS)})
    got = psy.loc[list(zip(source["sketch"], source["image"], strict=True))].to_numpy(float)
    assert np.allclose(got, expected.to_numpy(float), equal_nan=True)

    # Independent computations on the main phase, ratings turned to 1 = best (6 - r).
    main = trials[(trials["phase"] == "main")].dropna(subset=["rating"]).copy()
    main["paper"] = (LOW + HIGH) - main["rating"]

    # rating_distribution: one row per scale point, shares against the uniform 1/5.
    distribution = pd.read_csv(analysis / "rating_distribution.csv")
    shown = distribution[distribution["phase"] == "main"]
    assert shown["rating"].tolist() == [1, 2, 3, 4, 5]
    assert np.allclose(shown["uniform_share"], 1 / 5)
    counts = main["paper"].value_counts().reindex(range(1, 6), fill_value=0)
    assert shown["count"].tolist() == counts.tolist()
    assert np.allclose(shown["share"], counts / counts.sum())

    # Ground truth: mean ratings and ranks (ties share their average rank).
    truth = pd.read_csv(analysis / "ground_truth.csv", dtype={"sketch_id": str, "image_id": str})
    means = main.groupby(["sketch_id", "image_id"])["paper"].mean().rename("expected_mean")
    merged = truth.merge(means.reset_index(), on=["sketch_id", "image_id"], validate="1:1")
    assert len(merged) == len(truth) == 12
    assert np.allclose(merged["mean_rating"], merged["expected_mean"])
    for _, group in merged.groupby("sketch_id"):
        assert np.allclose(group["rank"], scipy.stats.rankdata(group["expected_mean"]))

    # Graded qrels: 4 for the best match down to 0; binary: relevant below the middle (3).
    def qrels(name: str) -> dict:
        return qrels_of(analysis / name)

    expected_grade = {
        (r.sketch_id, r.image_id): HIGH - half_up(r.expected_mean) for r in merged.itertuples()
    }
    assert qrels("ground_truth.qrels") == expected_grade
    assert set(expected_grade.values()) <= set(range(0, 5))
    assert qrels("ground_truth_binary.qrels") == {
        pair: int(half_up(5 - grade) < (LOW + HIGH) / 2) for pair, grade in expected_grade.items()
    }

    # Inter-user tau_b per sketch and pair of participants, as scipy.stats.kendalltau.
    pairwise = pd.read_parquet(analysis / "pairwise_tau.parquet")
    wide = main.pivot_table(index=["sketch_id", "image_id"], columns="participant", values="rating")
    checked = 0
    for row in pairwise.itertuples():
        both = wide.loc[row.sketch_id, [row.participant_a, row.participant_b]].dropna()
        tau = scipy.stats.kendalltau(both.iloc[:, 0], both.iloc[:, 1]).statistic
        assert row.n_items == len(both)
        assert np.isclose(row.tau_b, tau, equal_nan=True), row
        checked += 1
    assert checked == 2 * 10  # every pair of the 5 participants on both sketches

    # An engine scored against this ground truth: evaluate reads the scale from the ratings
    # and records it; nDCG on grades 4..0 and AP on the cut at the middle, as trec_eval
    # (pytrec_eval) computes them from the qrels built above with pandas.
    import pytrec_eval

    run = tmp_path / "l1.run"
    ok("baseline", "--stimuli", str(stimuli), "--distance", "l1", "--out", str(run))
    scored = tmp_path / "evaluation"
    ok(
        "evaluate",
        "--ground-truth",
        str(analysis / "ground_truth.csv"),
        str(run),
        "--ratings",
        str(data),
        "--out",
        str(scored),
        "--no-figures",
        "--bootstrap",
        "100",
        "--permutations",
        "100",
    )
    record = json.loads((scored / "evaluation.json").read_text())
    assert record["scale"] == "1-5:high-is-best" and record["options"]["relevant_below"] == 2.5
    assert qrels_of(scored / "ground_truth_binary.qrels") == qrels("ground_truth_binary.qrels")

    def nested(table):
        return {s: {i: v for (t, i), v in table.items() if t == s} for s in {s for s, _ in table}}

    scores = {}
    for line in run.read_text().splitlines():
        sketch, _, image, _, score, _ = line.split()
        scores.setdefault(sketch, {})[image] = float(score)
    trec = pytrec_eval.RelevanceEvaluator(nested(expected_grade), {"ndcg"}).evaluate(scores)
    binary = {pair: int(half_up(5 - g) < 3) for pair, g in expected_grade.items()}
    trec_ap = pytrec_eval.RelevanceEvaluator(nested(binary), {"map"}).evaluate(scores)
    per_sketch = pd.read_csv(scored / "per_sketch.csv", dtype={"sketch_id": str})
    ours = per_sketch[per_sketch["system"] == "l1"].pivot(
        index="sketch_id", columns="measure", values="value"
    )
    assert sorted(ours.index) == sorted(trec)
    for sketch in ours.index:
        assert ours.loc[sketch, "ndcg"] == pytest.approx(trec[sketch]["ndcg"], abs=1e-12)
        if not np.isnan(ours.loc[sketch, "ap"]):  # undefined without a relevant image
            assert ours.loc[sketch, "ap"] == pytest.approx(trec_ap[sketch]["map"], abs=1e-12)


def qrels_of(path: Path) -> dict:
    """A qrels file as {(sketch, image): grade}."""
    lines = path.read_text().split("\n")
    return {(s, i): int(g) for s, _, i, g in (line.split() for line in lines if line)}
