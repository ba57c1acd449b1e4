"""Output files that are complete or absent: checked before the work, written atomically, locked.

A command that writes files checks every output path before it simulates anything (a path it
could not write is refused in a second, not after minutes of work), writes each file into a
uniquely named temporary file beside its target, and renames the set into place only when the
whole command has succeeded. So an interrupted or failed command (Ctrl-C included) leaves no
``.partial`` file, no half-written result and no empty folder it created.

Only regular files are ever replaced: an existing device node, FIFO or socket at an output path
is refused (``os.replace`` over ``/dev/full`` as root would replace the device node itself), and
temporary files are created with ``O_EXCL``, so nothing is ever written through a FIFO.

:class:`OutputDir` adds what a folder of results needs: a lock file (``fcntl.flock``), so two
commands writing one ``--out`` folder cannot both report success while one is lost, and the
removal of the folder's earlier outputs that the new run did not write again, so a new partial
run never sits beside stale plots of an older full one.

:func:`check_input_file` is the counterpart for inputs (``--workload``, ``--profile``): an
existing, readable regular file, since reading a FIFO would block forever.
"""

from __future__ import annotations

import contextlib
import fcntl
import fnmatch
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from hwbench.core import interrupts
from hwbench.core.errors import UnavailableError, UsageError

LOCK_NAME = ".hwbench.lock"
Writer = Callable[[BinaryIO], object]  # its return value (e.g. a byte count) is ignored


def _existing_ancestor(path: Path) -> Path:
    """The nearest ancestor of ``path`` (itself included) that exists."""
    current = path
    while not os.path.lexists(current) and current != current.parent:
        current = current.parent
    return current


def _check_folder(path: Path, folder: Path, what: str) -> None:
    """``folder`` (which will hold ``path``) exists as a writable folder or can be created."""
    ancestor = _existing_ancestor(folder)
    if not ancestor.is_dir():
        raise UsageError(f"{what} {path}: cannot create a folder there, {ancestor} is not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: folder {ancestor} is not writable")
    try:  # os.access says yes to root even on a read-only file system (/proc, a ro mount): try it
        with interrupts.deferred_interrupt():  # a Ctrl-C between the two calls must not leave the folder
            os.rmdir(tempfile.mkdtemp(prefix=".hwbench-probe-", dir=ancestor))
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot write in folder {ancestor} ({exc.strerror})") from None


def _refuse_non_regular(path: Path, what: str) -> None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise UsageError(f"{what} {path}: a folder on that path is a file") from None
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot use it ({exc.strerror})") from None
    if stat.S_ISDIR(mode):
        raise UsageError(f"{what} {path} is a folder; give a file path")
    if not stat.S_ISREG(mode):
        raise UsageError(
            f"{what} {path} exists and is not a regular file (a device, FIFO or socket); "
            "hwbench only writes or replaces regular files"
        )


def _refuse_nul(path: str | Path, what: str) -> None:
    if "\x00" in os.fspath(path):
        raise UsageError(f"{what} {os.fspath(path)!r} contains a NUL byte, which no file name can")


def check_output_file(path: str | Path, what: str = "output file") -> Path:
    """Refuse, before any work, a file path that could not be written (see the module docstring)."""
    _refuse_nul(path, what)
    raw = os.fspath(path)
    path = Path(path)
    if path.name in ("", ".", "..") or raw.endswith(os.sep) or not raw:
        raise UsageError(f"{what} {path} names a folder; give a file path")
    _refuse_non_regular(path, what)
    _check_folder(path, _target(path).parent, what)
    return path


def check_output_dir(path: str | Path, what: str = "output folder") -> Path:
    """Refuse, before any work, a folder path that could not hold the outputs."""
    _refuse_nul(path, what)
    path = Path(path)
    if os.path.lexists(path) and not path.is_dir():
        raise UsageError(f"{what} {path} exists and is not a folder")
    _check_folder(path, path, what)
    return path


def check_input_file(path: str | Path, what: str) -> Path:
    """An existing, readable regular file (a FIFO would block the read forever), or a UsageError."""
    if "\x00" in str(path):
        raise UsageError(f"{what} {str(path)!r} contains a NUL byte, which no file name can")
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UsageError(f"{what} {path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot read it ({exc.strerror})") from None
    if stat.S_ISDIR(mode):
        raise UsageError(f"{what} {path} is a folder, not a file")
    if not stat.S_ISREG(mode):
        raise UsageError(f"{what} {path} is not a regular file (a device, FIFO or socket)")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{what} {path}: not readable (permission denied)")
    return path


def _target(path: Path) -> Path:
    """A symlink is written through to its target (the link stays); anything else is itself."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


@dataclass
class _Staged:
    temp: Path
    target: Path


@dataclass
class OutputFiles:
    """Files staged beside their targets and published together by :meth:`commit`.

    Use as a context manager: leaving it with an exception (``KeyboardInterrupt`` included)
    removes every temporary file and every folder it created; leaving it normally commits.
    """

    staged: list[_Staged] = field(default_factory=list)
    created_dirs: list[Path] = field(default_factory=list)

    def _makedirs(self, folder: Path) -> None:
        missing = []
        while not os.path.lexists(folder) and folder != folder.parent:
            missing.append(folder)
            folder = folder.parent
        for d in reversed(missing):
            d.mkdir()
            self.created_dirs.append(d)

    def write(self, path: str | Path, writer: Writer) -> Path:
        """Stage ``path``: ``writer`` gets a binary file handle of a new temporary file.

        A failing write (disk full, folder gone) is a one-line UsageError naming the file.
        """
        try:
            return self._write(Path(path), writer)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None

    def _write(self, path: Path, writer: Writer) -> Path:
        target = _target(path)
        _refuse_non_regular(target, "output file")
        self._makedirs(target.parent)
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
        temp = Path(name)
        self.staged.append(_Staged(temp, target))  # registered first: an interrupt still removes it
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            writer(fh)
        return Path(path)

    def write_text(self, path: str | Path, text: str) -> Path:
        data = text.encode("utf-8")
        return self.write(path, lambda fh: fh.write(data))

    def commit(self) -> list[Path]:
        """Rename every staged file into place (regular files only are ever replaced).

        An interrupt that arrived earlier, even one something swallowed, stops the commit.
        """
        interrupts.check()
        for s in self.staged:
            _refuse_non_regular(s.target, "output file")
        for s in self.staged:
            try:
                os.replace(s.temp, s.target)
            except OSError as exc:
                raise UsageError(f"cannot write {s.target}: {exc.strerror or exc}") from None
        done = [s.target for s in self.staged]
        self.staged, self.created_dirs = [], []
        return done

    def abort(self) -> None:
        for s in self.staged:
            _unlink(s.temp)
        for d in reversed(self.created_dirs):
            with contextlib.suppress(OSError):
                d.rmdir()
        self.staged, self.created_dirs = [], []

    def __enter__(self) -> OutputFiles:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            try:
                self.commit()
            finally:
                self.abort()
        else:
            self.abort()


def write_atomic(path: str | Path, writer: Writer) -> Path:
    """One file, complete or absent (see :class:`OutputFiles`)."""
    with OutputFiles() as files:
        files.write(path, writer)
    return Path(path)


def _read_holder(fd: int) -> str:
    """What the lock holder wrote into the lock file ("audit (pid 123)"), or "command"."""
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return text.splitlines()[0] if text else "command"


class OutputDir:
    """A results folder owned by one command for its whole run (see the module docstring).

    ``owned`` are the glob patterns of the files this command writes there: on success, those
    that the new run did not write again are removed, so the folder holds exactly the new set.
    Other files in the folder are never touched.
    """

    def __init__(self, path: str | Path, owned: Sequence[str], command: str) -> None:
        self.path = Path(path)
        self.owned = tuple(owned)
        self.command = command
        self.files = OutputFiles()
        self._lock_fd: int | None = None
        self._created: list[Path] = []

    def __enter__(self) -> OutputDir:
        check_output_dir(self.path)
        try:
            self.files._makedirs(self.path)
        except OSError as exc:
            self.files.abort()
            raise UsageError(f"cannot create output folder {self.path}: {exc.strerror or exc}") from None
        self._created, self.files.created_dirs = self.files.created_dirs, []
        try:
            self._lock()
        except BaseException:
            self._remove_created()
            raise
        return self

    def _lock(self) -> None:
        lock = self.path / LOCK_NAME
        while True:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise UnavailableError(
                    f"{self.path} is being written by another hwbench {holder} (lock {lock}); "
                    "wait for it to finish or choose another --out"
                ) from None
            try:
                same = os.stat(lock, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:  # else the holder removed it between our open and flock: take the new one
                self._lock_fd = fd
                os.ftruncate(fd, 0)
                os.write(fd, f"{self.command} (pid {os.getpid()})\n".encode())
                return
            os.close(fd)

    def write(self, name: str, writer: Writer) -> Path:
        return self.files.write(self.path / name, writer)

    def write_text(self, name: str, text: str) -> Path:
        return self.files.write_text(self.path / name, text)

    def _remove_stale(self, written: list[Path]) -> None:
        keep = {p.name for p in written}
        for entry in os.listdir(self.path):
            if entry not in keep and any(fnmatch.fnmatchcase(entry, pat) for pat in self.owned):
                p = self.path / entry
                if p.is_file() and not p.is_symlink():
                    _unlink(p)

    def _remove_created(self) -> None:
        for d in reversed(self._created):
            with contextlib.suppress(OSError):
                d.rmdir()
        self._created = []

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if exc_type is None:
                self._remove_stale(self.files.commit())
                self._created = []
        finally:
            # A second Ctrl-C (or one re-sent after landing in an import: core/interrupts.py) must
            # not stop the clean-up half-way, leaving the lock or a folder this command created.
            with interrupts.deferred_interrupt():
                self.files.abort()
                if self._lock_fd is not None:
                    _unlink(self.path / LOCK_NAME)  # unlinked while held: see _lock for the race
                    os.close(self._lock_fd)
                    self._lock_fd = None
                self._remove_created()
