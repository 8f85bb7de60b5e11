"""Lists of main pairs in the lab: the online arm's design ([online] subset, lists) for ``run``.

``run --list N`` gives the participant list N; without it, the list with the fewest
sessions in the dataset. The list is in the sidecar (``PairList``) and a resumed
session keeps it. Tested on the choice alone, on the plan of a session (no window),
and in real sessions in a PsychoPy window under Xvfb.
"""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.foundation import bids
from sbir_study.foundation.checks import InputError
from sbir_study.study.online.assignment import split_lists
from sbir_study.study.protocol import Online, Protocol
from sbir_study.study.session.lists import choose_pair_list, dataset_list_counts
from tests.study.session_harness import beh_file, start_session

TASK = "sbirlists"


def _manifest(sketches=2, images=8):
    rows = [("a", f"a_{r}", "anchor", str(r + 1)) for r in range(3)]
    rows += [(f"s{s}", f"s{s}_{i}", "main", "") for s in range(sketches) for i in range(images)]
    frame = pd.DataFrame(rows, columns=["sketch_id", "image_id", "role", "anchor_rating"])
    return frame.assign(sketch_path="x.png", image_path="y.png")


def _protocol(subset="pairs", lists=3) -> Protocol:
    return replace(Protocol(task=TASK), online=Online(subset=subset, lists=lists))


def _record(data: Path, label: str, entry: dict | None, key: str = "PairList") -> Path:
    sidecar = bids.beh_path(data, label, TASK).with_suffix(".json")
    sidecar.parent.mkdir(parents=True, exist_ok=True)
    sidecar.write_text(json.dumps({"Seed": 3, **({key: entry} if entry else {})}))
    return sidecar


@settings(max_examples=80, deadline=None)
@given(
    sessions=st.lists(st.integers(1, 4), max_size=12),
    online=st.lists(st.integers(1, 4), max_size=3),
    unlisted=st.integers(0, 2),
)
def test_the_next_list_has_the_fewest_sessions_the_lowest_on_a_tie(
    tmp_path_factory, sessions, online, unlisted
):
    data = tmp_path_factory.mktemp("data")
    for k, number in enumerate(sessions):
        _record(data, f"L{k}", {"Subset": "pairs", "List": number, "Lists": 4})
    for k, number in enumerate(online):  # an online session exported into the same dataset
        _record(data, f"O{k}", {"Subset": "pairs", "List": number, "Lists": 4}, "OnlineList")
    for k in range(unlisted):  # recorded with every main pair: on no list
        _record(data, f"U{k}", None)
    # Expected, counted independently: sessions per list 1..4, the first of the fewest.
    counts = np.bincount(np.array(sessions + online, dtype=int), minlength=5)[1:]
    expected = int(np.flatnonzero(counts == counts.min())[0]) + 1
    assert dict(dataset_list_counts(data, TASK)) == {
        k + 1: int(c) for k, c in enumerate(counts) if c
    }
    chosen = choose_pair_list(_protocol(lists=4), _manifest(), data, requested=None)
    assert chosen.number == expected
    assert chosen.sidecar() == {"PairList": {"Subset": "pairs", "List": expected, "Lists": 4}}


def test_the_list_s_pairs_are_the_online_arm_s(tmp_path):
    manifest = _manifest()
    protocol = _protocol()
    parts = split_lists(protocol, manifest)
    for number in (1, 2, 3):
        chosen = choose_pair_list(protocol, manifest, tmp_path, requested=number)
        main = chosen.manifest[chosen.manifest["role"] == "main"]
        pd.testing.assert_frame_equal(main, parts[number - 1])
        assert (chosen.manifest["role"] == "anchor").sum() == 3  # everyone's
    whole = choose_pair_list(Protocol(), manifest, tmp_path, requested=None)
    pd.testing.assert_frame_equal(whole.manifest, manifest)
    assert whole.sidecar() == {}  # a sidecar as before lists


@pytest.mark.parametrize("requested", [0, 4, 99])
def test_a_list_out_of_range_is_refused(tmp_path, requested):
    with pytest.raises(
        InputError,
        match=rf"^--list: expected a list from 1 to 3 \(the "
        rf"protocol's \[online\] lists\), got {requested}$",
    ):
        choose_pair_list(_protocol(), _manifest(), tmp_path, requested=requested)


def test_resume_keeps_the_recorded_list(tmp_path):
    sidecar = _record(tmp_path, "01", {"Subset": "pairs", "List": 2, "Lists": 3})
    _record(tmp_path, "02", {"Subset": "pairs", "List": 1, "Lists": 3})
    chosen = choose_pair_list(_protocol(), _manifest(), tmp_path, requested=None, resumed=sidecar)
    assert chosen.number == 2  # though list 3 has the fewest sessions
    assert (
        choose_pair_list(_protocol(), _manifest(), tmp_path, requested=2, resumed=sidecar).number
        == 2
    )
    with pytest.raises(InputError, match="recorded on list 2, not 3; a resumed session keeps"):
        choose_pair_list(_protocol(), _manifest(), tmp_path, requested=3, resumed=sidecar)
    unlisted = _record(tmp_path, "03", None)
    with pytest.raises(InputError, match="recorded with every main pair, on no list"):
        choose_pair_list(_protocol(), _manifest(), tmp_path, requested=None, resumed=unlisted)


def test_a_session_s_plan_rates_its_list_and_resumes_on_it(tmp_path, monkeypatch, small_set):
    from sbir_study.stimuli import load_set
    from sbir_study.study import display
    from sbir_study.study.session.plan import plan_session

    monkeypatch.setattr(display, "require_display", lambda: ":0")  # no window is opened here
    stimulus_set = load_set(small_set)
    protocol = replace(
        _protocol(subset="pairs", lists=2),
        participants=replace(Protocol().participants, details=()),
        dataset=replace(Protocol().dataset, authors=("A. Tester",)),
    )
    parts = split_lists(protocol, stimulus_set.manifest)
    plan = plan_session(
        protocol,
        stimulus_set,
        "01",
        tmp_path,
        resume=False,
        simulate=False,
        seed=4,
        details=None,
        pair_list=2,
    )
    main = plan.trials[plan.trials["phase"] == "main"]
    assert sorted(main["image_id"]) == sorted(parts[1]["image_id"])
    # Recorded on list 2; resumed without --list, it is list 2 again, with the same order.
    plan.path.parent.mkdir(parents=True)
    plan.path.write_text("trial\n")
    (tmp_path / "dataset_description.json").write_text("{}")
    sidecar = {"Seed": plan.seed, **plan.pair_list.sidecar()}
    plan.path.with_suffix(".json").write_text(json.dumps(sidecar))
    resumed = plan_session(
        protocol, stimulus_set, "01", tmp_path, resume=True, simulate=False, seed=None, details=None
    )
    assert resumed.pair_list.number == 2
    pd.testing.assert_frame_equal(resumed.trials, plan.trials)


# --- Real sessions under Xvfb ------------------------------------------------------------------


def test_lab_participants_fill_the_lists_in_turn(display, tmp_path):
    from sbir_study.stimuli import SetDesign, generate_set, load_set

    stimuli = generate_set(
        tmp_path / "set",
        SetDesign(sketches=1, images_per_sketch=4, anchor_sketches=0, width=96, height=72),
        seed=5,
    )
    protocol = tmp_path / "protocol.toml"
    protocol.write_text(
        f'name = "lists test"\ntask = "{TASK}"\n'
        "[timing]\nstimulus_s = 0.3\nblank_s = 0.15\n"
        "[anchoring]\nenabled = false\nrepeat = false\n"
        "[participants]\ndetails = []\n"
        '[dataset]\nname = "List tests"\nauthors = ["A. Tester"]\n'
        "[display]\nfullscreen = false\nresolution = [800, 600]\n"
        '[online]\nsubset = "pairs"\nlists = 2\n'
    )
    data = tmp_path / "data"
    recorded = {}
    for label, extra in (("01", ()), ("02", ()), ("03", ("--list", "2"))):
        session = start_session(
            display, protocol, stimuli, data, "--simulate", *extra, participant=label
        )
        status, _, err = session.finish(timeout=90)
        assert status == 0, err
        table = pd.read_csv(beh_file(data, TASK, label), sep="\t", dtype={"participant": str})
        sidecar = json.loads(beh_file(data, TASK, label).with_suffix(".json").read_text())
        recorded[label] = (sidecar["PairList"], set(table["image_id"]))
    main = load_set(stimuli).manifest
    halves = [
        set(part["image_id"])
        for part in split_lists(replace(Protocol(), online=Online(subset="pairs", lists=2)), main)
    ]
    assert recorded["01"] == ({"Subset": "pairs", "List": 1, "Lists": 2}, halves[0])
    assert recorded["02"] == ({"Subset": "pairs", "List": 2, "Lists": 2}, halves[1])
    assert recorded["03"] == ({"Subset": "pairs", "List": 2, "Lists": 2}, halves[1])
    assert halves[0] | halves[1] == set(main["image_id"]) and not halves[0] & halves[1]
