"""serve's check of the stimulus set, kept beside the data (study/online/setcheck.py), and
what the study takes from the set when it opens."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

from sbir_study.study.online.setcheck import CHECK_FILE, checked_set
from sbir_study.study.protocol import load_protocol
from sbir_study.study.trials import AnchorScaleWarning
from tests.study.online.support import make_client, write_protocol

#: A lab's own design: letter keys, the high end best, the pairs dealt over two lists.
HIGH_BEST = {
    "response": {"keys": ["a", "s", "d", "f", "g", "h", "j"], "best": "high"},
    "online": {"subset": "pairs", "lists": 2},
}


def _protocol(root: Path, name: str = "protocol.toml", **tables):
    path = write_protocol(root, name, **tables)
    return path, load_protocol(path, online=True)


def test_a_restart_reuses_the_sets_check_for_any_protocol(tmp_path, online_set):
    copy = tmp_path / "set"
    shutil.copytree(online_set, copy)
    data = tmp_path / "data"
    data.mkdir()
    _, protocol = _protocol(tmp_path, online={"subset": "pairs", "lists": 2})
    first = checked_set(copy, protocol, data)
    assert not first.reused
    again = checked_set(copy, protocol, data)
    assert again.reused and again.max_aspect == first.max_aspect
    assert again.stimulus_set.digest == first.stimulus_set.digest
    assert again.stimulus_set.manifest.equals(first.stimulus_set.manifest)
    # Another protocol on the same set: the set's check kept.
    _, other = _protocol(
        tmp_path, "other.toml", online={"subset": "pairs", "lists": 2, "list_seed": 5}
    )
    assert checked_set(copy, other, data).reused


def test_a_check_file_holding_an_older_versions_plan_is_reused_and_the_plan_ignored(
    tmp_path, online_set
):
    """An older serve kept its serving plan in the same file: a restart reads the check
    beside it and serves, whatever the plan holds."""
    data = tmp_path / "data"
    data.mkdir()
    _, protocol = _protocol(tmp_path)
    first = checked_set(online_set, protocol, data)
    record = json.loads((data / CHECK_FILE).read_text(encoding="utf-8"))
    record["plan"] = {"orders": "not a plan", "sha256": "0" * 64}
    (data / CHECK_FILE).write_text(json.dumps(record), encoding="utf-8")
    again = checked_set(online_set, protocol, data)
    assert again.reused and again.max_aspect == first.max_aspect


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
    assert not again.reused and again.max_aspect == first.max_aspect


def test_the_protocols_warnings_on_the_set_are_given_at_every_start(tmp_path, online_set):
    """The set's anchors were made for 1 the best match; a protocol whose high end is best
    is told so at every start, the ones that reuse the kept check too."""
    data = tmp_path / "data"
    data.mkdir()
    _, protocol = _protocol(tmp_path, **HIGH_BEST)
    for reused in (False, True):
        with pytest.warns(AnchorScaleWarning, match="high-is-best") as given_:
            found = checked_set(online_set, protocol, data)
        assert found.reused is reused
        assert len([w for w in given_ if w.category is AnchorScaleWarning]) == 1
    _, paper = _protocol(tmp_path, "paper.toml")
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            checked_set(online_set, paper, data)


def test_the_study_serves_the_images_its_manifest_names_with_their_listed_digests(
    tmp_path, online_set
):
    """stimulus_files: every image the manifest names, with its digest as SHA256SUMS lists
    it (read here line by line, as sha256sum writes it)."""
    study = make_client(tmp_path, online_set).study
    manifest = study.stimulus_set.manifest
    named = (set(manifest["sketch_path"]) | set(manifest["image_path"])) - {""}
    listed = {}
    for line in (online_set / "SHA256SUMS").read_text(encoding="utf-8").splitlines():
        digest, name = line.split("  ", 1)
        listed[name] = digest
    assert named and dict(study.stimulus_files) == {name: listed[name] for name in named}
