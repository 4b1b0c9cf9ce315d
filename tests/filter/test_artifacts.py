"""The artifacts directory: the released layout, options for the registry, clear errors, README,
and a directory built here (real fastText, tiny ModernBERT) that runs `--stages all`."""

from __future__ import annotations

import pandas as pd
import pytest

from littlekit.config import EMBEDDED_DATA
from littlekit.filter.artifacts import (
    artifact_path,
    artifact_problems,
    declared_artifacts,
    export_aoa_table,
    export_word_table,
    stage_list,
    stage_options_from_artifacts,
    write_artifacts_readme,
)
from littlekit.filter.cascade import DROPPED, KEPT, Cascade
from littlekit.filter.lexicon import AoALexicon
from littlekit.filter.registry import build_stages
from littlekit.io import Document

KID = ["the cat sat on the mat", "my dog can run and jump", "we like to play in the sun", "the big red ball"]
TECH = ["mitochondrial oxidative phosphorylation", "quantum chromodynamics lagrangian", "stochastic calculus"]
AOA = {"the": 3.0, "cat": 3.5, "sat": 4.0, "on": 3.0, "mat": 4.5, "dog": 3.2, "quantum": 16.0}
WORDS = pd.DataFrame({"word": ["quantum", "cat", "lagrangian"], "beyond_score": [6.0, -2.0, 5.5]})


def labelled() -> pd.DataFrame:
    rows = [{"text": t, "band": "K5"} for t in KID * 6] + [{"text": t, "band": "K12"} for t in TECH * 6]
    return pd.DataFrame(rows)


def build_dir(root, encoder: bool = False):
    """An artifacts directory with a tiny AoA table, a word table and a fastText model trained here."""
    from littlekit.fit.fasttext import train_fasttext

    export_aoa_table(AOA, root)
    export_word_table(WORDS, root)
    train_fasttext(labelled(), artifact_path(root, "fasttext_model"), epoch=5, dim=10, minCount=1)
    if encoder:
        from littlekit.fit.encoder import build_tiny_modernbert

        build_tiny_modernbert(
            KID + TECH,
            artifact_path(root, "encoder_model"),
            vocab_size=100,
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=128,
        )
    return root


def test_layout_is_the_released_repository_s():
    assert {a.option: a.path for a in declared_artifacts()} == {
        "aoa_table": "data/aoa.parquet",
        "fasttext_model": "models/fasttext_grade.bin",
        "encoder_model": "models/modernbert_grade",
        "word_table": "data/word_log_odds.parquet",
    }


def test_options_for_the_stages_asked_for(tmp_path):
    build_dir(tmp_path)
    options = stage_options_from_artifacts(tmp_path, "aoa,fasttext,symbolic,frequency")
    assert options == {
        "aoa_table": str(tmp_path / "data" / "aoa.parquet"),
        "fasttext_model": str(tmp_path / "models" / "fasttext_grade.bin"),
        "word_table": str(tmp_path / "data" / "word_log_odds.parquet"),
    }
    assert stage_options_from_artifacts(tmp_path, "symbolic") == {}
    assert stage_options_from_artifacts(tmp_path, ["aoa"]) == {"aoa_table": options["aoa_table"]}


def test_four_stages_built_from_the_directory_filter_documents(tmp_path):
    build_dir(tmp_path)
    spec = "aoa,fasttext,symbolic,frequency"
    stages = build_stages(spec, stage_options_from_artifacts(tmp_path, spec))
    docs = [Document("kid", "the cat sat on the mat"), Document("tech", "quantum chromodynamics lagrangian")]
    outcomes = {o.record.id: o for o in Cascade(stages).run(docs)}
    assert outcomes["kid"].status == KEPT
    assert outcomes["tech"].status == DROPPED and outcomes["tech"].stage == "aoa"  # oov before p95
    assert set(outcomes["kid"].scores) == {"aoa", "fasttext", "symbolic", "frequency"}
    assert outcomes["kid"].scores["fasttext"]["band"] == "K5"


def test_filter_config_sets_the_classifier_thresholds_and_stages_apply_them(tmp_path):
    from littlekit.filter.filter_config import OperatingPoint

    build_dir(tmp_path)
    spec = "aoa,fasttext,symbolic,frequency"
    assert "fasttext_min_k5_prob" not in stage_options_from_artifacts(tmp_path, spec)  # released rules
    OperatingPoint(fasttext_min_k5_prob=1.0, encoder_min_k5_prob=0.6, chosen_on="a test").save(tmp_path)
    options = stage_options_from_artifacts(tmp_path, spec)
    assert options["fasttext_min_k5_prob"] == 1.0
    assert "encoder_min_k5_prob" not in options  # the encoder is not among the stages asked for
    assert stage_options_from_artifacts(tmp_path, "aoa,symbolic").keys() == {"aoa_table"}
    stages = build_stages(spec, options)
    assert stages[1].min_k5_prob == 1.0
    kid = Cascade(stages).run([Document("kid", "the cat sat on the mat")])
    (outcome,) = list(kid)  # top band K5, but no fastText probability reaches 1.0 here
    assert outcome.status == DROPPED and outcome.reason == "fasttext_low_k5_prob"
    assert "P(K5) >= 1" in write_artifacts_readme(tmp_path).read_text()


def test_a_malformed_filter_config_is_named(tmp_path):
    build_dir(tmp_path)
    (tmp_path / "filter_config.json").write_text('{"fasttext_min_k5_prob": 7}', encoding="utf-8")
    problems = "\n".join(artifact_problems(tmp_path, "aoa,fasttext"))
    assert "filter_config.json" in problems and "fasttext_min_k5_prob must be a probability" in problems
    assert artifact_problems(tmp_path, "symbolic") == []  # stage 4 reads no threshold from it
    with pytest.raises(FileNotFoundError, match="filter_config.json"):
        stage_options_from_artifacts(tmp_path, "fasttext")


def test_missing_artifacts_are_all_listed_with_how_to_make_them(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        stage_options_from_artifacts(tmp_path, "all")
    message = str(error.value)
    for artifact in declared_artifacts():
        assert f"{artifact.path} ({artifact.stage} stage" in message
    assert "train_fasttext" in message and "export_aoa_table" in message and "expected layout" in message
    assert len(artifact_problems(tmp_path, "aoa,symbolic")) == 1
    with pytest.raises(FileNotFoundError, match="does not exist"):
        stage_options_from_artifacts(tmp_path / "nope")


def test_malformed_artifacts_are_named(tmp_path):
    build_dir(tmp_path)
    artifact_path(tmp_path, "fasttext_model").write_text("not a model", encoding="utf-8")
    pd.DataFrame({"word": ["a"], "age": [3.0]}).to_parquet(artifact_path(tmp_path, "aoa_table"))
    artifact_path(tmp_path, "encoder_model").mkdir(parents=True)
    problems = "\n".join(artifact_problems(tmp_path, "all"))
    assert "fasttext_grade.bin (fasttext stage" in problems and "not a fastText model" in problems
    assert "aoa.parquet (aoa stage" in problems and "lacks column(s) ['aoa']" in problems
    assert "modernbert_grade (encoder stage" in problems and "no config.json" in problems
    assert "word_log_odds" not in problems


def test_exported_kuperman_table_loads_to_the_same_lexicon(tmp_path):
    source = EMBEDDED_DATA / "aoa" / "kuperman_aoa.csv"
    out = export_aoa_table(source, tmp_path)
    assert out == tmp_path / "data" / "aoa.parquet"
    assert list(pd.read_parquet(out).columns) == ["word", "aoa"]
    assert AoALexicon.load(out).table == AoALexicon.load(source).table
    assert export_aoa_table(AoALexicon.load(source), tmp_path / "copy.parquet") == tmp_path / "copy.parquet"
    with pytest.raises(ValueError, match="lacks column"):
        export_aoa_table(pd.DataFrame({"word": ["a"]}), tmp_path)


def test_readme_lists_the_layout_status_and_provenance(tmp_path):
    build_dir(tmp_path)
    readme = write_artifacts_readme(
        tmp_path, {"fasttext_model": "trained on the embedded labels"}
    ).read_text()
    assert "--stages all --artifacts" in readme
    for artifact in declared_artifacts():
        assert f"`{artifact.path}`" in readme
    assert "| `models/modernbert_grade` | encoder |" in readme and "| not found |" in readme
    row = next(line for line in readme.splitlines() if line.startswith("| `data/aoa.parquet`"))
    assert "| ok |" in row and len(row.split("|")[-2].strip()) == 16  # a sha256 prefix
    assert "trained on the embedded labels" in readme
    with pytest.raises(KeyError):
        write_artifacts_readme(tmp_path, {"tokenizer": "x"})


@pytest.mark.slow
def test_all_five_stages_from_a_directory_in_process_and_in_datatrove(tmp_path):
    """`--stages all --artifacts DIR` end to end, with a tiny random-init ModernBERT (its verdicts
    are arbitrary: what is checked is that every stage loads from DIR and runs)."""
    import json

    import torch

    from littlekit.filter.datatrove.pipeline import build_datatrove_pipeline, run_datatrove
    from littlekit.filter.datatrove.report import datatrove_report
    from littlekit.io import read_documents

    torch.set_num_threads(1)
    root = build_dir(tmp_path / "artifacts", encoder=True)
    options = stage_options_from_artifacts(root, "all") | {"device": "cpu"}
    inp = tmp_path / "in" / "docs.jsonl"
    inp.parent.mkdir()
    texts = KID + TECH + ["the cat sat on the mat with the dog"] * 3
    inp.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)), "utf-8")
    report = Cascade(build_stages(stage_list("all"), options)).run(read_documents(inp)).consume()
    report.check()
    assert report.stages == ["aoa", "fasttext", "encoder", "symbolic", "frequency"]
    assert report.stage_in["encoder"] > 0  # documents reached the encoder

    pipeline = build_datatrove_pipeline(inp.parent, tmp_path / "kept", "all", options=options)
    run_datatrove(pipeline, logging_dir=tmp_path / "logs")
    from_datatrove = datatrove_report(tmp_path / "logs")
    assert (from_datatrove.kept, from_datatrove.dropped_by_stage) == (report.kept, report.dropped_by_stage)
