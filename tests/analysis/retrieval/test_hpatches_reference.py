"""evaluate-hpatches against the HPatches reference scoring code, run in GNU Octave.

The reference is another project's code (hpatches-benchmark's 2016 ``retrieval_eval.m``
with VLFeat's ``vl_pr``), kept outside this repository with its licences: in the first
``shared/references/hpatches`` folder found walking up from the repository root, or in
the folder named by SBIR_HPATCHES_REFERENCE. The fixtures are fixed files,
tests/data/hpatches_reference/ (written once by ``random_task`` below and the hand-made
``edge`` task), and the reference's output on them is recorded beside them in
``reference_ap.csv`` (``retrieval_eval`` in GNU Octave 7.3.0; element 0 of each vector is
the header line's).

Where the reference and Octave are present, the test runs it, compares each query's AP to
1e-9, and checks that the recording still equals what the reference gives; elsewhere (a
machine without the reference code), it compares with the recording. Either way every AP
is checked against the reference's numbers: the test never skips.
"""

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sbir_study.analysis.retrieval.hpatches import evaluate_hpatches
from tests.helpers import DATA, ROOT

pytestmark = pytest.mark.octave

TOP = 50  # the reference requires the query and 50 retrieved patches per line
ENVIRONMENT = "SBIR_HPATCHES_REFERENCE"
REFERENCE_FILES = (
    "retrieval_eval.m",
    "vl_pr.m",
    "vl_tpfp.m",
    "vl_argparse.m",
    "+utls/readfile.m",
    "+utls/textprogressbar.m",
)


def locate_reference() -> tuple[Path | None, list[str]]:
    """The reference folder ($SBIR_HPATCHES_REFERENCE, else shared/references/hpatches in
    the nearest folder above the repository root that has one) and the places looked in."""
    looked = []
    given = os.environ.get(ENVIRONMENT)
    if given:
        if (Path(given) / "retrieval_eval.m").is_file():
            return Path(given), looked
        looked.append(f"{given} (from {ENVIRONMENT})")
    for folder in [ROOT, *ROOT.parents]:
        candidate = folder / "shared" / "references" / "hpatches"
        if (candidate / "retrieval_eval.m").is_file():
            return candidate, looked
        looked.append(str(candidate))
    return None, looked


def find_reference() -> Path:
    """The reference folder, or a test failure saying where it looked."""
    found, looked = locate_reference()
    if found is None:
        pytest.fail(
            "HPatches reference code (retrieval_eval.m) not found; looked in "
            + ", ".join(looked)
            + f". Set {ENVIRONMENT} to the folder that holds it."
        )
    return found


def find_octave(*, required: bool = True) -> str | None:
    octave = shutil.which("octave-cli") or shutil.which("octave")
    if octave is None and required:
        pytest.fail(
            "GNU Octave (octave-cli) not found on PATH; `make install` installs the "
            "Debian package octave"
        )
    return octave


def run_reference(tasks: dict[str, Path], results: Path, tmp_path: Path) -> dict:
    """Per task, the reference's patch and image AP of each query (in benchmark order)."""
    reference, octave = find_reference(), find_octave()
    code = tmp_path / "reference"
    for name in REFERENCE_FILES:
        (code / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(reference / name, code / name)
    script = [f"addpath('{code}');"]
    for task, benchmark in tasks.items():
        labels = benchmark.with_suffix(".labels")
        result = results / f"{task}.results"
        script.append(
            f"out = retrieval_eval('{benchmark}', '{labels}', '{result}');"
            f"printf('AP {task} patch%s\\n', sprintf(' %.17g', out.patch_retr_ap));"
            f"printf('AP {task} image%s\\n', sprintf(' %.17g', out.image_retr_ap));"
        )
    completed = subprocess.run(
        [octave, "--no-gui", "--quiet", "--no-window-system", "--eval", "\n".join(script)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    found = {}
    for line in completed.stdout.splitlines():
        # The reference's progress bar writes backspaces before our lines.
        line = line[line.find("AP ") :] if "AP " in line else ""
        if line.startswith("AP "):
            _, task, kind, *values = line.split()
            found.setdefault(task, {})[kind] = np.array(values, dtype=float)
    return found


def write_task(
    folder: Path,
    name: str,
    pool: list[str],
    queries: list[str],
    labels: list[list[str]],
    results: list[list[str]],
    results_dir: Path,
) -> Path:
    header = ",".join(pool)
    (folder / f"{name}.benchmark").write_text("\n".join([header, *queries]) + "\n")
    (folder / f"{name}.labels").write_text(
        "\n".join([header, *(",".join(line) for line in labels)]) + "\n"
    )
    (results_dir / f"{name}.results").write_text(
        "\n".join([header, *(",".join(line) for line in results)]) + "\n"
    )
    return folder / f"{name}.benchmark"


SEQUENCES = ("i_ajuntament", "v_bird", "v_wall", "i_dome")
IMAGES = ("ref", "e1", "e2", "e3", "e4", "e5", "h1", "h2")


def random_task(rng: np.random.Generator, n_queries: int):
    """A task whose lines mix every case: true correspondences, other patches of the same
    patch-images, patches of the sequence's unlabelled images, other sequences, the query
    again after rank 1, labels lines with only some of a sequence's images, and queries
    with nothing correct retrieved."""
    pool = [f"{s}.{i}" for s in SEQUENCES for i in IMAGES]
    queries, labels, results = [], [], []
    for q in range(n_queries):
        sequence = SEQUENCES[q % len(SEQUENCES)]
        patch = int(rng.integers(0, 400))
        query = f"{sequence}.ref.{patch}"
        # Labels list the query and its patch in some (not always all) of the other images.
        listed = [i for i in IMAGES[1:] if rng.random() < (1.0 if q % 3 == 0 else 0.5)]
        correspondences = [f"{sequence}.{i}.{patch}" for i in listed]
        candidates = list(correspondences)
        candidates += [
            f"{sequence}.{i}.{int(rng.integers(0, 400))}" for i in IMAGES for _ in range(3)
        ]
        candidates += [
            f"{s}.{i}.{int(rng.integers(0, 400))}"
            for s in SEQUENCES
            for i in IMAGES
            if s != sequence
        ]
        if q % 4 == 1:
            candidates.append(query)  # the query itself again, after rank 1
        candidates = list(dict.fromkeys(candidates))
        if q % 7 == 6:  # nothing of the query's labelled patch-images retrieved
            keep = {f"{sequence}.{i}" for i in ["ref", *listed]}
            candidates = [c for c in candidates if c.rsplit(".", 1)[0] not in keep]
        order = rng.permutation(len(candidates))[:TOP]
        retrieved = [candidates[k] for k in order]
        while len(retrieved) < TOP:  # pad with patches of other sequences
            retrieved.append(f"{SEQUENCES[(q + 1) % 4]}.h2.{1000 + len(retrieved)}")
        queries.append(query)
        labels.append([query, *correspondences])
        results.append([query, *retrieved])
    return pool, queries, labels, results


FIXTURES = DATA / "hpatches_reference"


def reference_output(tasks: dict[str, Path], results: Path, tmp_path: Path) -> dict:
    """The reference's per-query AP: run live where it is found (checking the recording
    against it), else as recorded in reference_ap.csv."""
    recorded = pd.read_csv(FIXTURES / "reference_ap.csv").sort_values(["task", "kind", "element"])
    stored = {
        task: {kind: group["ap"].to_numpy(float) for kind, group in rows.groupby("kind")}
        for task, rows in recorded.groupby("task")
    }
    if locate_reference()[0] is None or find_octave(required=False) is None:
        return stored
    live = run_reference(tasks, results, tmp_path)
    for task in tasks:
        for kind in ("patch", "image"):
            stale = f"reference_ap.csv differs from the reference: {task} {kind}"
            np.testing.assert_array_equal(stored[task][kind], live[task][kind], err_msg=stale)
    return live


def test_per_query_ap_equals_the_reference(tmp_path):
    benchmarks = shutil.copytree(FIXTURES / "benchmarks", tmp_path / "benchmarks")
    results = shutil.copytree(FIXTURES / "results", tmp_path / "results")
    tasks = {path.stem: path for path in sorted(benchmarks.glob("*.benchmark"))}
    assert sorted(tasks) == ["edge", "task_0", "task_1", "task_2"]
    # The edge task holds hand-made lines for the two cases the reference decides differently
    # from a sequence-level reading: (1) the query again at rank 2 and later; (2) a labels
    # line listing only image e1 of the sequence, with patches of e2..e5 retrieved.
    reference = reference_output(tasks, results, tmp_path)
    per_query, summary = evaluate_hpatches(benchmarks, results, top=TOP)
    for name in tasks:
        ours = per_query[per_query["task"] == name]
        for kind in ("patch", "image"):
            # Element 1 of the reference's vector belongs to the header line: always 0.
            expected = reference[name][kind]
            assert expected[0] == 0.0 and expected.size == len(ours) + 1
            np.testing.assert_allclose(
                ours[f"ap_{kind}"], expected[1:], rtol=0, atol=1e-9, err_msg=f"{name} {kind}"
            )
            row = summary[summary["task"] == name].iloc[0]
            # Ours: the mean over the N queries; the reference's mean divides by N + 1.
            assert row[f"map_{kind}"] == pytest.approx(expected[1:].mean(), abs=1e-12)
            assert expected.mean() == pytest.approx(expected[1:].sum() / (len(ours) + 1))
    # The edge cases, by hand as the reference decides them:
    edge = per_query[per_query["task"] == "edge"].set_index("query")
    # (1) the query again at rank 2 is a correct patch: positives at ranks 2 (itself) and 13
    #     of the full line, i.e. 1 and 12 of the retrieved: AP = (1/1 + 2/12) / 2.
    assert edge.loc["v_bird.ref.7", "ap_patch"] == pytest.approx((1 + 2 / 12) / 2)
    # (2) only e1 is labelled: a patch of e2 or e4 is not a correct image, one of e1 (any
    #     patch) is, and so is one of the query's own image: retrieved ranks 3 and 50.
    assert edge.loc["v_bird.ref.8", "ap_image"] == pytest.approx((1 / 3 + 2 / 50) / 2)
    assert edge.loc["v_bird.ref.8", "ap_patch"] == 0.0
    # The query at retrieved rank 21, then a patch of e2 (labelled image): (1/21 + 2/22) / 2.
    assert edge.loc["i_dome.ref.3", "ap_image"] == pytest.approx((1 / 21 + 2 / 22) / 2)
    assert edge.loc["i_dome.ref.3", "ap_patch"] == pytest.approx(1 / 21)
    # The random tasks hold queries with nothing correct retrieved, and queries whose image
    # retrieval finds more than their patch retrieval.
    random = per_query[per_query["task"] != "edge"]
    assert (random["ap_patch"] == 0).any() and (random["ap_image"] == 0).any()
    assert (random["ap_image"] > random["ap_patch"]).any()


def test_a_missing_reference_fails_saying_where_it_looked(tmp_path, monkeypatch):
    import tests.analysis.retrieval.test_hpatches_reference as module

    checkout = tmp_path / "work" / "checkout"
    checkout.mkdir(parents=True)
    monkeypatch.setattr(module, "ROOT", checkout)
    monkeypatch.setenv(ENVIRONMENT, str(tmp_path / "nowhere"))
    with pytest.raises(pytest.fail.Exception) as failure:
        find_reference()
    message = str(failure.value)
    assert str(tmp_path / "nowhere") in message
    assert str(checkout / "shared" / "references" / "hpatches") in message
    assert str(tmp_path / "work" / "shared" / "references" / "hpatches") in message
    # Found beside the checkout, the way CI and the worktrees have it.
    beside = tmp_path / "work" / "shared" / "references" / "hpatches"
    beside.mkdir(parents=True)
    (beside / "retrieval_eval.m").write_text("% placeholder for the test\n")
    monkeypatch.delenv(ENVIRONMENT)
    assert find_reference() == beside
