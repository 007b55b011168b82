"""Safe, atomic writing of the synthetic table and the recipient's README.

Every file leaves through :func:`atomic_path`: it is written to a temporary file in the target
folder, flushed, fsync'ed and moved over the target with :func:`os.replace`, so a failed or
cancelled export leaves the previous file (or nothing) and never a partial one. The input file
is never a target (``forbid``).

CSV and Excel cells are defused against formula injection (OWASP "CSV Injection", ASVS V1.2.10):
a text cell or column name starting with ``=``, ``+``, ``-``, ``@``, tab, CR, LF or NUL gets a
leading ``'``; numeric columns are never touched. Characters that XML (Excel) and most CSV
readers cannot carry (NUL and the other C0 controls except tab, CR and LF) become U+FFFD.

Formats: ``csv`` (UTF-8), ``xlsx`` (openpyxl, every text cell typed as a string), ``parquet``
(pyarrow), ``sav`` (SPSS) and ``dta`` (Stata) via pyreadstat with variable and value labels.

References:
    OWASP ASVS 4.0.3 V1.2.10 (injection into CSV / spreadsheet output);
    OWASP "CSV Injection", https://owasp.org/www-community/attacks/CSV_Injection.

Example:
    >>> escape_formula("=HYPERLINK(1)"), escape_formula("-3"), escape_formula("ok")
    ("'=HYPERLINK(1)", "'-3", 'ok')
    >>> synthetic_file_name("synthetic", "sav")
    'synthetic.sav'
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import InputError

FORMATS: dict[str, str] = {
    "csv": ".csv",
    "xlsx": ".xlsx",
    "parquet": ".parquet",
    "sav": ".sav",
    "dta": ".dta",
}
FORMULA_TRIGGERS: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r", "\n", "\0")
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_EXCEL_MAX_ROWS = 1_048_576
_EXCEL_MAX_COLUMNS = 16_384
_EXCEL_MAX_TEXT = 32_767
_STATA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
_SPSS_NAME = re.compile(r"^[A-Za-z@#$\u00c0-\uffff][\w.@#$\u00c0-\uffff]*$")
_STATA_LONG = (-2_147_483_647, 2_147_483_620)
PathLike = str | os.PathLike[str]
# Pauses (seconds) before retrying a replace that an antivirus scanner blocks for a moment.
_RETRY_DELAYS: tuple[float, ...] = (0.05, 0.1, 0.2, 0.4, 0.8)
_ON_WINDOWS = os.name == "nt"


# ---------------------------------------------------------------- formula injection


def escape_formula(value: str) -> str:
    """Prefix ``'`` to a text cell a spreadsheet could read as a formula.

    References:
        OWASP "CSV Injection" (leading ``=``, ``+``, ``-``, ``@``, tab, CR, LF, NUL);
        OWASP ASVS V1.2.10.

    Example:
        >>> [escape_formula(v) for v in ["=1+1", "@SUM(A1)", "\\tx", "a=b", ""]]
        ["'=1+1", "'@SUM(A1)", "'\\tx", 'a=b', '']
    """
    if value and value[0] in FORMULA_TRIGGERS:
        return "'" + value
    return value


def _escape_cell(value: Any) -> Any:
    """Escape ``value`` when it is text; leave numbers, dates and missing values alone."""
    return escape_formula(value) if isinstance(value, str) else value


def _is_text(series: pd.Series) -> bool:
    """True for object, string and categorical columns (the ones that can hold text)."""
    dtype = series.dtype
    return (
        pd.api.types.is_object_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
        or isinstance(dtype, pd.CategoricalDtype)
    )


def _map_text(series: pd.Series, fn: Callable[[Any], Any]) -> pd.Series:
    """Apply ``fn`` to every text value, keeping categorical/string dtypes where possible."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        new = [fn(c) for c in series.cat.categories]
        if len(set(new)) == len(new):
            return series.cat.rename_categories(new)
        series = series.astype(object)
    if pd.api.types.is_object_dtype(series.dtype):
        return series.map(fn, na_action="ignore")
    return series.map(fn, na_action="ignore").astype(series.dtype)


def escape_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Return a copy with text cells and column names defused; numeric columns untouched.

    References:
        OWASP "CSV Injection"; OWASP ASVS V1.2.10.

    Example:
        >>> df = pd.DataFrame({"=x": ["-a", "b"], "n": [-1, 2]})
        >>> out = escape_frame(df)
        >>> list(out.columns), out["'=x"].tolist(), out["n"].tolist()
        (["'=x", 'n'], ["'-a", 'b'], [-1, 2])
    """
    out = frame.copy()
    for i in range(out.shape[1]):
        column = out.iloc[:, i]
        if _is_text(column):
            out.isetitem(i, _map_text(column, _escape_cell))  # type: ignore[arg-type]  # pandas-stubs: isetitem takes a Series
    out.columns = [_escape_cell(c) for c in out.columns]
    return out


def _replace_controls(value: Any) -> Any:
    """Replace NUL and other C0 controls (not tab/CR/LF) by U+FFFD in text."""
    return _CONTROL_CHARS.sub("\ufffd", value) if isinstance(value, str) else value


def _spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Escaped frame whose text also survives XML and common CSV readers."""
    out = escape_frame(frame)
    for i in range(out.shape[1]):
        column = out.iloc[:, i]
        if _is_text(column):
            out.isetitem(i, _map_text(column, _replace_controls))  # type: ignore[arg-type]  # pandas-stubs: isetitem takes a Series
    out.columns = [_replace_controls(c) for c in out.columns]
    return out


# ---------------------------------------------------------------- atomic writing


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
        CONTRACTS.md ("Files are written atomically"); issue 17 item 3.

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


# ---------------------------------------------------------------- per-format writers


def _meta_field(meta: Any, name: str) -> Any:
    """Read ``name`` from a dict-like or attribute-style column description."""
    if meta is None:
        return None
    if isinstance(meta, Mapping):
        return meta.get(name)
    return getattr(meta, name, None)


def _write_csv(frame: pd.DataFrame, tmp: Path, column_meta: Mapping[str, Any]) -> None:
    """UTF-8 CSV with a byte-order mark (RFC 4180 line ends, so CR and LF in a cell are quoted).

    The mark tells Excel the file is UTF-8; without it Excel reads the locale's code page
    (cp1252) and shows "Ã©" for "é".
    """
    _spreadsheet_safe(frame).to_csv(tmp, index=False, encoding="utf-8-sig", lineterminator="\r\n")


def _excel_values(series: pd.Series, name: str) -> list[Any]:
    """Python values for one column: None for missing, naive datetimes, text unchanged."""
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        series = series.dt.tz_localize(None)
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        return [None if pd.isna(v) else v.to_pydatetime() for v in series]
    values = series.astype(object).where(series.notna(), None).tolist()
    for v in values:
        if isinstance(v, str) and len(v) > _EXCEL_MAX_TEXT:
            raise InputError(
                f"column {name!r}: text longer than Excel's 32,767 characters; "
                "export as csv or parquet instead"
            )
    return values


def _write_xlsx(frame: pd.DataFrame, tmp: Path, column_meta: Mapping[str, Any]) -> None:
    """Excel workbook; every text cell has ``data_type = "s"`` so nothing is a formula.

    Text is escaped before CR becomes LF, so a cell that started with CR still starts with ``'``.
    """
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell

    if len(frame) + 1 > _EXCEL_MAX_ROWS or frame.shape[1] > _EXCEL_MAX_COLUMNS:
        raise InputError(
            f"{frame.shape[0]} rows x {frame.shape[1]} columns exceed Excel's limits; "
            "export as csv or parquet instead"
        )
    safe = _spreadsheet_safe(frame)
    book = Workbook(write_only=True)
    sheet = book.create_sheet("synthetic")

    def cell(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        # XML parsers turn CR into LF anyway; do it here so what we write is what is read.
        text = WriteOnlyCell(sheet, value=value.replace("\r\n", "\n").replace("\r", "\n"))
        text.data_type = "s"
        return text

    sheet.append([cell(str(c)) for c in safe.columns])
    columns = [_excel_values(safe.iloc[:, i], str(frame.columns[i])) for i in range(safe.shape[1])]
    for row in zip(*columns, strict=True):
        sheet.append([cell(v) for v in row])
    book.save(tmp)


def _labels_json(frame: pd.DataFrame, column_meta: Mapping[str, Any]) -> str:
    """Variable and value labels as JSON (Parquet schema metadata)."""
    labels: dict[str, Any] = {}
    for name in frame.columns:
        meta = column_meta.get(name)
        value_labels = _meta_field(meta, "value_labels") or {}
        labels[name] = {
            "variable_label": _meta_field(meta, "variable_label"),
            "value_labels": {str(k): str(v) for k, v in value_labels.items()},
        }
    return json.dumps(labels, ensure_ascii=False)


def _write_parquet(frame: pd.DataFrame, tmp: Path, column_meta: Mapping[str, Any]) -> None:
    """Parquet via pyarrow; labels kept in the schema metadata ``latent_synth.column_meta``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        raise InputError(f"cannot store this table as Parquet ({err}); export as csv") from err
    metadata = dict(table.schema.metadata or {})
    metadata[b"latent_synth.column_meta"] = _labels_json(frame, column_meta).encode("utf-8")
    pq.write_table(table.replace_schema_metadata(metadata), tmp)


def _numeric_keys(value_labels: Any) -> dict[int | float, str] | None:
    """Value labels with numeric keys (``"1"`` -> 1); None when a key is not a number."""
    if not value_labels:
        return None
    out: dict[int | float, str] = {}
    for key, label in dict(value_labels).items():
        try:
            number = float(key)
        except (TypeError, ValueError):
            return None
        out[int(number) if number.is_integer() else number] = str(label)
    return out


def _labelled_column(
    series: pd.Series, value_labels: dict[int | float, str] | None, stata: bool
) -> tuple[pd.Series, dict[int | float, str] | None]:
    """Column as SPSS/Stata can hold it, plus the value labels that still apply."""
    if pd.api.types.is_bool_dtype(series.dtype) and not series.hasnans:
        series = series.astype("int32")
    elif _is_text(series):
        present = set(series.dropna().unique())
        if value_labels and present <= set(value_labels.values()):
            codes = {label: code for code, label in value_labels.items()}
            series = series.astype(object).map(codes, na_action="ignore").astype("float64")
        elif isinstance(series.dtype, pd.CategoricalDtype) and pd.api.types.is_numeric_dtype(
            series.cat.categories.dtype
        ):
            series = series.astype("float64")
        else:
            text = series.astype(object)
            return text.where(text.notna(), None), None
    elif pd.api.types.is_extension_array_dtype(series.dtype) and pd.api.types.is_numeric_dtype(
        series.dtype
    ):
        series = series.astype("float64")
    if pd.api.types.is_float_dtype(series.dtype) and series.notna().all():
        if np.all(np.mod(series.to_numpy(), 1) == 0) and value_labels:
            series = series.astype("int64")
    if stata and pd.api.types.is_integer_dtype(series.dtype):
        low, high = _STATA_LONG
        if series.empty or (series.min() >= low and series.max() <= high):
            series = series.astype("int32")
        else:
            series = series.astype("float64")
    if stata and value_labels and not all(isinstance(k, int) for k in value_labels):
        value_labels = None
    return series, value_labels


def _check_names(frame: pd.DataFrame, stata: bool) -> None:
    """Raise InputError naming a column that SPSS/Stata cannot hold."""
    pattern = _STATA_NAME if stata else _SPSS_NAME
    program = "Stata" if stata else "SPSS"
    for name in frame.columns:
        too_long = not stata and len(str(name).encode("utf-8")) > 64
        if too_long or not pattern.match(str(name)):
            raise InputError(
                f"column {name!r}: not a valid {program} variable name; "
                "rename it in the input or export as csv, xlsx or parquet"
            )


def _spss_integer_formats(data: pd.DataFrame) -> dict[str, str]:
    """``F<w>.0`` display formats for integer columns (SPSS has one numeric type)."""
    formats: dict[str, str] = {}
    for name in data.columns:
        column = data[name]
        if pd.api.types.is_integer_dtype(column.dtype) and not pd.api.types.is_bool_dtype(
            column.dtype
        ):
            digits = max((len(str(v)) for v in (column.min(), column.max())), default=1)
            formats[name] = f"F{max(8, digits + 1)}.0"
    return formats


def _write_labelled(
    frame: pd.DataFrame, tmp: Path, column_meta: Mapping[str, Any], stata: bool
) -> None:
    """SPSS ``.sav`` or Stata ``.dta`` via pyreadstat, with variable and value labels."""
    import pyreadstat

    _check_names(frame, stata)
    columns: dict[str, pd.Series] = {}
    variable_labels: dict[str, str | None] = {}
    value_labels: dict[str, dict[int | float, str]] = {}
    for name in frame.columns:
        meta = column_meta.get(name)
        labels = _numeric_keys(_meta_field(meta, "value_labels"))
        columns[name], labels = _labelled_column(frame[name], labels, stata)
        if labels:
            value_labels[name] = labels
        label = _meta_field(meta, "variable_label")
        variable_labels[name] = None if label is None else str(label)[: 80 if stata else 256]
    data = pd.DataFrame(columns, index=range(len(frame)))
    options: dict[str, Any] = {}
    if not stata:  # SPSS stores doubles: show integers without decimals
        options["variable_format"] = _spss_integer_formats(data)
    writer = pyreadstat.write_dta if stata else pyreadstat.write_sav
    try:
        writer(
            data,
            str(tmp),
            column_labels=variable_labels,
            variable_value_labels=value_labels or None,
            **options,
        )
    except Exception as err:  # pyreadstat raises several unrelated types
        if isinstance(err, InputError):
            raise
        program = "Stata" if stata else "SPSS"
        raise InputError(
            f"cannot store this table as {program} ({err}); export as csv or parquet instead"
        ) from err


def _write_sav(frame: pd.DataFrame, tmp: Path, column_meta: Mapping[str, Any]) -> None:
    """SPSS writer."""
    _write_labelled(frame, tmp, column_meta, stata=False)


def _write_dta(frame: pd.DataFrame, tmp: Path, column_meta: Mapping[str, Any]) -> None:
    """Stata writer."""
    _write_labelled(frame, tmp, column_meta, stata=True)


_WRITERS: dict[str, Callable[[pd.DataFrame, Path, Mapping[str, Any]], None]] = {
    "csv": _write_csv,
    "xlsx": _write_xlsx,
    "parquet": _write_parquet,
    "sav": _write_sav,
    "dta": _write_dta,
}


def _format_name(fmt: str) -> str:
    """Normalise ``".CSV"`` to ``"csv"``; InputError listing the formats otherwise."""
    name = str(fmt).strip().lower().lstrip(".")
    if name not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    return name


def table_writer(
    frame: pd.DataFrame, fmt: str, column_meta: Mapping[str, Any] | None = None
) -> Callable[[Path], None]:
    """A function that writes ``frame`` as ``fmt`` to the path it is given (for
    :class:`AtomicBatch`); the format is checked now, the table written when called.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "t.csv"
        >>> table_writer(pd.DataFrame({"a": [1]}), "csv")(p)
        >>> p.read_bytes()[:3].hex()  # the UTF-8 byte-order mark
        'efbbbf'
    """
    name = _format_name(fmt)
    data = frame.copy(deep=False)
    data.columns = [str(c) for c in data.columns]
    meta = {str(k): v for k, v in (column_meta or {}).items()}

    def write(tmp: Path) -> None:
        _WRITERS[name](data.reset_index(drop=True), tmp, meta)

    return write


def write_table(
    frame: pd.DataFrame,
    path: PathLike,
    fmt: str,
    column_meta: Mapping[str, Any] | None = None,
    *,
    forbid: PathLike | None = None,
) -> Path:
    """Write ``frame`` atomically to ``path`` as ``fmt`` and return the path.

    ``column_meta`` maps a column name to an object or dict with ``variable_label`` and
    ``value_labels`` ({code: label}); SPSS and Stata get them as labels, Parquet as schema
    metadata. Text columns whose values are all labels are written as labelled codes. CSV is
    UTF-8 with a byte-order mark, so Excel shows non-ASCII labels correctly.

    References:
        OWASP ASVS V1.2.10 and OWASP "CSV Injection" (CSV and Excel cells are escaped).

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "synthetic.csv"
        >>> _ = write_table(pd.DataFrame({"a": ["=1", "x"], "b": [-1, 2]}), p, "csv")
        >>> p.read_text(encoding="utf-8-sig").splitlines()
        ['a,b', "'=1,-1", 'x,2']
    """
    target = Path(path)
    writer = table_writer(frame, fmt, column_meta)
    with atomic_path(target, forbid=forbid) as tmp:
        writer(tmp)
    return target


# ---------------------------------------------------------------- labelling for the recipient


def synthetic_file_name(stem: str = "synthetic", fmt: str = "csv") -> str:
    """File name that says "synthetic": ``synthetic.csv``, or ``cohort_synthetic.sav``.

    References:
        CONTRACTS.md (output folder: ``synthetic.<ext>``).

    Example:
        >>> synthetic_file_name("synthetic", "csv"), synthetic_file_name("cohort", ".DTA")
        ('synthetic.csv', 'cohort_synthetic.dta')
    """
    extension = FORMATS[_format_name(fmt)]
    base = str(stem).strip() or "synthetic"
    if Path(base).name != base or base in {".", ".."}:
        raise InputError(f"{stem!r}: a file name stem must not contain a folder; give a name")
    if not base.lower().endswith("synthetic"):
        base = f"{base}_synthetic"
    return base + extension


_README_ALIASES: dict[str, str] = {
    "w": "perturbation_weight",
    "auc": "membership_auc",
    "auc_max": "auc_limit",
    "dropped": "dropped_columns",
    "version": "tool_version",
}


def _readme_fields(info: Mapping[str, Any]) -> dict[str, Any]:
    """``info`` with short aliases (``w``, ``auc``, ``auc_max``, ...) mapped to full names."""
    fields = {_README_ALIASES.get(k, k): v for k, v in info.items() if k in _README_ALIASES}
    fields.update({k: v for k, v in info.items() if k not in _README_ALIASES})
    if "file_name" not in fields and fields.get("format"):
        fields["file_name"] = synthetic_file_name("synthetic", str(fields["format"]))
    if "override" not in fields and "override" in str(fields.get("verdict", "")):
        fields["override"] = True
    return fields


def _wrap_bullet(sentence: str) -> list[str]:
    """One README bullet wrapped at 92 characters."""
    import textwrap

    return textwrap.wrap(sentence, 92, initial_indent="- ", subsequent_indent="  ")


def _readme_text(info: Mapping[str, Any]) -> str:
    """Plain-words README for whoever receives the synthetic file."""
    from engine import __version__
    from engine.disclosure import copies_sentence

    info = _readme_fields(info)
    dropped = list(info.get("dropped_columns") or [])
    file_name = info.get("file_name", "synthetic.*")
    auc = info.get("membership_auc")
    limit = info.get("auc_limit")
    auc_text = "not recorded" if auc is None else f"{float(auc):.3f}"
    if auc is not None and info.get("auc_se") is not None:
        auc_text += f" ± {float(info['auc_se']):.3f} (mean ± standard error)"
    attack = info.get("auc_attack")
    who = f"Of the attacks tested, the {attack}" if attack else "The membership audit"
    checked = (
        f"{who} gave an AUC of {auc_text} against a limit of {limit} "
        "(0.5 means an attacker cannot tell who was in the real data better than a coin toss)."
    )
    copies = int(info.get("copies") or 1)
    if copies > 1:
        checked += (
            f" There are {copies} synthetic copies of every record; the audit attacked all "
            f"{copies} together, as someone holding every file could."
        )
    if info.get("override"):
        checked += (
            " The limit was NOT met; the file was released only because the user chose to "
            "override the check (recorded in report.pdf)."
        )
    lines = [
        "README - synthetic data file",
        "============================",
        "",
        "WHAT THIS FILE IS",
        f"- {file_name} is SYNTHETIC data. Its rows are not real patients.",
        "- It was generated by Latent Noise Injection with perturbation weight "
        f"w = {info.get('perturbation_weight')} from a model of the real table.",
        "- Rows are in random order; row numbers mean nothing.",
        f"- Rows: {info.get('rows', 'not recorded')}.",
        "- Columns of the real table left out (identifiers, free text, exact dates, and "
        "columns with one value only): "
        + (", ".join(map(str, dropped)) if dropped else "none")
        + ".",
        "",
        "WHAT THIS FILE IS NOT",
        "- It is not de-identified or anonymised real data: each row was generated by a model",
        "  from one real row with random noise added, and the rows were then shuffled.",
        *_wrap_bullet(copies_sentence(info.get("exact_copies"))),
        "- It is not suitable for linking to any other data set, and no row can be traced back.",
        "- Rare categories and extreme values may be distorted or missing; do not report counts",
        "  of rare groups from this file as if they were real.",
        "- Each number column is kept between its 10th smallest and 10th largest real value (or a",
        "  range set by the data holder), so no real extreme value held by fewer than 10 people",
        "  appears in the file.",
        "- Results should be confirmed on the real data before publication.",
        "",
        "HOW IT WAS CHECKED",
        f"- {checked}",
        "- Details, figures and settings: report.pdf and audit.json in the same folder.",
        "",
        f"Tool: latent-synth {info.get('tool_version', __version__)}",
        f"Date: {info.get('date', _dt.date.today().isoformat())}",
        "",
    ]
    return "\n".join(lines)


def write_recipient_readme(folder: PathLike, info: Mapping[str, Any]) -> Path:
    """Write ``README.txt`` into ``folder`` explaining what the synthetic file is and is not.

    Keys of ``info`` (all optional, shown as "not recorded"/defaults when absent):
    ``file_name``, ``perturbation_weight``, ``membership_auc``, ``auc_limit``, ``rows``,
    ``dropped_columns`` (list), ``override`` (bool, released with ``--allow-risky``),
    ``tool_version`` (default: this package), ``date`` (default: today, ISO). The short
    names ``w``, ``auc``, ``auc_max``, ``dropped``, ``version``, ``format`` (gives
    ``synthetic.<ext>``) and ``verdict`` (``"released with override"`` sets ``override``) are
    accepted too.

    References:
        Issue 5 ("every export is clearly marked synthetic"); ACRO/SACRO output-checking guidance.

    Example:
        >>> import tempfile
        >>> p = write_recipient_readme(tempfile.mkdtemp(), {"perturbation_weight": 0.5})
        >>> "SYNTHETIC" in p.read_text(encoding="utf-8"), p.name
        (True, 'README.txt')
    """
    return atomic_write_bytes(Path(folder) / "README.txt", recipient_readme_bytes(info))


def recipient_readme_bytes(info: Mapping[str, Any]) -> bytes:
    """The bytes of ``README.txt`` (see :func:`write_recipient_readme`): UTF-8, CRLF on Windows."""
    text = _readme_text(info).replace("\n", os.linesep if os.name == "nt" else "\n")
    return text.encode("utf-8")
