"""What serving needs of a protocol and set (study/online/plan.py), kept beside the data by
serve's set check (study/online/setcheck.py) and read back at a restart without pandas."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.foundation.checks import InputError
from sbir_study.study.online import setcheck
from sbir_study.study.online.assignment import list_manifest, split_lists
from sbir_study.study.online.plan import ServingPlan
from sbir_study.study.online.server import ServeSettings, build_app
from sbir_study.study.online.setcheck import CHECK_FILE, KeptSet, checked_set
from sbir_study.study.protocol import Anchoring, Online, Protocol, load_protocol
from sbir_study.study.trials import AnchorScaleWarning, build_trials
from tests.study.online.support import ADMIN_TOKEN, write_protocol
from tests.study.online.test_online_design import manifests

#: The designs a kept start is tried on: the paper's, and a lab's own (letter keys, the
#: high end best, the pairs dealt over two lists).
DESIGNS = {
    "paper": {},
    "letters-high-best-two-lists": {
        "response": {"keys": ["a", "s", "d", "f", "g", "h", "j"], "best": "high"},
        "online": {"subset": "pairs", "lists": 2},
    },
}


class _Set:
    """A stimulus set as ServingPlan.of reads it: a folder with SHA256SUMS, a manifest."""

    def __init__(self, folder: Path, manifest: pd.DataFrame, listed: set[str]) -> None:
        self.folder, self.manifest = folder, manifest
        # Names of every file, hex digests made from them (only some listed, as a set whose
        # SHA256SUMS lists files the manifest does not name, or misses one, is read).
        lines = [f"{format(abs(hash(name)), '064x')[:64]}  {name}" for name in sorted(listed)]
        (folder / "SHA256SUMS").write_text("\n".join(lines) + "\n", encoding="utf-8")


@settings(max_examples=60, deadline=None)
@given(
    manifests(),
    st.sampled_from(["all", "sketches", "pairs"]),
    st.integers(1, 4),
    st.integers(0, 9),
    st.booleans(),
    st.booleans(),
    st.sampled_from([0.0, 0.5, 0.99]),
    st.floats(0.05, 20.0, allow_nan=False),
    st.integers(0, 2**63 - 1),
    # Unicode, spaces, quotes, backslashes in every id and path (no line breaks: a set's
    # paths are checked to have none, and SHA256SUMS is one file per line).
    st.text(st.characters(exclude_categories=("Cc", "Cs", "Zl", "Zp")), max_size=6),
)
def test_a_plan_read_back_is_the_plan_made_again_for_any_design(
    manifest, subset, lists, list_seed, enabled, repeat, repeat_from, aspect, seed, prefix
):
    """The plan a restart reads back from its JSON equals the plan made with pandas: each
    list's order, by ``build_trials`` on that list's manifest (the lab's rule), for any seed;
    each list's size as the status page counts it; every listed file's digest."""
    lists = 1 if subset == "all" else lists
    online = Online(subset=subset, lists=lists, list_seed=list_seed)
    anchoring = Anchoring(enabled=enabled, repeat=repeat, repeat_from=repeat_from)
    protocol = replace(Protocol(), online=online, anchoring=anchoring)
    manifest = manifest.assign(
        **{
            column: prefix + manifest[column]
            for column in ("sketch_id", "image_id", "sketch_path", "image_path")
        }
    )
    names = set(manifest["sketch_path"]) | set(manifest["image_path"])
    with tempfile.TemporaryDirectory() as folder:
        stimulus_set = _Set(Path(folder), manifest, set(sorted(names)[1:]) | {"other.png"})
        try:
            plan = ServingPlan.of(protocol, stimulus_set, aspect)
        except InputError as error:  # a split the set cannot give: refused, as split_lists
            with pytest.raises(InputError, match=r"online\.lists"):
                split_lists(protocol, manifest)
            assert "online.lists" in str(error)
            return
    again = ServingPlan.from_record(json.loads(json.dumps(plan.record())))
    assert again == plan
    assert set(again.stimulus_files) == set(sorted(names)[1:])  # listed and named only
    parts = split_lists(protocol, manifest)
    assert [len(order.main) for order in again.orders] == [len(part) for part in parts]
    columns = [
        "trial",
        "phase",
        "sketch_id",
        "image_id",
        "anchor_rating",
        "sketch_path",
        "image_path",
    ]
    for index, order in enumerate(again.orders):
        built = build_trials(protocol, list_manifest(manifest, parts, index), seed)[columns]
        expected = [
            (phase, sketch, image, None if pd.isna(rating) else int(rating), sp, ip)
            for _, phase, sketch, image, rating, sp, ip in built.itertuples(index=False, name=None)
        ]
        assert list(order.keys(seed)) == expected


@pytest.mark.parametrize(
    "spoil",
    [
        lambda r: r.update(orders=[]),
        lambda r: r.update(max_aspect="1.2"),
        lambda r: r.update(max_aspect=float("nan")),
        lambda r: r.update(stimulus_files={"a.png": 5}),
        lambda r: r["orders"][0].update(repeat=1),
        lambda r: r["orders"][0]["main"][0].pop(),
        lambda r: r["orders"][0]["main"][0].__setitem__(2, "3"),
        lambda r: r["orders"][0]["main"][0].__setitem__(0, 7),
        lambda r: r["orders"][0].update(anchors={}),
        lambda r: r.pop("orders"),
    ],
    ids=[
        "no lists",
        "aspect text",
        "aspect nan",
        "digest number",
        "repeat 1",
        "short row",
        "rating text",
        "id number",
        "anchors not a list",
        "no orders",
    ],
)
def test_a_kept_plan_not_as_written_is_refused(spoil, online_set):
    """ServingPlan.from_record takes only what record() writes: anything else is an error
    (and the set check makes the plan again), never a plan with other values."""
    protocol = Protocol()
    plan = ServingPlan.of(protocol, _checked(online_set, protocol), 1.0)
    record = json.loads(json.dumps(plan.record()))
    spoil(record)
    with pytest.raises((ValueError, KeyError, TypeError)):
        ServingPlan.from_record(record)


def _checked(folder, protocol):
    from sbir_study.study.trials import stimulus_set_for

    return stimulus_set_for(folder, protocol)


def _protocol(root: Path, name: str = "protocol.toml", **tables):
    path = write_protocol(root, name, **tables)
    return path, load_protocol(path, online=True)


def test_a_restart_reads_the_plan_back_and_makes_it_again_when_what_it_rests_on_changed(
    tmp_path, online_set, monkeypatch
):
    copy = tmp_path / "set"
    shutil.copytree(online_set, copy)
    data = tmp_path / "data"
    data.mkdir()
    _, protocol = _protocol(tmp_path, online={"subset": "pairs", "lists": 2})
    first = checked_set(copy, protocol, data)
    assert not first.set_reused and not first.plan_reused
    assert first.plan == ServingPlan.of(protocol, first.stimulus_set)
    again = checked_set(copy, protocol, data)
    assert again.set_reused and again.plan_reused and again.plan == first.plan
    assert isinstance(again.stimulus_set, KeptSet)
    assert again.stimulus_set.digest == first.stimulus_set.digest
    assert again.stimulus_set.manifest.equals(first.stimulus_set.manifest)  # read when asked

    # Another protocol on the same set: the set's check kept, the plan made for it.
    _, other = _protocol(
        tmp_path, "other.toml", online={"subset": "pairs", "lists": 2, "list_seed": 5}
    )
    changed = checked_set(copy, other, data)
    assert changed.set_reused and not changed.plan_reused
    assert changed.plan == ServingPlan.of(other, changed.stimulus_set)
    assert changed.plan != first.plan  # the lists dealt with another seed
    assert checked_set(copy, other, data).plan_reused

    # The set's generator.json (what the anchors were made for) changed: made again.
    generator = copy / "generator.json"
    generator.write_text(generator.read_text(encoding="utf-8") + " ", encoding="utf-8")
    assert not checked_set(copy, other, data).plan_reused
    assert checked_set(copy, other, data).plan_reused

    # The code that makes a plan changed (an editable install, an upgrade keeping the
    # version): made again.
    monkeypatch.setattr(setcheck, "_code_sha256", lambda: "0" * 64)
    assert not checked_set(copy, other, data).plan_reused
    assert checked_set(copy, other, data).plan_reused
    monkeypatch.undo()
    assert not checked_set(copy, other, data).plan_reused


def _swap_images(record):
    main = record["plan"]["orders"][0]["main"]
    main[0][4], main[1][4] = main[1][4], main[0][4]


@pytest.mark.parametrize(
    "spoil",
    [
        lambda r: r["plan"]["orders"][0]["main"][0].__setitem__(2, "1"),  # a wrong type
        _swap_images,  # right types: two pairs' images swapped
        lambda r: r["plan"]["orders"][0].update(repeat=False),  # no anchor repeats
        lambda r: r["plan"]["orders"].pop(),  # a list fewer
        lambda r: r["plan"]["stimulus_files"].popitem(),  # an image not served
        lambda r: r["plan"].update(max_aspect=r["plan"]["max_aspect"] * 2),
        lambda r: r["plan"].pop("sha256"),
    ],
    ids=[
        "rating text",
        "images swapped",
        "no repeats",
        "a list fewer",
        "a file fewer",
        "aspect doubled",
        "no seal",
    ],
)
def test_a_kept_plan_changed_on_disk_is_made_again(tmp_path, online_set, spoil):
    """A kept plan is used only as it was written: one changed on disk, even to values of
    the right types that would misattribute ratings (two pairs' images swapped), is made
    again, equal to the first, and kept again."""
    first, remade, again = _spoiled_starts(tmp_path, online_set, spoil, reseal=False)
    assert remade.set_reused and not remade.plan_reused and remade.plan == first.plan
    assert again.plan_reused


def _spoiled_starts(tmp_path, online_set, spoil, *, reseal: bool):
    """A first start (two lists of pairs), its kept plan spoiled (``spoil`` on the record,
    sealed anew if ``reseal``), the start after it and one more."""
    data = tmp_path / "data"
    data.mkdir()
    _, protocol = _protocol(tmp_path, online={"subset": "pairs", "lists": 2})
    first = checked_set(online_set, protocol, data)
    record = json.loads((data / CHECK_FILE).read_text(encoding="utf-8"))
    spoil(record)
    if reseal:
        record["plan"].pop("sha256")
        record["plan"]["sha256"] = setcheck._sealed(record["plan"])
    (data / CHECK_FILE).write_text(json.dumps(record), encoding="utf-8")
    return first, checked_set(online_set, protocol, data), checked_set(online_set, protocol, data)


@pytest.mark.parametrize("aspect", [float("nan"), float("inf"), -1.0, 0, "1.3"])
def test_a_kept_check_with_an_impossible_aspect_is_made_again(tmp_path, online_set, aspect):
    data = tmp_path / "data"
    data.mkdir()
    _, protocol = _protocol(tmp_path)
    first = checked_set(online_set, protocol, data)
    record = json.loads((data / CHECK_FILE).read_text(encoding="utf-8"))
    record["max_aspect"] = aspect
    (data / CHECK_FILE).write_text(json.dumps(record), encoding="utf-8")
    again = checked_set(online_set, protocol, data)
    assert not again.set_reused and not again.plan_reused and again.plan == first.plan


def test_the_plans_code_digest_covers_every_function_a_plan_comes_from():
    """The kept plan's key hashes the files of the code that makes it: every function
    ServingPlan.of calls to deal the lists and make each list's rows is in one of them."""
    import inspect

    from sbir_study.foundation.trial_order import session_order
    from sbir_study.study.online import plan as plan_module
    from sbir_study.study.trials import practice_pairs

    made_by = [
        ServingPlan.of,
        plan_module.ListOrder.of,
        plan_module.ListOrder.keys,
        split_lists,
        list_manifest,
        build_trials,
        practice_pairs,
        session_order,
        checked_set,
    ]
    files = {Path(inspect.getsourcefile(function)).resolve() for function in made_by}
    assert files <= {file.resolve() for file in setcheck.code_files()}


def test_the_study_takes_a_plan_or_an_aspect_not_both(tmp_path, online_set):
    from sbir_study.study.online.service import OnlineStudy
    from sbir_study.study.online.storage import open_database

    protocol = Protocol()
    plan = ServingPlan.of(protocol, _checked(online_set, protocol), 1.0)
    with pytest.raises(TypeError, match="plan or max_aspect"):
        OnlineStudy.open(
            protocol, None, open_database(f"sqlite:///{tmp_path / 'db'}"), max_aspect=1.0, plan=plan
        )


def test_a_kept_plan_gives_its_warnings_again_at_every_start(tmp_path, online_set):
    """The set's anchors were made for 1 the best match; a protocol whose high end is best
    is told so at every start, the ones that read the plan back too."""
    data = tmp_path / "data"
    data.mkdir()
    _, protocol = _protocol(tmp_path, **DESIGNS["letters-high-best-two-lists"])
    for reused in (False, True):
        with pytest.warns(AnchorScaleWarning, match="high-is-best") as given_:
            found = checked_set(online_set, protocol, data)
        assert found.plan_reused is reused
        assert len([w for w in given_ if w.category is AnchorScaleWarning]) == 1
    _, paper = _protocol(tmp_path, "paper.toml")
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            checked_set(online_set, paper, data)


#: A kept start of serve and a participant's first requests in a fresh interpreter that
#: refuses to import pandas or pyarrow; then the experimenter's status page, which may.
_KEPT_START = r"""
import json, secrets, sys
from pathlib import Path

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pandas", "pyarrow"):
            raise ImportError(f"{name} imported on the serving path")

refuse = Refuse()
sys.meta_path.insert(0, refuse)
from fastapi.testclient import TestClient
from sbir_study.study.online.server import ServeSettings, build_app

settings = ServeSettings(**json.loads(sys.argv[1]))
app, study = build_app(settings)
study.warm()
client = TestClient(app)
assert client.get("/").status_code == 200
assert client.get("/api/config").status_code == 200
token = secrets.token_urlsafe(32)
answer = client.post("/api/sessions", json={"participant": "kept start", "token": token})
assert answer.status_code == 201, answer.text
state = answer.json()
trial = state["trials"][0]
report = {"sketch_id": trial["sketch_id"], "image_id": trial["image_id"], "onset": 6.0,
          "blank_onset": 6.6, "next_onset": 7.0, "session_start": 5.0,
          "frames": [6.0, 6.6, 7.0], "events": [], "screen_events": [], "paused_before": 0.0,
          "rating": None}
auth = {"Authorization": f"Bearer {token}"}
stored = client.put(f"/api/sessions/{state['session_id']}/trials/1", json=report, headers=auth)
assert stored.status_code == 201, stored.text
assert client.get(trial["sketch_url"]).status_code == 200
assert client.get(f"/api/sessions/{state['session_id']}", headers=auth).status_code == 200
served = sorted(m for m in ("pandas", "pyarrow") if m in sys.modules)
sys.meta_path.remove(refuse)
admin = {"Authorization": f"Bearer {settings.admin_token}"}
status = client.get("/api/admin/status", headers=admin)
assert status.status_code == 200, status.text
page = client.get("/admin", headers=admin)
assert page.status_code == 200 and "kept start" in page.text, page.text
print(json.dumps({"served_with": served, "order": [t["image_id"] for t in state["trials"]],
                  "admin_loaded_pandas": "pandas" in sys.modules}))
"""


@pytest.mark.parametrize("design", list(DESIGNS.values()), ids=list(DESIGNS))
def test_a_kept_start_serves_participants_without_importing_pandas(tmp_path, online_set, design):
    """pandas with pyarrow was a third of a whole start of serve. A start that reads its
    check and plan back answers the page, a session's start, a trial, an image and a
    resume without importing either; the experimenter's pages import pandas when asked."""
    data = tmp_path / "data"
    data.mkdir()
    protocol, _ = _protocol(tmp_path, **design)
    settings = ServeSettings(
        protocol=str(protocol),
        stimuli=str(online_set),
        db=f"sqlite:///{data / 'online.sqlite3'}",
        admin_token=ADMIN_TOKEN,
        data=str(data),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnchorScaleWarning)
        _, study = build_app(settings)  # the first start: checks, plans, keeps
    environment = {**os.environ, "PYTHONWARNINGS": "ignore"}
    run = subprocess.run(
        [sys.executable, "-c", _KEPT_START, json.dumps(settings.__dict__)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        cwd=Path(__file__).parents[3],
    )
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["served_with"] == [] and found["admin_loaded_pandas"]
    # The participant's order is the one build_trials (pandas, the lab's rule) gives that
    # session's list and seed.
    list_index, seed = _session_of(data, "kept start")
    manifest = study.stimulus_set.manifest
    pairs = list_manifest(manifest, split_lists(study.protocol, manifest), list_index)
    built = build_trials(study.protocol, pairs, seed)
    assert built["image_id"].tolist() == found["order"]


def _session_of(data: Path, label: str) -> tuple[int, int]:
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{data / 'online.sqlite3'}")
    with engine.connect() as connection:
        row = connection.execute(
            sa.text("SELECT list_index, seed FROM sessions WHERE source_id = :label"),
            {"label": label},
        ).one()
    engine.dispose()
    return int(row[0]), int(row[1])


@pytest.mark.parametrize(
    "spoil",
    [
        lambda r: r["plan"]["orders"][0].update(repeat=False),
        lambda r: r["plan"]["orders"][-1].update(repeat_from=0.25),
        lambda r: r["plan"]["orders"].pop(),
    ],
    ids=["no repeats", "repeats from a quarter", "a list fewer"],
)
def test_a_kept_plan_sealed_anew_but_not_the_protocols_is_made_again(tmp_path, online_set, spoil):
    """Beyond its seal, a kept plan must have the protocol's lists and anchor repeats."""
    first, remade, again = _spoiled_starts(tmp_path, online_set, spoil, reseal=True)
    assert not remade.plan_reused and remade.plan == first.plan and again.plan_reused


def test_only_the_toolkits_own_warnings_are_kept_and_each_is_given_once(
    tmp_path, online_set, monkeypatch
):
    """A warning of a library while the plan is made (here a FutureWarning) is given at that
    start only; sbir-study's own are given again at every start that reads the plan back,
    through the filters of that start."""
    from sbir_study.study.online import plan as plan_module

    made = plan_module.ServingPlan.of

    def warning_too(*args, **kwargs):
        warnings.warn("a library's", FutureWarning, stacklevel=2)
        warnings.warn("the toolkit's own", AnchorScaleWarning, stacklevel=2)
        return made(*args, **kwargs)

    data = tmp_path / "data"
    data.mkdir()
    _, protocol = _protocol(tmp_path)
    monkeypatch.setattr(plan_module.ServingPlan, "of", warning_too)
    with warnings.catch_warnings(record=True) as first:
        warnings.simplefilter("always")
        checked_set(online_set, protocol, data)
    assert sorted((w.category.__name__, str(w.message)) for w in first) == [
        ("AnchorScaleWarning", "the toolkit's own"),
        ("FutureWarning", "a library's"),
    ]
    monkeypatch.undo()
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        assert checked_set(online_set, protocol, data).plan_reused
    assert [(w.category, str(w.message)) for w in again] == [
        (AnchorScaleWarning, "the toolkit's own")
    ]
    with warnings.catch_warnings(record=True) as hidden:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", AnchorScaleWarning)
        assert checked_set(online_set, protocol, data).plan_reused
    assert hidden == []
