"""The pure parts of the online session: the [online] table, the lists, key names, sizes."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.foundation.checks import InputError
from sbir_study.study.online import storage
from sbir_study.study.online.assignment import choose_list, list_manifest, split_lists
from sbir_study.study.online.browser_keys import BROWSER_CODES, browser_key_name
from sbir_study.study.online.orders import Order, OrderJson, order_keys, page_trial
from sbir_study.study.online.service import stimulus_pixels
from sbir_study.study.protocol import Anchoring, Online, Protocol, load_protocol
from sbir_study.study.trials import build_trials
from tests.study.online.support import write_protocol


def test_the_online_table_defaults_and_loads(tmp_path):
    protocol = load_protocol(
        write_protocol(
            tmp_path,
            online={
                "subset": "pairs",
                "lists": 4,
                "completion_code": "C0DE-1",
                "raters_per_list": 10,
                "completion_url": "https://app.prolific.com/submissions/complete?cc=C0DE-1",
            },
        )
    )
    assert protocol.online.lists == 4 and protocol.online.subset == "pairs"
    assert Protocol().online == Online()
    for name in ("eitz2011", "pilot", "demo"):
        assert load_protocol(f"protocols/{name}.toml").online.subset == "all"


BAD = [
    ("subset", "some", "online.subset: expected one of all, sketches, pairs"),
    ("lists", 0, "online.lists: expected a whole number >= 1"),
    ("lists", 3, "online.lists: expected 1 with subset"),
    ("list_seed", -1, "online.list_seed"),
    ("stimulus_px", 5000, "online.stimulus_px"),
    ("completion_code", "has space", "online.completion_code"),
    ("completion_url", "ftp://x", "online.completion_url"),
    ("completion_url", "https://a b", "online.completion_url"),
    ("dropout_after_s", 0, "online.dropout_after_s"),
    ("raters_per_list", -2, "online.raters_per_list"),
    ("details", "yes", "online.details: expected true or false"),
    ("subsett", "all", "unknown key 'online.subsett' (did you mean 'online.subset'?)"),
]


@pytest.mark.parametrize(("key", "value", "message"), BAD)
def test_bad_online_settings_name_the_file_and_key(tmp_path, key, value, message):
    path = write_protocol(tmp_path, online={key: value})
    with pytest.raises(InputError) as raised:
        load_protocol(path)
    assert str(path) in str(raised.value) and message in str(raised.value)


def manifests():
    """Stimulus-set manifests: sketches with 2..12 images each, and an anchor sketch."""

    @st.composite
    def build(draw):
        sizes = draw(st.lists(st.integers(2, 12), min_size=1, max_size=9))
        rows = [(f"s{k}", f"s{k}i{j}", "main") for k, n in enumerate(sizes) for j in range(n)]
        rows += [("anc", f"anc{j}", "anchor") for j in range(3)]
        table = pd.DataFrame(rows, columns=["sketch_id", "image_id", "role"])
        table["anchor_rating"] = [
            "" if r == "main" else str(1 + 3 * (k % 3)) for k, r in enumerate(table["role"])
        ]
        table["sketch_path"] = table["sketch_id"] + ".png"
        table["image_path"] = table["image_id"] + ".png"
        return table

    return build()


@settings(max_examples=150, deadline=None)
@given(manifests(), st.sampled_from(["sketches", "pairs"]), st.integers(1, 6), st.integers(0, 9))
def test_lists_split_the_main_pairs_evenly(manifest, subset, lists, seed):
    protocol = replace(Protocol(), online=Online(subset=subset, lists=lists, list_seed=seed))
    main = manifest[manifest["role"] == "main"]
    per_sketch = main.groupby("sketch_id").size()
    try:
        parts = split_lists(protocol, manifest)
    except InputError as error:
        too_many = lists > per_sketch.size if subset == "sketches" else per_sketch.min() < 2 * lists
        assert too_many, error
        assert "online.lists" in str(error)
        return
    assert len(parts) == lists
    # Every main pair in exactly one list; no anchor in any.
    joined = pd.concat(parts)
    assert sorted(joined.index) == sorted(main.index)
    sizes = [len(part) for part in parts]
    if subset == "sketches":
        counts = [part["sketch_id"].nunique() for part in parts]
        assert max(counts) - min(counts) <= 1
        for part in parts:  # whole sketches
            assert (
                part.groupby("sketch_id").size() == per_sketch[part["sketch_id"].unique()]
            ).all()
    else:
        assert max(sizes) - min(sizes) <= 1
        for sketch, _total in per_sketch.items():
            shares = [int((part["sketch_id"] == sketch).sum()) for part in parts]
            assert max(shares) - min(shares) <= 1 and min(shares) >= 2
    # The split depends on the seed only: every server process deals the same lists.
    again = split_lists(protocol, manifest.sample(frac=1.0, random_state=1).sort_index())
    assert [list(p.index) for p in again] == [list(p.index) for p in parts]
    shown = list_manifest(manifest, parts, 0)
    assert set(shown.index) == set(parts[0].index) | set(
        manifest.index[manifest["role"] == "anchor"]
    )


@settings(max_examples=80, deadline=None)
@given(
    manifests(),
    st.integers(0, 2**63 - 1),
    st.booleans(),
    st.booleans(),
    st.sampled_from([0.0, 0.3, 0.5, 0.99]),
    st.integers(0, 3),
)
def test_a_list_order_is_build_trials_order(manifest, seed, enabled, repeat, repeat_from, drop):
    """serve keeps a participant's order as its trials' keys (order_keys, Order): read in
    turn, by index, negative index or slice, the same trials, phases and prescribed ratings
    as build_trials (the lab's and the simulator's rule, read here through pandas) for
    every seed and anchoring setting."""
    manifest = manifest.drop(index=manifest.index[manifest["role"] == "anchor"][:drop])
    anchoring = Anchoring(enabled=enabled, repeat=repeat, repeat_from=repeat_from)
    protocol = replace(Protocol(), anchoring=anchoring)
    columns = [
        "trial",
        "phase",
        "sketch_id",
        "image_id",
        "anchor_rating",
        "sketch_path",
        "image_path",
    ]
    built = build_trials(protocol, manifest, seed)[columns]
    expected = [
        (int(trial), phase, sketch, image, None if pd.isna(rating) else int(rating), sp, ip)
        for trial, phase, sketch, image, rating, sp, ip in built.itertuples(index=False, name=None)
    ]
    order = Order(order_keys(protocol, manifest, seed, {}))
    assert len(order) == len(expected) and list(order) == expected
    assert [order[i] for i in range(-len(expected), len(expected))] == expected + expected
    assert order[1:-1:2] == expected[1:-1:2]
    for outside in (len(expected), -len(expected) - 1):
        with pytest.raises(IndexError):
            order[outside]


_NAMES = st.text(min_size=1, max_size=12)  # unicode, quotes, backslashes, spaces, controls
_ROWS = st.lists(
    st.tuples(
        st.sampled_from(["anchor_demo", "main", "anchor_repeat"]),
        st.sampled_from(["s 1", 's"2', "é/ü"]) | _NAMES,
        _NAMES,
        st.none() | st.integers(1, 7),
        _NAMES.map(lambda name: f"sketches/{name}.png"),
        _NAMES.map(lambda name: f"images/{name} x.jpg"),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ROWS, min_size=1, max_size=3))
def test_an_order_joined_from_its_pairs_json_is_the_encoders_text(orders):
    """A session's order is stored, and sent to its page, as JSON joined from each pair's
    JSON made once (OrderJson): the stored text is storage.dumps's to the byte, the page's
    what Starlette's JSONResponse wrote, for any ids and paths and any pairs met before."""
    encoded = OrderJson()
    for pairs in orders:
        rows = [[number, *pair] for number, pair in enumerate(pairs, start=1)]
        assert encoded.rows(pairs) == storage.dumps(rows)
        page = [page_trial(*row) for row in rows]
        assert encoded.page_trials(pairs) == json.dumps(
            page, ensure_ascii=False, allow_nan=False, separators=(",", ":")
        )


@settings(max_examples=100, deadline=None)
@given(manifests(), st.integers(0, 2**63 - 1), st.booleans())
def test_an_order_read_back_from_its_stored_json_is_the_same_order(manifest, seed, repeat):
    """A restarted server reads a session's order back from its stored JSON (Order.of_rows):
    the same order as the one drawn (the test above holds those to build_trials), its keys
    the ones the process already keeps, one of each."""
    protocol = replace(Protocol(), anchoring=Anchoring(enabled=True, repeat=repeat))
    order = Order(order_keys(protocol, manifest, seed, {}))
    other = Order(order_keys(protocol, manifest, seed + 1, {}))
    rows = list(order)
    shared: dict = {}
    first = Order.of_rows(json.loads(storage.dumps(rows)), shared)
    again = Order.of_rows(json.loads(storage.dumps(list(other))), shared)
    assert first == order and again == other
    assert all(key is shared[key] for key in first.keys + again.keys)
    # A stored order is numbered from 1 (every writer numbers it so): another is refused.
    if rows:
        renumbered = [list(row) for row in rows]
        renumbered[-1][0] += 1
        with pytest.raises(ValueError, match=f"row {len(rows)} is numbered"):
            Order.of_rows(renumbered, {})


@given(st.lists(st.integers(0, 50), min_size=1, max_size=12), st.integers(0, 60))
def test_the_next_participant_gets_the_emptiest_list(counts, cap):
    participants = dict(enumerate(counts))
    chosen = choose_list(participants, len(counts), cap)
    fewest = min(counts)
    if cap and fewest >= cap:
        assert chosen is None
    else:
        assert chosen == counts.index(fewest)  # the lowest-numbered of the emptiest


def test_every_psychopy_key_name_can_come_from_a_browser():
    """PsychoPy's own table of key names (Linux, Psychtoolbox backend) is the reference."""
    from psychopy.hardware.keyboard import keyNamesLinux

    reachable = set(BROWSER_CODES.values())
    assert set(keyNamesLinux.values()) <= reachable, set(keyNamesLinux.values()) - reachable


@given(st.text(max_size=12), st.text(max_size=3))
def test_browser_key_names_are_psychopy_names_or_none(code, key):
    name = browser_key_name(code, key)
    assert name is None or name in set(BROWSER_CODES.values()) | {
        c.lower() for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    }
    if code in BROWSER_CODES:
        assert name == BROWSER_CODES[code]


@pytest.mark.parametrize(
    "display",
    [
        {},
        {"resolution": (1280, 800), "width_cm": 33.0},
        {"distance_cm": 57.0, "stimulus_deg": 8.0, "gap_deg": 2.0},
    ],
)
def test_stimulus_pixels_are_psychopys_degrees(display):
    """The page shows the pair at the size PsychoPy's deg2pix gives the lab window."""
    from psychopy import monitors
    from psychopy.tools.monitorunittools import deg2pix

    protocol = replace(Protocol(), display=replace(Protocol().display, **display))
    geometry = protocol.display
    monitor = monitors.Monitor("probe", width=geometry.width_cm, distance=geometry.distance_cm)
    monitor.setSizePix(list(geometry.resolution))
    width, gap = stimulus_pixels(protocol)
    assert width == round(deg2pix(geometry.stimulus_deg, monitor))
    assert gap == round(deg2pix(geometry.gap_deg, monitor))


def test_warm_makes_each_lists_order_and_json_before_the_workers_fork(tmp_path, online_set):
    """serve warms the study before it forks its workers (OnlineStudy.warm): every list's
    trial keys get their JSON, and the JSON kept for them is what the encoders write, so a
    worker forked again after a crash answers its first sessions as a warm one does."""
    from tests.study.online.support import make_client

    study = make_client(tmp_path, online_set, online={"subset": "pairs", "lists": 2}).study
    assert len(study.lists) == 2
    assert study._json._stored == {} and study._json._page == {}
    study.warm()
    for index in (0, 1):
        keys = study._order_keys(index, 7)
        rows = [[number, *key] for number, key in enumerate(keys, start=1)]
        assert set(keys) <= set(study._json._stored) and set(keys) <= set(study._json._page)
        assert study._json.rows(keys) == storage.dumps(rows)
