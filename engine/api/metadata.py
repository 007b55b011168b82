"""The column choices of a run as one object (:class:`Metadata`): detected as the command line
detects them, saved to and read from a plain, versioned JSON file a person can read and edit,
and handed to a run as :class:`~engine.pipeline.RunConfig` fields.

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"patient_id": range(60), "smoker": ["yes", "no"] * 30,
    ...                    "age": [50.5 + i for i in range(60)]})
    >>> meta = Metadata.detect(df)
    >>> [(c.kind, c.action) for c in meta.columns.values()]
    [('identifier', 'drop'), ('binary', 'synthesize'), ('continuous', 'synthesize')]
    >>> meta.update_column("smoker", action="drop")
    >>> meta.to_config_fields()["drop"]
    ('smoker',)
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from engine.errors import InputError
from engine.pipeline import RunConfig, load_table, schema_for

if TYPE_CHECKING:
    from engine.columns.schema import Schema

METADATA_FORMAT = "latent-synth metadata"
METADATA_VERSION = 1
Table = pd.DataFrame | str | Path  # a DataFrame, or the path of a file the engine reads


@contextmanager
def table_path(table: Table) -> Iterator[str | Path]:
    """The path the engine's reader reads: a DataFrame is written to a private temporary folder
    (Parquet, which keeps its dtypes; CSV where Parquet cannot hold a column) and removed as
    soon as the block ends."""
    if not isinstance(table, pd.DataFrame):
        yield table
        return
    with tempfile.TemporaryDirectory(prefix="latent-synth-") as folder:
        path = Path(folder) / "dataframe.parquet"
        try:
            table.to_parquet(path, index=False)
        except (ValueError, TypeError, NotImplementedError, ImportError):
            path = Path(folder) / "dataframe.csv"
            table.to_csv(path, index=False)
        yield path


@dataclass
class ColumnChoice:
    """One column: the ``kind`` and ``action`` ("synthesize" or "drop") to use, what the tool
    found (``detected_kind``, ``detected_action``, ``reason``) and clinical ``bounds``
    ((lower, upper), either None for the default; None: no bounds set)."""

    kind: str
    action: str
    detected_kind: str
    detected_action: str
    reason: str = ""
    bounds: tuple[float | None, float | None] | None = None


@dataclass
class Metadata:
    """The column choices of a run as one object: kinds, survival roles, dropped and kept
    columns, bounds, rules and missing-value codes.

    :meth:`detect` finds them as the command line does; edit ``columns[name].kind`` or
    ``.action``, ``time``/``event`` (:meth:`set_roles`), ``rules``, then :meth:`to_json` saves
    them and :meth:`from_json` reads them back. Only what differs from what was detected is
    handed to the run (:meth:`to_config_fields`), so an unedited metadata file gives the
    schema the tool finds by itself.
    """

    columns: dict[str, ColumnChoice]
    time: str | None = None
    event: str | None = None
    event_value: str | None = None  # the event column's value that means the event happened
    roles_how: str | None = None  # "recognised", "likely, used: <why>", None: a person chose
    missing_codes: tuple[str, ...] = ()
    sheet: str | int | None = None
    rules: tuple[str, ...] = ()  # the user's own rules ("los <= futime")
    rules_off: tuple[str, ...] = ()  # rules found in the real rows that the user removed
    rules_found: tuple[str, ...] = ()  # found when detected (for reading; found again at fit)

    @classmethod
    def detect(
        cls, table: Table, *, missing_codes: tuple[str, ...] = (), sheet: str | int | None = None
    ) -> Metadata:
        """Column kinds, survival roles and rules found in ``table`` (a DataFrame or a path),
        the way the command line finds them (:func:`engine.columns.schema.infer_schema`, the
        survival pair of :func:`engine.columns.schema.recognise_survival_roles`)."""
        from engine.pipeline.console import command_line_roles
        from engine.pipeline.rules_step import suggest_rules

        with table_path(table) as path:
            config = RunConfig(input=path, sheet=sheet, missing_codes=tuple(missing_codes))
            loaded = load_table(config)
        roles = command_line_roles(loaded.frame)
        config = replace(config, time=roles.time, event=roles.event, event_value=roles.event_value)
        schema = schema_for(config, loaded)
        columns = {
            c.name: ColumnChoice(c.kind, c.action, c.kind, c.action, c.reason)
            for c in schema.columns
        }
        return cls(
            columns,
            time=schema.time,
            event=schema.event,
            event_value=roles.event_value,
            roles_how=roles.how,
            missing_codes=config.missing_codes,
            sheet=sheet,
            rules_found=suggest_rules(schema, loaded.frame),
        )

    def set_roles(
        self, time: str | None, event: str | None, event_value: str | None = None
    ) -> None:
        """Choose the follow-up time and event columns (None: no survival roles)."""
        self.time, self.event, self.event_value, self.roles_how = time, event, event_value, None

    def update_column(
        self,
        name: str,
        *,
        kind: str | None = None,
        action: str | None = None,
        bounds: tuple[float | None, float | None] | None = None,
    ) -> None:
        """Set a column's kind, action ("synthesize" or "drop") or clinical bounds."""
        if name not in self.columns:
            raise InputError(f"no column '{name}' in the metadata; the columns are {self.names}")
        from engine.columns.kinds import KINDS

        if kind is not None and kind not in KINDS:
            raise InputError(
                f"column '{name}': unknown kind '{kind}'; use one of {', '.join(KINDS)}"
            )
        if action not in (None, "synthesize", "drop"):
            raise InputError(f"column '{name}': action '{action}'; use synthesize or drop")
        column = self.columns[name]
        column.kind = kind or column.kind
        column.action = action or column.action
        column.bounds = column.bounds if bounds is None else bounds

    @property
    def names(self) -> str:
        return ", ".join(f"'{n}'" for n in self.columns)

    def to_config_fields(self) -> dict[str, Any]:
        """The :class:`~engine.pipeline.RunConfig` fields these choices set: kinds, drop and
        keep only where they differ from what was detected."""
        from engine.columns.kinds import SYNTHESIZABLE

        kinds, drop, keep, bounds = [], [], [], []
        for name, c in self.columns.items():
            changed = c.kind != c.detected_kind
            if changed:
                kinds.append((name, c.kind))
            default = ("synthesize" if c.kind in SYNTHESIZABLE else "drop") if changed else None
            default = default or c.detected_action
            if c.action == "drop" and default == "synthesize":
                drop.append(name)
            elif c.action == "synthesize" and default == "drop":
                keep.append(name)  # the engine says why when the column cannot be kept
            if c.bounds is not None:
                bounds.append((name, *c.bounds))
        return {
            "time": self.time,
            "event": self.event,
            "event_value": self.event_value,
            "roles_how": self.roles_how,
            "drop": tuple(drop),
            "keep": tuple(keep),
            "kinds": tuple(kinds),
            "bounds": tuple(bounds),
            "missing_codes": tuple(self.missing_codes),
            "sheet": self.sheet,
            "rules": tuple(self.rules),
            "rules_off": tuple(self.rules_off),
        }

    def schema(self, table: Table) -> Schema:
        """The schema these choices give ``table`` (what a fit on it would use)."""
        with table_path(table) as path:
            config = RunConfig(input=path, **self.to_config_fields())
            return schema_for(config, load_table(config))

    def to_dict(self) -> dict[str, Any]:
        """The JSON file's content: plain values, a format name and a version."""
        data = {"format": METADATA_FORMAT, "version": METADATA_VERSION, **asdict(self)}
        data["columns"] = {name: asdict(c) for name, c in self.columns.items()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Metadata:
        """Metadata from :meth:`to_dict`'s content; a file of another kind or a newer version
        is refused in words."""
        if data.get("format") != METADATA_FORMAT:
            raise InputError(f"not a latent-synth metadata file (format: {data.get('format')!r})")
        if data.get("version") != METADATA_VERSION:
            raise InputError(
                f"metadata version {data.get('version')!r}: this version of latent-synth reads "
                f"version {METADATA_VERSION}; detect the metadata again"
            )
        names = {f.name for f in fields(cls)} - {"columns"}
        tuples = {"missing_codes", "rules", "rules_off", "rules_found"}
        values: dict[str, Any] = {
            k: tuple(v) if k in tuples else v for k, v in data.items() if k in names
        }
        columns = {}
        for name, c in data.get("columns", {}).items():
            bounds = c.get("bounds")
            columns[name] = ColumnChoice(
                kind=c["kind"],
                action=c["action"],
                detected_kind=c.get("detected_kind", c["kind"]),
                detected_action=c.get("detected_action", c["action"]),
                reason=c.get("reason", ""),
                bounds=None if bounds is None else (bounds[0], bounds[1]),
            )
        return cls(columns, **values)

    def to_json(self, path: str | Path) -> Path:
        """Save as a readable JSON file (indented, one key a line); returns the path."""
        from engine.files.write import atomic_write_bytes

        text = json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"
        atomic_write_bytes(Path(path), text.encode("utf-8"))
        return Path(path)

    @classmethod
    def from_json(cls, path: str | Path) -> Metadata:
        """Read a file written by :meth:`to_json` (and perhaps edited by a person)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise InputError(f"{path}: cannot read this metadata file ({err})") from None
        return cls.from_dict(data)
