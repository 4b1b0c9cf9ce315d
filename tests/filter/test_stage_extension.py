"""A sixth stage added by one module of its own (tests/toy_length_stage.py), registered once, runs
through everything the five published stages do: `littlekit filter` in process and on datatrove,
the operating point (filter_config.json, stored outcomes, out-of-fold scores) and chapter 7's
per-stage retention table. Nothing else in littlekit names it."""

from __future__ import annotations

import gzip
import importlib
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from littlekit.analysis import validate
from littlekit.cli import main
from littlekit.config import data_path
from littlekit.filter import registry
from littlekit.filter.artifacts import export_aoa_table
from littlekit.filter.cascade import Cascade, cascade_outcomes
from littlekit.filter.filter_config import OperatingPoint
from littlekit.fit import generalisation
from littlekit.fit.apply_point import apply_operating_point

SIMPLE = "the cat sat on the mat and the dog ran to the red ball"  # 14 words a K-5 reader knows
DOCS = [
    {"id": "short", "text": "the cat sat on the mat"},  # 6 words
    {"id": "medium", "text": SIMPLE},  # 14
    {"id": "long", "text": f"{SIMPLE} {SIMPLE}"},  # 28
]


@pytest.fixture
def toy_stage():
    """Import the toy module (importing registers its stage); forget the stage afterwards."""
    sys.modules.pop("toy_length_stage", None)
    module = importlib.import_module("toy_length_stage")
    yield module
    registry._SPECS.pop("length", None)
    for option in module.SPEC.options:
        registry._OPTIONS.pop(option.name, None)
    sys.modules.pop("toy_length_stage", None)


def write_docs(folder: Path) -> Path:
    path = folder / "docs.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in DOCS), encoding="utf-8")
    return path


def read_ids(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line)["id"] for line in handle if line.strip()]


def test_the_stage_is_a_flag_a_config_key_and_a_label(toy_stage, capsys):
    assert list(registry.known_stages())[-1] == "length"  # "all" runs it last (position 6)
    assert main(["filter", "--help"]) == 0
    help_text = capsys.readouterr().out
    assert "--max-words N" in help_text and "length stage: most whitespace words kept" in help_text
    assert registry.StageOptions().max_words == toy_stage.MAX_WORDS
    with pytest.raises(ValueError, match="max_words must be a whole number of words"):
        registry.StageOptions(max_words=0)
    assert validate.figure2_label("length") == "Length"
    point = OperatingPoint(max_words=10, chosen_on="by hand")
    assert point.thresholds == {"length": {"max_words": 10}} and point.max_words == 10


def test_littlekit_filter_runs_it_in_process_and_on_datatrove(toy_stage, tmp_path, capsys):
    source = write_docs(tmp_path)
    base = ["filter", "--in", str(source), "--stages", "aoa,length", "--max-words", "20"]
    assert main([*base, "--out", f"{tmp_path}/inproc/"]) == 0
    assert read_ids(tmp_path / "inproc" / "kept.jsonl") == ["short", "medium"]
    rejected = [json.loads(line) for line in (tmp_path / "inproc" / "rejected.jsonl").open()]
    assert [(r["id"], r["stage"], r["reason"]) for r in rejected] == [("long", "length", "length_long")]
    datatrove = ["--executor", "local", "--tasks", "1", "--workers", "1"]
    code = main([*base, "--out", f"{tmp_path}/dt", *datatrove, "--logging-dir", f"{tmp_path}/logs"])
    assert code == 0, capsys.readouterr().err
    kept = [i for path in sorted((tmp_path / "dt").rglob("*.jsonl.gz")) for i in read_ids(path)]
    assert sorted(kept) == ["medium", "short"]


def test_the_operating_point_sets_its_threshold_from_filter_config(toy_stage, tmp_path):
    artifacts = tmp_path / "artifacts"
    export_aoa_table(data_path("aoa/aoa_lemma.csv"), artifacts)
    OperatingPoint(max_words=10, chosen_on="by hand").save(artifacts)
    saved = json.loads((artifacts / "filter_config.json").read_text(encoding="utf-8"))
    assert saved["thresholds"] == {"length": {"max_words": 10}}
    assert "length: max_words = 10" in OperatingPoint.load(artifacts).describe()
    source = write_docs(tmp_path)
    argv = ["filter", "--in", str(source), "--stages", "aoa,length", "--artifacts", str(artifacts)]
    assert main([*argv, "--out", f"{tmp_path}/point/"]) == 0
    assert read_ids(tmp_path / "point" / "kept.jsonl") == ["short"]  # 14 words > the point's 10
    assert main([*argv, "--max-words", "20", "--out", f"{tmp_path}/flag/"]) == 0  # a flag wins
    assert read_ids(tmp_path / "flag" / "kept.jsonl") == ["short", "medium"]


def test_a_point_applied_to_stored_scores_equals_the_cascade_built_with_it(toy_stage):
    passages = pd.DataFrame(DOCS).assign(group=["K5", "K5", "Beyond"])
    released = Cascade(registry.build_stages("aoa,length"))
    outcomes, _ = cascade_outcomes(released, passages)
    assert outcomes["length_words"].tolist() == [6, 14, 28]  # what its declaration stores
    stricter = Cascade(registry.build_stages("aoa,length", {"max_words": 10}))
    direct, _ = cascade_outcomes(stricter, passages)
    swept = apply_operating_point(outcomes, released.names, OperatingPoint(max_words=10))
    assert swept["kept"].tolist() == direct["kept"].tolist() == [True, False, False]
    assert swept["reason"].fillna("").tolist() == direct["reason"].fillna("").tolist()
    # out-of-fold scores: its columns join the frame and the keep rule reads them at a point
    labels = passages.assign(band=["K5", "K5", "K12"])
    scores = labels[["id", "band"]].assign(corpus="toy")
    for name in ("aoa", "length"):
        scores = generalisation.add_stage_scores(scores, labels, name)
    assert "length" in generalisation.default_stages(scores)
    keeps = generalisation.corpus_keeps(scores, {"max_words": 10}, ("aoa", "length"))
    assert keeps.tolist() == direct["kept"].tolist()


def test_chapter_7s_per_stage_table_names_it(toy_stage):
    passages = pd.DataFrame(DOCS).assign(group=["K5", "K5", "Beyond"])
    cascade = Cascade(registry.build_stages("aoa,length", {"max_words": 20}))
    outcomes, _ = cascade_outcomes(cascade, passages)
    table = validate.retention_table(outcomes, cascade.names)
    rows = table[table["stage"] == "length"].set_index("group")
    assert set(rows["label"]) == {"Length"}
    assert rows.loc["K5", "retained"] == 2 and rows.loc["Beyond", "retained"] == 0
