"""The output policy (foundation/outputs.py, docs/outputs.md): nothing is lost or overwritten."""

import contextlib
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sbir_study.foundation import outputs, targets
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.outputs import (
    RECORD,
    TEMP_PREFIX,
    output_files,
    output_folder,
    read_record,
)


def tree(root):
    """Every file and folder under ``root`` with the bytes of each file."""
    found = {}
    for base, folders, files in os.walk(root):
        for name in folders:
            found[os.path.relpath(os.path.join(base, name), root) + "/"] = None
        for name in files:
            path = os.path.join(base, name)
            with open(path, "rb") as stream:
                found[os.path.relpath(path, root)] = stream.read()
    return found


def write(folder, files):
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def leftovers(folder):
    return [p.name for p in folder.iterdir() if p.name.startswith(TEMP_PREFIX)]


def test_a_new_folder_holds_the_files_and_a_record_of_them(tmp_path):
    with output_folder(tmp_path / "out", "analyze") as folder:
        assert folder.parent == tmp_path and folder.name.startswith(TEMP_PREFIX)
        write(folder, {"a.csv": "1\n", "figures/b.png": "png"})
    record = read_record(tmp_path / "out")
    assert record.command == "analyze" and record.complete
    # Independent of the module's own hashing: hashlib over the bytes written.
    import hashlib

    assert record.files == {
        "a.csv": hashlib.sha256(b"1\n").hexdigest(),
        "figures/b.png": hashlib.sha256(b"png").hexdigest(),
    }
    assert leftovers(tmp_path) == []


def test_an_existing_output_needs_overwrite_and_is_replaced_whole(tmp_path):
    with output_folder(tmp_path / "out", "analyze") as folder:
        write(folder, {"old.csv": "old\n", "keep.csv": "1\n"})
    before = tree(tmp_path)
    with pytest.raises(InputError, match="pass --overwrite"):
        with output_folder(tmp_path / "out", "analyze") as folder:
            write(folder, {"new.csv": "x"})
    assert tree(tmp_path) == before
    with output_folder(tmp_path / "out", "analyze", overwrite=True) as folder:
        write(folder, {"new.csv": "new\n"})
    assert sorted(os.listdir(tmp_path / "out")) == [RECORD, "new.csv"]
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda out: (out / "notes.txt").write_text("mine"), "holds notes.txt, which"),
        (lambda out: (out / "old.csv").write_text("edited"), "old.csv was changed after"),
        (lambda out: (out / RECORD).unlink(), "did not write"),
    ],
)
def test_overwrite_never_touches_a_file_the_command_did_not_write(tmp_path, damage, message):
    with output_folder(tmp_path / "out", "analyze") as folder:
        write(folder, {"old.csv": "old\n"})
    damage(tmp_path / "out")
    before = tree(tmp_path)
    with pytest.raises(InputError, match=message):
        with output_folder(tmp_path / "out", "analyze", overwrite=True) as folder:
            write(folder, {"new.csv": "x"})
    assert tree(tmp_path) == before


def test_another_commands_output_is_never_a_target(tmp_path):
    with output_folder(tmp_path / "out", "analyze") as folder:
        write(folder, {"report.html": "analysis"})
    before = tree(tmp_path)
    with pytest.raises(InputError, match="holds the output of sbir-study analyze"):
        with output_folder(tmp_path / "out", "evaluate", overwrite=True):
            pass
    with pytest.raises(InputError, match=r"inside .* the output of sbir-study analyze"):
        with output_folder(tmp_path / "out" / "sub", "evaluate"):
            pass
    assert tree(tmp_path) == before


def test_a_failed_command_leaves_the_old_output_and_no_temporary_folder(tmp_path):
    with output_folder(tmp_path / "out", "analyze") as folder:
        write(folder, {"a.csv": "old"})
    before = tree(tmp_path)
    with pytest.raises(RuntimeError):
        with output_folder(tmp_path / "out", "analyze", overwrite=True) as folder:
            write(folder, {"a.csv": "half"})
            raise RuntimeError("the work failed half-way")
    with pytest.raises(KeyboardInterrupt):
        with output_folder(tmp_path / "out", "analyze", overwrite=True) as folder:
            write(folder, {"a.csv": "half"})
            raise KeyboardInterrupt
    assert tree(tmp_path) == before


def test_a_storage_error_hidden_by_a_librarys_clean_up_is_the_one_reported(tmp_path):
    """matplotlib's PDF writer, whose write failed with ENOSPC, then fails closing its stream
    with AttributeError ('Stream' object has no attribute 'pos'): seen with a full disk. The
    message names the output and the storage's error, as for any other write."""
    with output_folder(tmp_path / "out", "analyze") as folder:
        write(folder, {"a.csv": "old"})
    before = tree(tmp_path)
    with pytest.raises(InputError) as raised:
        with output_folder(tmp_path / "out", "analyze", overwrite=True) as folder:
            write(folder, {"a.csv": "half"})
            try:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            except OSError:
                raise AttributeError("'Stream' object has no attribute 'pos'")  # noqa: B904
    assert str(raised.value) == (
        f"{tmp_path / 'out'}: {os.strerror(errno.ENOSPC)} while writing; nothing was replaced"
    )
    assert tree(tmp_path) == before
    # An error with no storage error behind it stays what it is.
    with pytest.raises(AttributeError):
        with output_folder(tmp_path / "out", "analyze", overwrite=True) as folder:
            raise AttributeError("a bug")
    assert tree(tmp_path) == before


@pytest.mark.parametrize("exchange", [True, False])
def test_replacing_without_renameat2_gives_the_same_result(tmp_path, monkeypatch, exchange):
    if not exchange:  # a system or file system without renameat2: two renames
        monkeypatch.setattr(outputs, "_renameat2", lambda source, destination, flags: False)
    with output_folder(tmp_path / "out", "power") as folder:
        write(folder, {"a.csv": "1"})
    with output_folder(tmp_path / "out", "power", overwrite=True) as folder:
        write(folder, {"b.csv": "2"})
    assert tree(tmp_path / "out").keys() == {RECORD, "b.csv"}
    assert leftovers(tmp_path) == []


def test_a_new_folder_gets_the_mode_mkdir_gives_and_a_replaced_one_keeps_its_own(tmp_path):
    (tmp_path / "plain").mkdir()  # what the umask gives a new folder, as mkdir -p would
    with output_folder(tmp_path / "out", "power") as folder:
        write(folder, {"a.csv": "1"})
    assert (tmp_path / "out").stat().st_mode == (tmp_path / "plain").stat().st_mode
    os.chmod(tmp_path / "out", 0o750)
    with output_folder(tmp_path / "out", "power", overwrite=True) as folder:
        write(folder, {"a.csv": "2"})
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o750


def test_an_empty_folder_is_filled_without_overwrite(tmp_path):
    (tmp_path / "out").mkdir()
    with output_folder(tmp_path / "out", "power") as folder:
        write(folder, {"a.csv": "1"})
    assert (tmp_path / "out" / "a.csv").read_text() == "1"


@pytest.mark.parametrize(
    "setup, target, message",
    [
        (lambda r: None, lambda r: ".", "is the current folder"),
        (lambda r: None, lambda r: "..", "is the current folder or holds it"),
        (lambda r: (r / "f").write_text("x"), lambda r: r / "f", "is a file; expected a folder"),
        (lambda r: (r / "f").write_text("x"), lambda r: r / "f" / "out", "is a file, not a folder"),
        (
            lambda r: (
                (r / "bids").mkdir() or (r / "bids" / "dataset_description.json").write_text("{}")
            ),
            lambda r: r / "bids",
            "is a BIDS dataset",
        ),
        (
            lambda r: (r / "bids" / "sub-01" / "beh").mkdir(parents=True),
            lambda r: r / "bids" / "results",
            r"inside .* a BIDS dataset",
        ),
        (
            lambda r: (
                (r / "set").mkdir()
                or (r / "set" / "manifest.csv").write_text("")
                or (r / "set" / "SHA256SUMS").write_text("")
            ),
            lambda r: r / "set" / "out",
            r"inside .* a stimulus set",
        ),
        (
            lambda r: (r / "data").mkdir() or (r / "data" / "x.csv").write_text("1"),
            lambda r: r / "data",
            "holds files that sbir-study power did not write",
        ),
        (
            lambda r: (r / "real").mkdir() or (r / "link").symlink_to(r / "real"),
            lambda r: r / "link",
            "is a symbolic link",
        ),
        (lambda r: None, lambda r: r / ("n" * 300), "bytes long"),
        (lambda r: None, lambda r: r / ("n" * 300) / "out", "bytes long"),
    ],
)
def test_targets_that_are_never_written(tmp_path, monkeypatch, setup, target, message):
    monkeypatch.chdir(tmp_path)
    setup(tmp_path)
    before = tree(tmp_path)
    with pytest.raises(InputError, match=message):
        with output_folder(target(tmp_path), "power"):
            pass
    assert tree(tmp_path) == before


def test_inputs_are_never_targets_and_derivatives_are_allowed(tmp_path):
    data = tmp_path / "data"
    (data / "sub-01" / "beh").mkdir(parents=True)
    (data / "dataset_description.json").write_text("{}")
    ratings = data / "sub-01" / "beh" / "sub-01_task-x_beh.tsv"
    ratings.write_text("x")
    with pytest.raises(InputError, match="holds the input"):
        outputs.check_target(tmp_path, "analyze", inputs=[ratings])
    with pytest.raises(InputError, match="inside the input folder"):
        outputs.check_target(data / "sub-01" / "out", "analyze", inputs=[data])
    with output_folder(data / "derivatives" / "sbir", "analyze", inputs=[data]) as folder:
        write(folder, {"a.csv": "1"})
    assert (data / "derivatives" / "sbir" / "a.csv").exists()


def test_a_file_group_is_replaced_only_when_its_record_says_so(tmp_path):
    table = tmp_path / "ratings.csv"
    with output_files(table, "simulate", companions=["ratings.json"]) as (csv, sidecar):
        csv.write_text("a\n")
        sidecar.write_text("{}")
    assert read_record(table).files.keys() == {"ratings.csv", "ratings.json"}
    assert (tmp_path / f".ratings.csv{RECORD}").is_file()
    with pytest.raises(InputError, match="pass --overwrite"):
        with output_files(table, "simulate", companions=["ratings.json"]):
            pass
    with output_files(table, "simulate", companions=["ratings.json"], overwrite=True) as paths:
        paths[0].write_text("b\n")
        paths[1].write_text('{"b": 1}')
    assert table.read_text() == "b\n"
    # Someone's table, or someone's sidecar beside a new table: never replaced.
    (tmp_path / "theirs.csv").write_text("theirs")
    (tmp_path / "mine.json").write_text("their sidecar")
    before = tree(tmp_path)
    for name, companion in (("theirs.csv", "theirs.json"), ("mine.csv", "mine.json")):
        with pytest.raises(InputError, match="did not write it"):
            with output_files(tmp_path / name, "simulate", companions=[companion], overwrite=True):
                pass
    assert tree(tmp_path) == before
    with pytest.raises(InputError, match="one name"):
        outputs.check_target(tmp_path / "x.json", "simulate", folder=False, companions=["x.json"])


def test_a_group_missing_a_file_is_not_put_in_place(tmp_path):
    with pytest.raises(RuntimeError, match="did not write"):
        with output_files(tmp_path / "t.csv", "simulate", companions=["t.json"]) as paths:
            paths[0].write_text("only the table")
    assert os.listdir(tmp_path) == []


def test_leftovers_of_a_killed_run_are_removed_by_the_next(tmp_path):
    """A temporary folder whose writer is gone (SIGKILL) is removed, with a warning."""
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(dead.stdout)
    stale = tmp_path / f"{TEMP_PREFIX}killed"
    stale.mkdir()
    (stale / "half.csv").write_text("half")
    record = outputs.OutputRecord(
        "analyze", "out", {}, "", "", complete=False, pid=pid, host=outputs.socket.gethostname()
    )
    (stale / RECORD).write_text(record.to_json())
    alive = tmp_path / f"{TEMP_PREFIX}running"
    alive.mkdir()
    (alive / RECORD).write_text(
        outputs.OutputRecord(
            "analyze", "out", {}, complete=False, pid=os.getpid(), host=outputs.socket.gethostname()
        ).to_json()
    )
    with pytest.warns(outputs.OutputWarning) as caught:
        with output_folder(tmp_path / "out", "analyze") as folder:
            write(folder, {"a.csv": "1"})
    messages = " ".join(str(w.message) for w in caught)
    assert "removed the unfinished output" in messages and "still there" in messages
    assert not stale.exists() and alive.exists()


def test_a_writer_killed_before_its_record_is_known_by_its_folders_name(tmp_path):
    """Killed between making its temporary folder and writing the record in it, a writer
    leaves an empty folder whose name says which process of which host made it: the next
    run removes it once that process is gone, and leaves those of a live process, of
    another host, and folders it cannot tell."""
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    host = outputs._host_digest()
    killed = tmp_path / f"{TEMP_PREFIX}{host}-{int(dead.stdout)}-abc"
    half_recorded = tmp_path / f"{TEMP_PREFIX}{host}-{int(dead.stdout)}-def"
    running = tmp_path / f"{TEMP_PREFIX}{host}-{os.getpid()}-ghi"
    elsewhere = tmp_path / f"{TEMP_PREFIX}{'0' * 8 if host != '0' * 8 else '1' * 8}-1-jkl"
    unnamed = tmp_path / f"{TEMP_PREFIX}someone"
    for folder in (killed, half_recorded, running, elsewhere, unnamed):
        folder.mkdir()
    (half_recorded / f"{RECORD}.partial").write_text('{"format": 1, "comm')
    with pytest.warns(outputs.OutputWarning) as caught:
        with output_folder(tmp_path / "out", "analyze") as folder:
            write(folder, {"a.csv": "1"})
            made_by = outputs._WRITER.match(folder.name)
    # This run's own folder carries its name: this host, this process.
    assert made_by is not None and made_by.groups() == (host, str(os.getpid()))
    removed = [str(w.message) for w in caught if "stopped before it had written" in str(w.message)]
    assert sorted(m.split(":")[0] for m in removed) == sorted([str(killed), str(half_recorded)])
    assert not killed.exists() and not half_recorded.exists()
    assert running.exists() and elsewhere.exists() and unnamed.exists()


def test_a_target_changed_during_the_work_is_not_replaced(tmp_path):
    with output_folder(tmp_path / "out", "analyze") as folder:
        write(folder, {"a.csv": "1"})
    with pytest.raises(InputError, match="did not write"):
        with output_folder(tmp_path / "out", "analyze", overwrite=True) as folder:
            write(folder, {"a.csv": "2"})
            (tmp_path / "out" / "late.txt").write_text("written by someone meanwhile")
    assert (tmp_path / "out" / "late.txt").exists() and (
        tmp_path / "out" / "a.csv"
    ).read_text() == "1"
    assert leftovers(tmp_path) == []


def test_a_target_changed_during_the_work_is_checked_again(tmp_path):
    """A file of the old output edited meanwhile is refused; one deleted meanwhile does not
    matter (the rule for files the record lists), so the new output takes its place."""
    with output_folder(tmp_path / "out", "analyze") as folder:
        write(folder, {"a.csv": "1", "b.csv": "2"})
    with pytest.raises(InputError, match=r"a\.csv was changed after"):
        with output_folder(tmp_path / "out", "analyze", overwrite=True) as folder:
            write(folder, {"a.csv": "new"})
            (tmp_path / "out" / "a.csv").write_text("edited meanwhile")
    assert (tmp_path / "out" / "a.csv").read_text() == "edited meanwhile"
    (tmp_path / "out" / "a.csv").unlink()
    with output_folder(tmp_path / "out", "analyze", overwrite=True) as folder:
        write(folder, {"c.csv": "3"})
        (tmp_path / "out" / "b.csv").unlink()
    assert sorted(os.listdir(tmp_path / "out")) == [RECORD, "c.csv"]
    assert leftovers(tmp_path) == []


def test_the_dataset_folder_of_a_session(tmp_path):
    assert outputs.check_dataset_folder(tmp_path / "new", "run") == tmp_path / "new"
    (tmp_path / "bids").mkdir()
    (tmp_path / "bids" / "dataset_description.json").write_text("{}")
    outputs.check_dataset_folder(tmp_path / "bids", "run")
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is a file"):
        outputs.check_dataset_folder(tmp_path / "file", "run")
    with output_folder(tmp_path / "sim", "simulate") as folder:
        write(folder, {"dataset_description.json": "{}"})
    with pytest.raises(InputError, match="the output of sbir-study simulate"):
        outputs.check_dataset_folder(tmp_path / "sim", "run")


# --- the storage failing ---------------------------------------------------------------------

WRITER = """
import sys
from pathlib import Path
from sbir_study.foundation.outputs import output_folder
from sbir_study.foundation.checks import InputError
try:
    with output_folder(sys.argv[1], "power", overwrite=True) as folder:
        (folder / "big.bin").write_bytes(b"x" * 4_000_000)
except InputError as error:
    print(error)
    sys.exit(2)
"""


def _old_output(folder):
    with output_folder(folder, "power") as staging:
        write(staging, {"old.csv": "old"})


def test_a_file_too_large_for_the_limit_leaves_the_old_output(tmp_path):
    """EFBIG (RLIMIT_FSIZE, which Python turns into an error) stands for any failing write."""
    _old_output(tmp_path / "out")
    before = tree(tmp_path)
    code = "import resource; resource.setrlimit(resource.RLIMIT_FSIZE, (1_000_000, 1_000_000))\n"
    result = subprocess.run(
        [sys.executable, "-c", code + WRITER, str(tmp_path / "out")], capture_output=True, text=True
    )
    assert result.returncode == 2, result.stderr
    assert os.strerror(errno.EFBIG) in result.stdout and "nothing was replaced" in result.stdout
    assert tree(tmp_path) == before


def test_no_space_left_leaves_the_old_output(mounted):
    _old_output(mounted / "out")
    before = tree(mounted)
    result = subprocess.run(
        [sys.executable, "-c", WRITER, str(mounted / "out")], capture_output=True, text=True
    )
    assert result.returncode == 2, result.stderr
    assert os.strerror(errno.ENOSPC) in result.stdout
    assert tree(mounted) == before


def test_a_read_only_folder_is_one_message(mounted):
    _old_output(mounted / "out")
    before = tree(mounted)
    subprocess.run(["mount", "-o", "remount,ro", str(mounted)], check=True)
    with pytest.raises(InputError, match=os.strerror(errno.EROFS)):
        with output_folder(mounted / "new", "power"):
            pass
    assert tree(mounted) == before


# --- the rules as a property -----------------------------------------------------------------

names = st.sampled_from(["a.csv", "b.csv", "figures/c.png", "d.json"])


@settings(
    max_examples=40, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=st.dictionaries(names, st.text(max_size=5), min_size=1),
    command=st.sampled_from(["analyze", "evaluate"]),
    foreign=st.one_of(st.none(), names, st.just("notes.txt")),
    overwrite=st.booleans(),
)
def test_replaced_exactly_when_every_file_is_the_same_commands_own(
    tmp_path_factory, first, command, foreign, overwrite
):
    root = tmp_path_factory.mktemp("property")
    with output_folder(root / "out", "analyze") as folder:
        write(folder, first)
    if foreign is not None:  # a file added or edited by someone else
        write(root / "out", {foreign: "someone's"})
    changed = foreign is not None and (foreign not in first or first[foreign] != "someone's")
    allowed = command == "analyze" and overwrite and not changed
    before = tree(root)
    try:
        with output_folder(root / "out", command, overwrite=overwrite) as folder:
            write(folder, {"new.csv": "new"})
    except InputError:
        assert not allowed
        assert tree(root) == before
    else:
        assert allowed
        assert sorted(os.listdir(root / "out")) == [RECORD, "new.csv"]
        assert json.loads((root / "out" / RECORD).read_text())["command"] == "analyze"
    assert leftovers(root) == []


def test_a_writer_killed_while_it_writes_its_record_leaves_one_the_next_run_reads(
    tmp_path, monkeypatch
):
    """The record of a temporary folder is written whole or not at all: killed between the
    write and the rename (here the rename interrupted), the folder keeps the record it had,
    which read_record still reads, so the next run knows it for a killed writer's."""
    from sbir_study.foundation import atomic, outputs

    record = tmp_path / outputs.RECORD
    atomic.atomic_write(record, '{"before": true}')

    def killed(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        atomic.atomic_write(record, '{"after": true}')
    assert record.read_text(encoding="utf-8") == '{"before": true}'
    assert [p.name for p in tmp_path.iterdir()] == [outputs.RECORD]


class _Ended(BaseException):
    pass


@pytest.mark.parametrize("threads, nested", [(0, False), (3, False), (3, True)])
def test_signals_are_held_back_whichever_thread_the_kernel_gives_them_to(
    threads, nested, monkeypatch
):
    """A signal sent to the process goes to any thread that does not block it. Blocking it
    in the calling thread alone (``pthread_sigmask``) let SIGTERM, taken by a helper thread
    (a progress clock, a library's pool), raise inside the held block: after the temporary
    folder was made and before it was known, so that it stayed. Inside a hold held in
    another (``nested``), the signal waits for the outer one's end."""
    import signal
    import threading
    import time

    raised, held = [], []

    def handler(number, frame):
        raised.append((number, bool(held)))
        raise _Ended(number)

    previous = signal.signal(signal.SIGTERM, handler)
    stop = threading.Event()
    helpers = [threading.Thread(target=stop.wait) for _ in range(threads)]
    for helper in helpers:
        helper.start()
    try:
        with pytest.raises(_Ended):
            with outputs._held_signals():
                with outputs._held_signals() if nested else contextlib.nullcontext():
                    os.kill(os.getpid(), signal.SIGTERM)
                    os.kill(os.getpid(), signal.SIGTERM)
                    held.append(True)
                    for _ in range(50):  # bytecode and sleeps: where a handler would run
                        time.sleep(0.002)
                for _ in range(10):  # between the inner hold's end and the outer's
                    time.sleep(0.002)
                held.clear()
        # Delivered once the hold ended, once, as the kernel delivers a blocked signal.
        assert raised == [(signal.SIGTERM, False)]
        assert signal.getsignal(signal.SIGTERM) is handler
    finally:
        stop.set()
        for helper in helpers:
            helper.join()
        signal.signal(signal.SIGTERM, previous)


_PARTS = st.lists(st.sampled_from(["a", "ab", "a b", "b", ".x", "a-", "é"]), max_size=4)


@settings(max_examples=300, deadline=None)
@given(path=_PARTS, folder=_PARTS)
def test_within_is_paths_and_their_parents(path, folder):
    """The text comparison of normal absolute paths that the output's place is checked with
    (thousands of session files) decides as Path and its parents do: a name that merely
    begins like the folder's (``ab`` beside ``a``) is not inside it."""
    path, folder = "/" + "/".join(path), "/" + "/".join(folder)
    expected = Path(path) == Path(folder) or Path(folder) in Path(path).parents
    assert targets._within(path, folder) == expected
