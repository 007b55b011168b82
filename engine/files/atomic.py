"""Atomic file writing: a file appears whole or not at all; several files together or none.

Every file leaves through :func:`atomic_path`: it is written to a temporary file in the target
folder, flushed, fsync'ed and moved over the target with :func:`os.replace`, so a failed or
cancelled export leaves the previous file (or nothing) and never a partial one. The input file
is never a target (``forbid``). :class:`AtomicBatch` (and :func:`write_all_or_nothing`) stages
several files and moves them into place together, restoring the old ones when one move fails
(a file open in Excel on Windows). Split from :mod:`engine.files.write` because it knows
nothing of tables: the report and the meta-analysis write through it too.

References:
    POSIX ``rename(2)`` atomicity; python-atomicwrites (archived) design; Windows
    ``MoveFileEx``; docs/pitfalls.md ("Export"); docs/contracts.md ("Files are written atomically").

Example:
    >>> import tempfile
    >>> p = atomic_write_bytes(Path(tempfile.mkdtemp()) / "x.bin", b"abc")
    >>> p.read_bytes()
    b'abc'
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from engine.errors import InputError

PathLike = str | os.PathLike[str]
# Pauses (seconds) before retrying a replace that an antivirus scanner blocks for a moment.
_RETRY_DELAYS: tuple[float, ...] = (0.05, 0.1, 0.2, 0.4, 0.8)
_ON_WINDOWS = os.name == "nt"


def _refuse_input_path(target: Path, forbid: PathLike | None) -> None:
    """Raise InputError when ``target`` is the input file ``forbid``."""
    if forbid is None:
        return
    source = Path(forbid)
    same = target.resolve() == source.resolve()
    if not same and target.exists() and source.exists():
        same = os.path.samefile(target, source)
    if same:
        raise InputError(
            f"{target}: this is the input file and is never overwritten; "
            "choose another output folder or file name"
        )


def _path_too_long(path: Path, err: OSError) -> bool:
    """True when ``err`` (raised creating ``path``) comes from a path or name over the limit."""
    if err.errno == errno.ENAMETOOLONG:
        return True
    # Windows without long-path support answers a path over 259 characters with "not found".
    return _ON_WINDOWS and isinstance(err, FileNotFoundError) and len(str(path)) > 259


def _create_temp(target: Path, suffix: str = ".tmp") -> Path:
    """Create an empty, hidden temporary file next to ``target`` (mode follows the umask).

    Raises InputError (one line naming the folder) when the folder cannot take the file: no
    permission, a path too long for the system, or any other refusal by the file system.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}{suffix}")
        try:
            os.close(os.open(tmp, flags, 0o666))
            return tmp
        except FileExistsError:
            continue
        except PermissionError as err:
            raise InputError(
                f"{target.parent}: no permission to write in this folder; choose another one"
            ) from err
        except OSError as err:
            if _path_too_long(tmp, err):
                raise InputError(
                    f"{target.parent}: this folder's path is too long to write {target.name} "
                    f"({len(str(tmp))} characters with the temporary name); "
                    "choose an output folder with a shorter path"
                ) from err
            raise InputError(
                f"{target.parent}: cannot write {target.name} in this folder "
                f"({err.strerror or err}); choose another folder"
            ) from err
    raise InputError(f"{target.parent}: cannot create a temporary file; choose another folder")


def _fsync_file(path: Path) -> None:
    """Flush the file's data to disk (opened read-write so it also works on Windows)."""
    with open(path, "rb+") as handle:
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable on POSIX; a no-op where directories cannot be opened."""
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _replace_retrying(src: Path, dst: Path) -> None:
    """``os.replace``, tried again after short pauses while it raises PermissionError.

    An antivirus scanner or the Windows search indexer opens a new file for a moment; a
    program that keeps the target open (Excel, a PDF viewer) still fails after the last try.
    """
    for delay in (*_RETRY_DELAYS, None):
        try:
            os.replace(src, dst)
            return
        except PermissionError:
            if delay is None:
                raise
            time.sleep(delay)


def _locked_message(target: Path) -> str:
    """Plain words for a target that another program keeps open."""
    program = "a PDF viewer" if target.suffix.lower() == ".pdf" else "Excel"
    return f"{target} is open in another program (e.g. {program}); close it and export again"


def _replace(tmp: Path, target: Path) -> None:
    """``os.replace`` with the locked-target case (Excel on Windows) said in plain words."""
    try:
        _replace_retrying(tmp, target)
    except PermissionError as err:
        raise InputError(_locked_message(target)) from err


def _check_target(target: Path, forbid: PathLike | None) -> None:
    """InputError when ``target`` is the input file, a folder, or in a missing folder."""
    _refuse_input_path(target, forbid)
    if not target.parent.is_dir():
        raise InputError(f"{target.parent}: folder does not exist; create it or choose another")
    if target.is_dir():
        raise InputError(f"{target}: is a folder; choose a file name")


@contextlib.contextmanager
def atomic_path(path: PathLike, *, forbid: PathLike | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; move it over ``path`` only on success.

    On success the file is fsync'ed and renamed with :func:`os.replace`; on any exception,
    ``KeyboardInterrupt`` included, the temporary file is removed and ``path`` is untouched.

    References:
        POSIX ``rename(2)`` atomicity; python-atomicwrites (archived) design; OWASP ASVS V1.2.10.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> with atomic_path(folder / "a.txt") as tmp:
        ...     _ = tmp.write_text("done")
        >>> (folder / "a.txt").read_text(), sorted(p.name for p in folder.iterdir())
        ('done', ['a.txt'])
    """
    target = Path(path)
    _check_target(target, forbid)
    tmp = _create_temp(target)
    try:
        yield tmp
        _fsync_file(tmp)
        _replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(target.parent)


def atomic_write_bytes(path: PathLike, data: bytes, *, forbid: PathLike | None = None) -> Path:
    """Write ``data`` to ``path`` atomically and return the path.

    References:
        See :func:`atomic_path`.

    Example:
        >>> import tempfile
        >>> p = atomic_write_bytes(Path(tempfile.mkdtemp()) / "x.bin", b"abc")
        >>> p.read_bytes()
        b'abc'
    """
    target = Path(path)
    with atomic_path(target, forbid=forbid) as tmp:
        with open(tmp, "wb") as handle:
            handle.write(data)
    return target


Content = bytes | Callable[[Path], None]


def _backup(target: Path) -> Path | None:
    """A hidden copy of the current ``target`` (a hard link where possible), or None."""
    if not target.exists():
        return None
    backup = _create_temp(target, ".bak")
    try:
        backup.unlink()
        os.link(target, backup)
    except OSError:  # no hard links here (FAT, some network shares): copy instead
        shutil.copy2(target, backup)
    return backup


class AtomicBatch:
    """Several files written as one: every file is staged first, then all are moved into place.

    ``stage`` writes a file's content to a temporary file next to its target (bytes, or a
    function that writes to the path it is given) and returns that temporary path, so a caller
    can hash a file before staging the next. Leaving the ``with`` block normally commits: each
    target is replaced in turn (with short retries for antivirus locks); when one replacement
    fails, the targets already replaced get their previous content back and every temporary
    file is removed, so the folders look as before. An exception inside the block discards.

    References:
        POSIX ``rename(2)``; Windows ``MoveFileEx`` (fails on a file another program has open).

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> with AtomicBatch() as batch:
        ...     _ = batch.stage(folder / "a.txt", b"A")
        ...     _ = batch.stage(folder / "b.txt", lambda tmp: tmp.write_bytes(b"B"))
        >>> sorted(p.name for p in folder.iterdir()), (folder / "b.txt").read_text()
        (['a.txt', 'b.txt'], 'B')
    """

    def __init__(self, *, forbid: PathLike | None = None) -> None:
        self.forbid = forbid
        self._staged: list[tuple[Path, Path]] = []
        self.committed: list[Path] = []  # filled by a successful commit

    def stage(self, path: PathLike, content: Content) -> Path:
        """Write ``content`` for ``path`` to a temporary file and return the temporary path."""
        target = Path(path)
        if any(target == staged for staged, _ in self._staged):
            raise ValueError(f"{target} is staged twice")
        _check_target(target, self.forbid)
        tmp = _create_temp(target)
        self._staged.append((target, tmp))
        if isinstance(content, bytes):
            with open(tmp, "wb") as handle:
                handle.write(content)
        else:
            content(tmp)
        _fsync_file(tmp)
        return tmp

    @property
    def targets(self) -> list[Path]:
        """The staged targets, in staging order."""
        return [target for target, _ in self._staged]

    def discard(self) -> None:
        """Remove every temporary file; no target is touched."""
        for _, tmp in self._staged:
            with contextlib.suppress(OSError):
                tmp.unlink()
        self._staged = []

    def commit(self) -> list[Path]:
        """Move every staged file into place, or, on a failure, none (see the class)."""
        targets = self.targets
        done: list[tuple[Path, Path | None]] = []
        try:
            for target, tmp in self._staged:
                backup = _backup(target)
                try:
                    _replace(tmp, target)
                except BaseException:
                    if backup is not None:
                        with contextlib.suppress(OSError):
                            backup.unlink()
                    raise
                done.append((target, backup))
        except BaseException as err:
            _roll_back(done)
            self.discard()
            if isinstance(err, InputError) and len(targets) > 1:
                raise InputError(f"{err} (no file was changed)") from err
            raise
        for _, backup in done:
            if backup is not None:
                with contextlib.suppress(OSError):
                    backup.unlink()
        for folder in {target.parent for target in targets}:
            _fsync_dir(folder)
        self._staged = []
        self.committed = targets
        return targets

    def __enter__(self) -> AtomicBatch:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()


def _roll_back(done: list[tuple[Path, Path | None]]) -> None:
    """Give replaced targets their previous content back (remove the ones that were new)."""
    for target, backup in reversed(done):
        with contextlib.suppress(OSError):
            if backup is None:
                target.unlink()
            else:
                _replace_retrying(backup, target)


def write_all_or_nothing(
    files: Mapping[PathLike, Content], *, forbid: PathLike | None = None
) -> list[Path]:
    """Write every file of ``files`` ({path: bytes or writer(tmp_path)}) or none of them.

    See :class:`AtomicBatch`: all temporary files are written first, then each target is
    replaced; if any replacement fails (a file open in another program), the targets already
    replaced get their old content back and the error names the locked file.

    References:
        docs/contracts.md ("Files are written atomically"); issue 17 item 3.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> [p.name for p in write_all_or_nothing({folder / "x": b"1", folder / "y": b"2"})]
        ['x', 'y']
    """
    with AtomicBatch(forbid=forbid) as batch:
        for path, content in files.items():
            batch.stage(path, content)
    return batch.committed
