"""The Python face for analysts (``engine.api``, ``docs/api.md``): the guide's example runs as a
doctest; a saved and reloaded metadata file gives the same schema; one seed and one w give one
frame; a w above the audited one is refused in the app's words; nothing written holds a latent
code, a seed or model weights."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pandas as pd
import pytest

import engine
from engine.api import Metadata, Synthesizer
from engine.errors import InputError, PrivacyRefused
from engine.pipeline import RunConfig, load_table, schema_for
from engine.pipeline.refusal import refusal_reason

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "api.md"
SEED = 424_242  # distinctive: searched for in every file written


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    cohort = pd.read_csv(engine.demo_input())  # participant_id read as whole numbers
    return cohort[cohort["study"] == "ARIC M"].head(400).reset_index(drop=True)


@pytest.fixture(scope="module")
def fitted(table: pd.DataFrame) -> Synthesizer:
    meta = Metadata.detect(table)
    synth = Synthesizer(meta, seed=SEED, w_grid=(0.0, 0.4, 0.8), repeats=2)
    return synth.fit(table)


def test_the_guide_runs_as_a_doctest() -> None:
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testfile(str(GUIDE), module_relative=False, optionflags=flags)
    assert result.failed == 0
    assert result.attempted >= 30  # the whole example ran, not an empty file


def test_a_reloaded_metadata_gives_the_same_schema(table: pd.DataFrame, tmp_path: Path) -> None:
    meta = Metadata.detect(table)
    src = tmp_path / "t.parquet"
    table.to_parquet(src, index=False)
    # unedited: the schema the command line finds with the recognised survival pair
    config = RunConfig(input=src, time="time_cvd_years", event="cvd")
    assert meta.schema(table) == schema_for(config, load_table(config))
    # edited: a kind forced, a column dropped, an identifier kept, bounds set
    meta.update_column("age", kind="continuous")
    meta.update_column("hdl", action="drop")
    meta.update_column("participant_id", action="synthesize")
    meta.update_column("sbp", bounds=(80.0, None))
    meta.rules += ("hdl <= totchol",)
    fields = meta.to_config_fields()
    assert fields["kinds"] == (("age", "continuous"),) and fields["drop"] == ("hdl",)
    assert fields["keep"] == ("participant_id",) and fields["bounds"] == (("sbp", 80.0, None),)
    schema = meta.schema(table)
    assert schema.by_name("age").kind == "continuous"
    assert schema.by_name("hdl").action == "drop"
    assert schema.by_name("participant_id").action == "synthesize"
    assert schema.by_name("sbp").lower == 80.0

    path = meta.to_json(tmp_path / "meta.json")
    again = Metadata.from_json(path)
    assert again == meta and again.to_config_fields() == fields
    assert again.schema(table) == schema
    assert len(schema.columns) == len(table.columns) == 10
    # the file is plain JSON a person edits: change one kind there, read it back
    data = json.loads(path.read_text(encoding="utf-8"))
    data["columns"]["totchol"]["kind"] = "continuous"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    assert Metadata.from_json(path).schema(table).by_name("totchol").kind == "continuous"


def test_wrong_choices_and_other_versions_are_refused_in_words(
    table: pd.DataFrame, tmp_path: Path
) -> None:
    meta = Metadata.detect(table)
    with pytest.raises(InputError, match="unknown kind 'number'"):
        meta.update_column("age", kind="number")
    with pytest.raises(InputError, match="no column 'weight'"):
        meta.update_column("weight", action="drop")
    with pytest.raises(TypeError, match="unknown setting w_max"):
        Synthesizer(meta, w_max=0.5)
    path = tmp_path / "meta.json"
    path.write_text(json.dumps({"format": "latent-synth metadata", "version": 99}))
    with pytest.raises(InputError, match="metadata version 99"):
        Metadata.from_json(path)
    path.write_text(json.dumps({"format": "sdv"}))
    with pytest.raises(InputError, match="not a latent-synth metadata file"):
        Metadata.from_json(path)


def test_one_seed_and_one_w_give_one_frame(fitted: Synthesizer) -> None:
    audit = fitted.audit()
    assert audit.w is not None and 0.0 < audit.w < 1.0
    w = round(audit.w / 2, 2)
    first, second = fitted.sample(w=w), fitted.sample(w=w)
    pd.testing.assert_frame_equal(first, second)
    assert len(first) == 400
    other = fitted.sample(w=round(audit.w / 4, 2))
    assert not other.equals(first)  # another w: other rows
    # the default release is the fit's, at the audited w, and the same on every call
    pd.testing.assert_frame_equal(fitted.sample(), fitted.result.synthetic)
    assert fitted.result.released is not None and fitted.result.released.w == audit.w
    head = fitted.sample(w=w, rows=25)
    pd.testing.assert_frame_equal(head, first.iloc[:25])
    with pytest.raises(InputError, match="401 synthetic rows asked for"):
        fitted.sample(w=w, rows=401)


def test_a_w_above_the_audited_one_is_refused(fitted: Synthesizer, tmp_path: Path) -> None:
    audit = fitted.audit()
    assert audit.audited_w is not None and audit.audited_w < 0.95
    with pytest.raises(PrivacyRefused) as refused:
        fitted.sample(w=0.95)
    reason, _ = refusal_reason(
        RunConfig(input="t", forced_w=0.95, auc_max=0.55), fitted.result.audit
    )
    assert str(refused.value) == f"{reason}; lower w or add allow_risky=True to override"
    with pytest.raises(PrivacyRefused, match="allow_risky=True"):
        fitted.write(tmp_path / "refused", w=0.95)
    written = sorted(p.name for p in (tmp_path / "refused").iterdir())
    assert written == ["audit.json", "report.pdf", "results.json"]  # the record, no table
    risky = fitted.sample(w=0.95, allow_risky=True)
    assert len(risky) == 400
    fitted.sample(w=audit.audited_w)  # the audited w itself is allowed


def test_nothing_written_holds_latent_codes_seeds_or_weights(
    fitted: Synthesizer, tmp_path: Path
) -> None:
    outputs = fitted.write(tmp_path / "out")
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == ["README.txt", "audit.json", "report.pdf", "results.json", "synthetic.csv"]
    assert sorted(outputs) == ["README.txt", "audit.json", "report.pdf", "synthetic.csv"]
    synthetic = pd.read_csv(tmp_path / "out" / "synthetic.csv")
    # the modelled columns only, in the real units: no latent code, no identifier
    expected = [c.name for c in fitted.prepared.schema.synthesized()]
    assert list(synthetic.columns) == expected
    assert "participant_id" not in synthetic.columns and len(synthetic) == 400
    real = fitted.prepared.real
    for column in ("age", "sbp", "totchol"):  # latent codes would sit near 0 with SD 1
        assert real[column].mean() > 40 and real[column].std() > 5
        assert abs(synthetic[column].mean() - real[column].mean()) < 0.5 * real[column].std()
        assert synthetic[column].std() > 0.5 * real[column].std()
    from pypdf import PdfReader

    # every file is text or the PDF: no pickled, zipped (torch.save) or numpy array inside
    texts = {}
    for path in (tmp_path / "out").iterdir():
        data = path.read_bytes()
        if path.suffix == ".pdf":
            assert data.startswith(b"%PDF")
            pages = PdfReader(path).pages
            texts[path.name] = "".join(page.extract_text() for page in pages)
        else:
            texts[path.name] = data.decode("utf-8")
    assert len(texts["report.pdf"]) > 1_000  # the report's text was read
    for name, text in texts.items():
        assert str(SEED) not in text, name
        assert "state_dict" not in text and "weight_" not in text, name
    record = json.loads(texts["audit.json"])
    assert record["settings"]["seeded"] is True and "seed" not in record["settings"]
    assert record["input"]["name"] == "a pandas DataFrame"
