"""littlekit.analysis.throughput: rates measured on real stages (never asserted), the cost arithmetic."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from littlekit.analysis.throughput import (
    CASCADE_ROW,
    H100_HOUR,
    PAPER_ENCODER_FRACTION,
    RATE_COLUMNS,
    VCPU_HOUR,
    BenchArtifacts,
    datatrove_speedup,
    default_retention,
    enlarge_jsonl,
    fineweb_cost_table,
    measure_stage_rates,
)
from littlekit.filter.aoa import AoAStage
from littlekit.filter.frequency import FrequencyStage
from littlekit.filter.symbolic.stage import SymbolicStage
from littlekit.fit.fasttext import train_fasttext
from littlekit.judge.cost import FINEWEB_EDU_DOCS, PAPER_TOTAL_USD

TEXTS = [
    "The cat sat on the mat and looked at the big red ball.",
    "We went to the park with my mom and dad to play in the sun.",
    "Solve for x: x^2 + 3x = 10, then find the derivative of f(x).",
    "Photosynthesis converts light energy into chemical energy in the chloroplast.",
    "My dog likes to run and jump in the green grass after school.",
    "The heteroskedasticity of the residuals invalidates the covariance estimate.",
]


@pytest.fixture(scope="module")
def fasttext_stage(tmp_path_factory):
    rows = [(text, "K5") for text in TEXTS[:2] + TEXTS[4:5]] + [(text, "K12") for text in TEXTS[2:4]]
    labelled = pd.DataFrame(rows * 20, columns=["text", "band"])
    path = tmp_path_factory.mktemp("ft") / "grade.bin"
    return train_fasttext(labelled, path, epoch=5, dim=8, bucket=1000, minn=0, maxn=0, wordNgrams=1)


def test_every_real_stage_and_the_cascade_get_positive_rates(fasttext_stage):
    stages = [AoAStage(), fasttext_stage, SymbolicStage(), FrequencyStage({"photosynthesis": 6.0})]
    rates = measure_stage_rates(TEXTS, stages, repeats=1)
    assert list(rates.columns) == list(RATE_COLUMNS)
    assert list(rates["stage"]) == ["aoa", "fasttext", "symbolic", "frequency", CASCADE_ROW]
    assert (rates["docs/s"] > 0).all() and (rates["tokens/s"] > 0).all()
    assert (rates["docs"] == len(TEXTS)).all() and (rates["unit"] == "core").all()
    assert "score_batch" in rates.set_index("stage").loc["fasttext", "note"]
    # tokens/s over docs/s is the texts' word tokens per document, the same for every row
    per_doc = rates["tokens/s"] / rates["docs/s"]
    assert per_doc.max() == pytest.approx(per_doc.min())
    reached = rates.attrs["reached"]
    assert reached["aoa"] == 1.0 and 0.0 <= reached["frequency"] <= reached["symbolic"] <= 1.0


def test_each_stage_is_rated_on_every_text_not_only_what_an_earlier_stage_kept():
    rates = measure_stage_rates(TEXTS, [SymbolicStage(), AoAStage()], repeats=1, cascade=False)
    assert CASCADE_ROW not in set(rates["stage"])
    notes = rates.set_index("stage")["note"]
    assert notes["symbolic"].startswith(f"kept 5/{len(TEXTS)}")  # only the x^2 text is dropped
    assert notes["aoa"].endswith("best of 1") and f"/{len(TEXTS)};" in notes["aoa"]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        measure_stage_rates(TEXTS, [SymbolicStage()], repeats=0)
    with pytest.raises(ValueError):
        measure_stage_rates([], [SymbolicStage()])
    with pytest.raises(ValueError):
        fineweb_cost_table({"aoa": 1000.0}, gpu_speedup=0)


def test_cost_of_1000_docs_per_core_second_over_fineweb_edu():
    table = fineweb_cost_table({"aoa": 1000.0}).set_index("stage")
    assert table.loc["aoa", "core_hours"] == pytest.approx(1930.5556, rel=1e-6)  # 6.95e9 / 1000 / 3600
    assert table.loc["aoa", "gpu_hours"] == 0.0
    assert table.loc["aoa", "usd"] == pytest.approx(1930.5556 * VCPU_HOUR.usd, rel=1e-6)
    assert table.loc["total", "usd"] == pytest.approx(table.loc["aoa", "usd"])


def test_judge_row_is_the_papers_45_87_million():
    table = fineweb_cost_table({"aoa": 1000.0}, price_per_core_hour=1.0)
    judge = table.iloc[-1]
    assert judge["stage"].startswith("LLM judge")
    assert judge["usd"] == pytest.approx(PAPER_TOTAL_USD) == pytest.approx(45.87e6)
    assert judge["share_of_judge"] == 1.0
    assert table.iloc[0]["share_of_judge"] == pytest.approx(1930.5556 / 45.87e6, rel=1e-6)


def test_encoder_measured_on_a_cpu_becomes_gpu_hours_on_the_papers_266m_documents():
    rates = pd.DataFrame({
        "stage": ["aoa", "encoder", "symbolic", CASCADE_ROW],
        "docs/s": [1000.0, 10.0, 2000.0, 1.0],
        "unit": ["core", "core", "core", "core"],
    })
    table = fineweb_cost_table(rates, gpu_speedup=100, price_per_gpu_hour=2.0).set_index("stage")
    assert CASCADE_ROW not in table.index  # a cross-check, never summed with the stages
    encoder = table.loc["encoder"]
    assert encoder["unit"] == "gpu" and encoder["docs_per_second"] == 1000.0
    assert encoder["docs"] == pytest.approx(266e6)
    assert encoder["gpu_hours"] == pytest.approx(266e6 / 1000 / 3600)
    assert encoder["usd"] == pytest.approx(266e6 / 1000 / 3600 * 2.0)
    assert encoder["core_hours"] == 0.0 and "gpu_speedup 100" in encoder["note"]
    symbolic_hours = 266e6 / 2000 / 3600  # after the encoder: at most what reached it
    assert table.loc["total", "core_hours"] == pytest.approx(1930.5556 + symbolic_hours, rel=1e-6)
    assert table.loc["total", "gpu_hours"] == pytest.approx(encoder["gpu_hours"])


def test_given_retention_replaces_the_default_and_is_noted():
    rates = {"aoa": 1000.0, "fasttext": 500.0}
    table = fineweb_cost_table(rates, retention={"fasttext": 0.5}).set_index("stage")
    assert table.loc["fasttext", "core_hours"] == pytest.approx(FINEWEB_EDU_DOCS * 0.5 / 500 / 3600)
    assert table.loc["fasttext", "note"] == "fraction: given"


def test_assumptions_name_prices_with_dates_and_the_gpu_speedup():
    assumptions = fineweb_cost_table({"aoa": 1000.0}).attrs["assumptions"]
    assert VCPU_HOUR.as_of in assumptions["price_per_core_hour"]
    assert H100_HOUR.as_of in assumptions["price_per_gpu_hour"]
    assert "assumption" in assumptions["gpu_speedup"]


def test_default_retention_sources():
    retention = default_retention(["aoa", "fasttext", "encoder", "frequency"], reached={"fasttext": 0.6})
    assert retention["aoa"][0] == 1.0
    assert retention["fasttext"] == (0.6, "measured: share reaching it in our CPU cascade")
    assert retention["encoder"][0] == retention["frequency"][0] == PAPER_ENCODER_FRACTION
    assert default_retention(["fasttext"])["fasttext"][0] == 1.0  # the first stage present sees all


def test_enlarge_jsonl_repeats_records_with_unique_ids(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(TEXTS[:3])))
    assert enlarge_jsonl(source, tmp_path / "out.jsonl", copies=3) == 9
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len({r["id"] for r in records}) == 9 and [r["text"] for r in records[3:6]] == TEXTS[:3]


def test_bench_artifacts_use_the_books_file_when_present(tmp_path, fasttext_stage):
    root = tmp_path / "artifacts"
    (root / "models").mkdir(parents=True)
    (root / "models" / "fasttext_grade.bin").write_bytes(fasttext_stage.path.read_bytes())
    path, how = BenchArtifacts(tmp_path / "work", root=root).get("fasttext_model")
    assert path == root / "models" / "fasttext_grade.bin" and "make book" in how


def test_bench_artifacts_build_a_word_table_when_the_book_has_none(tmp_path):
    path, how = BenchArtifacts(tmp_path / "work", root=tmp_path / "empty", max_per_band=60).get("word_table")
    assert path.is_file() and "built now" in how
    stage = FrequencyStage(path)
    assert stage.scores_by_word and all(math.isfinite(s) for s in stage.scores_by_word.values())


@pytest.mark.slow
def test_datatrove_one_and_two_workers_keep_the_same_documents(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    result = datatrove_speedup(source, "symbolic", copies=2, tasks=2, workdir=tmp_path / "work")
    assert result.docs == 12 and result.kept[1] == result.kept[2] == 10
    assert all(seconds > 0 for seconds in result.wall_s.values())
    assert result.speedup == pytest.approx(result.wall_s[1] / result.wall_s[2])
    assert not result.notes and all(seconds > 0 for seconds in result.stage_seconds.values())


@pytest.mark.slow
def test_bench_artifacts_build_an_encoder_the_stage_loads(tmp_path):
    from littlekit.filter.encoder import EncoderStage

    artifacts = BenchArtifacts(tmp_path / "work", root=tmp_path / "empty", max_per_band=30, encoder_steps=2)
    path, how = artifacts.get("encoder_model")
    assert "built now" in how
    rates = measure_stage_rates(TEXTS, [EncoderStage(path, device="cpu")], repeats=1)
    assert list(rates["stage"]) == ["encoder"]  # no CPU cascade: the encoder is the GPU stage
    assert rates.loc[0, "docs/s"] > 0 and rates.loc[0, "unit"] == "core"
