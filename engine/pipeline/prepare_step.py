"""Read the table and infer its schema (the wizard's first pages, the command line's first step).

References: docs/architecture.md; main paper Algorithm 1 and section 4.3.
"""

import secrets
from dataclasses import replace
from typing import Any

from engine.errors import InputError
from engine.pipeline.config import Prepared, RunConfig, check_analysis
from engine.progress import ProgressFn, no_progress


def load_table(config: RunConfig) -> Any:
    """Read the input file and keep the selected rows (``config.subset``, e.g. one site)."""
    from engine.files.read import read_table

    table = read_table(config.input, sheet=config.sheet, missing_codes=config.missing_codes)
    if config.subset is None:
        return table
    column, value = config.subset
    frame = table.frame
    if column not in frame.columns:
        raise InputError(f"{table.path.name}: no column '{column}' to select rows by")
    frame = frame.loc[frame[column].astype(str) == str(value)].reset_index(drop=True)
    if frame.empty:
        raise InputError(f"{table.path.name}: no rows with {column} = '{value}'")
    return replace(table, frame=frame)


def schema_for(config: RunConfig, table: Any) -> Any:
    """Column kinds and roles for the table, with the user's overrides from ``config``."""
    from engine.columns.schema import infer_schema

    return infer_schema(
        table,
        time=config.time,
        event=config.event,
        event_value=config.event_value,
        drop=config.drop,
        keep=config.keep,
        kinds=dict(config.kinds) or None,
        bounds={name: (lo, hi) for name, lo, hi in config.bounds} or None,
        model_dates=config.dp_epsilon is None,  # the DP encoder has no date bounds
        complete_cases=_complete_cases(config),
    )


def _complete_cases(config: RunConfig) -> bool:
    """Rows with a missing value left out: when asked, and in formal DP mode (its bounded
    encoder has no missingness indicators)."""
    return config.complete_cases or config.dp_epsilon is not None


def _rules(config: RunConfig, table: Any, schema: Any, real: Any) -> Any:
    """The rules every synthetic row keeps: found in the real rows, less those the user removed,
    plus the user's own; a rule that cannot be read stops here with its text."""
    from engine.columns.rules import RuleError
    from engine.columns.rules_found import rule_set

    try:
        return rule_set(
            real,
            list(schema.synthesized()),
            config.rules,
            config.rules_off,
            seed=secrets.randbits(32) if config.seed is None else int(config.seed),
        )
    except RuleError as exc:
        raise InputError(f"{table.path.name}: {exc}") from None


def prepare(config: RunConfig, progress: ProgressFn = no_progress) -> Prepared:
    """Read the file, infer the schema and fit the encoder: missing values modelled as
    indicators and dates as days (:mod:`engine.encoding.layered`), or complete cases when asked."""
    from engine.encoding.layered import LayeredEncoder, prepared_rows
    from engine.pipeline.config import make_rng

    config.validate()
    progress(0.0, "reading the file")
    table = load_table(config)
    progress(0.5, "recognising column kinds")
    schema = schema_for(config, table)
    if config.dp_epsilon is not None:  # refuse before any training when bounds are missing
        from engine.privacy.dp.bounds import resolve_bounds

        resolve_bounds(schema, {name: (lo, hi) for name, lo, hi in config.bounds})
    complete = _complete_cases(config)
    real, rows_dropped = prepared_rows(schema, table.frame, complete_cases=complete)
    rows_dropped["complete_cases"] = complete
    rules = _rules(config, table, schema, real)  # kept on every decode (issue 30)
    encoder = LayeredEncoder(
        schema, real, make_rng(config.seed), model_missing=not complete, rules=rules
    )
    problems = check_analysis(config, schema, real)  # refuse before any training
    if problems:
        raise InputError(f"{table.path.name}: {problems[0]}")
    from engine.columns.keys import check_keys  # the disclosure measures' columns (issue 29)

    check_keys(schema, config.keys, config.disclosure_targets)
    progress(1.0, "data ready")
    return Prepared(config, table, schema, real, rows_dropped, encoder)
