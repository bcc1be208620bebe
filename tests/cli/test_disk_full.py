"""A disk that fills up while a command writes its output: ``export -o``, ``find -o DIR``,
``sweep -o DIR`` and a ``--plot FILE``. The old files stay as they were (all of a folder's
files, not only the one being written when the disk filled), no partial or temporary file is
left, and the error is one line saying that the disk is full and that the old file was kept.

Each case runs twice: on a small tmpfs mounted for the test (root only; elsewhere it skips,
saying why) and with the disk's refusal injected into the writes of this process, which
needs no privilege."""

import errno
import io
import os
import subprocess

import pytest

from tests.cli.conftest import run_cli
from tests.cli.test_fuzz_cli import run_in_process

#: Free room on the full disk: one page, so that a small file of a set fits and the next not.
ROOM = 4096
OLD = b"old content, to be kept\n"

#: command line (``{out}``: the output folder) and the files it writes there
CASES = {
    "export": (["export", "{src}", "-o", "{out}/r.xml"], ["r.xml"]),
    "find": (["find", "-n", "8", "-d", "2", "--no-cache", "-o", "{out}"],
             ["topology.json", "allreduce.json", "frontier.png"]),
    "sweep": (["sweep", "-n", "8", "-d", "2", "--no-evaluate", "--no-cache", "--workers", "1",
               "-o", "{out}"], ["atlas.json", "atlas.csv", "ratio.png", "families.png"]),
    "plot": (["gossip", "info", "ring", "-n", "8", "--plot", "{out}/p.png"], ["p.png"]),
}


@pytest.fixture(scope="module")
def schedule_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("schedule")
    result = run_cli(["schedule", "ring:4", "-c", "allreduce", "-o", "r.json"], folder)
    assert result.returncode == 0, result
    return folder / "r.json"


# -- the full disk: a real one, or one injected --------------------------------------------------

def _mount_tmpfs(folder):
    """Mount a 256 KiB tmpfs on ``folder``; None, or why it cannot be done here."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return f"mount -t tmpfs was refused: {done.stderr.strip() or done.returncode}"
    return None


def _fill(folder):
    """Fill the disk of ``folder`` up to :data:`ROOM` bytes."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                if os.write(fd, b"\0" * 4096) < 4096:
                    break
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
                break
        size = os.fstat(fd).st_size
        os.ftruncate(fd, max(0, size // 4096 * 4096 - ROOM))
    finally:
        os.close(fd)


class _FullDisk:
    """A file open for writing on a disk with ``room[0]`` bytes left (shared by every file):
    a write beyond it writes what fits, then fails as a full disk does. Its descriptor is not
    handed out, so that nothing (Pillow) writes around it."""

    def __init__(self, raw, room):
        self.raw, self.room = raw, room

    def write(self, data):
        data = bytes(data)
        if len(data) > self.room[0]:
            self.raw.write(data[:self.room[0]])
            self.room[0] = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room[0] -= len(data)
        return self.raw.write(data)

    def fileno(self):
        raise io.UnsupportedOperation("fileno")

    def __getattr__(self, name):
        return getattr(self.raw, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.raw.close()
        return False


def _inject(monkeypatch, folder):
    """Make every file that this process opens for writing under ``folder`` see a full disk
    (files are written through descriptors that os.fdopen wraps)."""
    room = [ROOM]
    real = os.fdopen

    def fdopen(fd, mode="r", *args, **kwargs):
        f = real(fd, mode, *args, **kwargs)
        try:
            where = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return f
        if "w" in mode and where.startswith(str(folder) + os.sep):
            return _FullDisk(f, room)
        return f
    monkeypatch.setattr(os, "fdopen", fdopen)


@pytest.fixture(params=["tmpfs", "injected"])
def full_disk(request, tmp_path, monkeypatch):
    """``(folder, run)``: a folder on a disk that fills up, and how to run a command on it."""
    folder = tmp_path / "disk"
    folder.mkdir()
    if request.param == "injected":
        _inject(monkeypatch, folder)
        yield folder, lambda args: run_in_process(args, tmp_path)
        return
    why = _mount_tmpfs(folder)
    if why is not None:
        print(f"skipped: {why}")
        pytest.skip(why)
    try:
        def run(args):
            _fill(folder)
            result = run_cli(args, tmp_path)
            (folder / "filler").unlink()
            return result.returncode, result.stdout, result.stderr
        yield folder, run
    finally:
        subprocess.run(["umount", str(folder)], check=True)


# -- the tests ---------------------------------------------------------------------------------------

def _args(name, folder, schedule_file):
    args, _ = CASES[name]
    return [a.format(out=folder, src=schedule_file) for a in args]


@pytest.mark.parametrize("name", CASES)
def test_a_full_disk_keeps_the_old_files(full_disk, schedule_file, name):
    folder, run = full_disk
    files = CASES[name][1]
    for f in files:
        (folder / f).write_bytes(OLD + f.encode())
    code, _, err = run(_args(name, folder, schedule_file))
    assert code != 0 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "the disk is full" in lines[0] and "the old file was kept" in lines[0], err
    # every old file as it was, and nothing else: no temporary file, no new file of the set
    assert sorted(p.name for p in folder.iterdir() if p.name != "filler") == sorted(files)
    for f in files:
        assert (folder / f).read_bytes() == OLD + f.encode(), f


@pytest.mark.parametrize("name", ["export", "find"])
def test_a_full_disk_leaves_no_partial_file(full_disk, schedule_file, name):
    folder, run = full_disk
    code, _, err = run(_args(name, folder, schedule_file))
    assert code != 0 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "the disk is full" in lines[0], err
    assert "no partial file was left" in lines[0], err
    assert [p.name for p in folder.iterdir() if p.name != "filler"] == []
