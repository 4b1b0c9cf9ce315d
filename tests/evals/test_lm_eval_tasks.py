"""littlekit's benchmarks as lm-evaluation-harness tasks (`littlekit.evals.lm_eval_tasks`): on a real
tiny Qwen3 folder, offline, the harness's own `lm_eval` command gives the numbers `littlekit eval`
gives on the same items: bits per byte per CLEAR easiness bin and per CoMTA group to 1e-6,
curriculum and MathCAMPS accuracy per band and grade exactly, every completion the same. The model
declares a training text holding one CLEAR excerpt and one held-out problem: both tools leave them
out."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from train_data import saved_curriculum_qwen3

from littlekit.argtypes import UsageError
from littlekit.cli import main
from littlekit.curriculum.units import select_units
from littlekit.databuild.corpora import load_clear
from littlekit.evals import clear as cl
from littlekit.evals import comta as co
from littlekit.evals import curriculum as ce
from littlekit.evals import mathcamps as mc
from littlekit.evals.lm_eval_tasks import TASKS_DIR, hooks

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

COMTA_FIXTURE = Path(__file__).parents[1] / "fixtures" / "comta" / "CoMTA_fixture.json"
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
PER_BIN, CURRICULUM = 2, {"band": "all", "per_unit": 1}
BPB_TOLERANCE = 1e-6
HARDEST_BIN = 10  # easiness at most -2.4: the model "trained on" all of it


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """A random tiny Qwen3 (BOS-opened tokenizer, 2,048 positions: every CLEAR excerpt fits one
    window) whose declared training text holds every CLEAR excerpt of the hardest bin and the first
    held-out problem of the first K5 unit."""
    folder = saved_curriculum_qwen3(tmp_path_factory.mktemp("model"), "plain", max_positions=2048)
    clear = load_clear(None)
    hardest = clear[cl.assign_bins(clear["bt_easiness"]) == HARDEST_BIN]["text"]
    problem = ce.held_out_draw(select_units("K5")[:1], 1, fmt="plain").unseen[0]["statement"]
    lines = [*({"text": text} for text in hardest), {"text": f"Some practice.\n{problem}\nAnswer: 0"}]
    (folder / "train.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    (folder / "training_data.json").write_text(json.dumps({"jsonl": ["train.jsonl"]}), encoding="utf-8")
    return folder


def read_outputs(out: Path) -> tuple[dict, dict[str, list[dict]]]:
    """(results by task, logged samples by task) of one harness run's --output_path."""
    (results_file,) = out.rglob("results_*.json")
    samples = {}
    for path in out.rglob("samples_*.jsonl"):
        task = path.name.removeprefix("samples_").rsplit("_", 1)[0]
        samples[task] = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    results = json.loads(results_file.read_text(encoding="utf-8"))["results"]
    metrics = {task: {k.removesuffix(",none"): v for k, v in row.items()} for task, row in results.items()}
    return metrics, samples


@pytest.fixture(scope="module")
def harness(model_dir, tmp_path_factory) -> tuple[dict, dict]:
    """`lm_eval --tasks ... --model hf --model_args pretrained=DIR --include_path TASKS`, offline."""
    out = tmp_path_factory.mktemp("lm_eval")
    metadata = {"per_bin": PER_BIN, **CURRICULUM, "comta": str(COMTA_FIXTURE)}
    command = [sys.executable, "-m", "lm_eval", "--tasks",
               "littlekit_clear,littlekit_comta,littlekit_curriculum_plain", "--model", "hf",
               "--model_args", f"pretrained={model_dir}", "--include_path", str(TASKS_DIR),
               "--device", "cpu", "--batch_size", "16", "--metadata", json.dumps(metadata),
               "--output_path", str(out), "--log_samples"]  # fmt: skip
    env = {**os.environ, **OFFLINE, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=out, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"littlekit_clear: {10 * PER_BIN} excerpts" in done.stderr  # none of the bin it trained on
    return read_outputs(out)


def run(argv: list[str], capsys) -> str:
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def test_clear_bpb_per_bin_and_overall_equal_littlekit_eval(model_dir, harness, tmp_path, capsys):
    out = tmp_path / "clear.csv"
    run(["eval", "clear", "--model", str(model_dir), "--per-bin", str(PER_BIN), "--n-boot", "10",
         "--device", "cpu", "--out", str(out)], capsys)  # fmt: skip
    table = pd.read_csv(out)
    results, samples = harness
    ours = results["littlekit_clear"]
    assert table["docs"].sum() == len(samples["littlekit_clear"]) == 10 * PER_BIN
    assert table.loc[HARDEST_BIN, "docs"] == 0 and f"bpb_bin{HARDEST_BIN}" not in ours  # held out: unseen
    for row in table[table["docs"] > 0].itertuples():
        assert math.isclose(ours[f"bpb_bin{row.bin}"], row.bpb, rel_tol=0, abs_tol=BPB_TOLERANCE), row
    scored = table[table["docs"] > 0]
    overall = (scored["bpb"] * scored["bytes"]).sum() / scored["bytes"].sum()  # Σ nats / (ln 2 Σ bytes)
    assert math.isclose(ours["bpb"], overall, rel_tol=0, abs_tol=BPB_TOLERANCE)


def test_comta_bpb_per_category_and_split_equal_littlekit_eval(model_dir, harness, tmp_path, capsys):
    out = tmp_path / "comta.csv"
    run(["eval", "comta", "--model", str(model_dir), "--comta", str(COMTA_FIXTURE), "--device", "cpu",
         "--out", str(out)], capsys)  # fmt: skip
    table = pd.read_csv(out)
    ours = harness[0]["littlekit_comta"]
    assert len(table) == 6
    for row in table.itertuples():
        value = ours[hooks.metric_name("bpb", row.group)]
        assert math.isclose(value, row.bpb, rel_tol=0, abs_tol=BPB_TOLERANCE), row
    # the context opens with the model's BOS as text, which the harness reads back as the token
    (first, *_) = harness[1]["littlekit_comta"]
    assert first["arguments"]["gen_args_0"]["arg_0"].startswith("<|bos|>Student:")


def test_curriculum_accuracy_per_band_and_each_completion_equal_littlekit_eval(
    model_dir, harness, tmp_path, capsys
):
    out = tmp_path / "curriculum.jsonl"
    printed = run(["eval", "curriculum", "--model", str(model_dir), "--band", CURRICULUM["band"],
                   "--per-unit", str(CURRICULUM["per_unit"]), "--format", "plain", "--device", "cpu",
                   "--out", str(out)], capsys)  # fmt: skip
    assert "held out: 1 drawn problem(s) were in the model's training text" in printed
    ours = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    results, samples = harness
    theirs = {s["doc"]["id"]: s for s in samples["littlekit_curriculum_plain"]}
    assert set(theirs) == set(ours) and len(ours) == len(select_units("all"))
    first = select_units("K5")[0].id
    assert f"{first}-heldout0-000000" not in ours and f"{first}-heldout0-000001" in ours  # redrawn alike
    for key, sample in theirs.items():
        assert sample["filtered_resps"][0] == ours[key]["completions"][0], key
        assert sample["acc"] == ours[key]["c"], key
    metrics = results["littlekit_curriculum_plain"]
    assert metrics["acc"] == sum(r["c"] for r in ours.values()) / len(ours)
    tables = ce.accuracy_tables(pd.DataFrame(ours.values()))  # what `littlekit eval curriculum` prints
    assert list(tables["band"]["band"]) == ["K5", "BEYOND"]
    for by, name in (("band", "acc"), ("grade", "acc_grade")):
        for row in tables[by].itertuples():
            assert metrics[hooks.metric_name(name, getattr(row, by))] == row.pass_at_k, row


def test_mathcamps_greedy_accuracy_per_band_and_grade_through_the_python_api(model_dir):
    """`lm_eval.simple_evaluate` with the task folder, against `littlekit eval mathcamps --samples 1
    --temperature 0`'s own steps (Benchmark.evaluate) on the same model."""
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from littlekit.evals import registry
    from littlekit.evals.benchmark import load_model

    settings = {"per_standard": 1, "seed": 3}
    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False,
                          metadata={"pretrained": str(model_dir), **settings})  # fmt: skip
    output = simple_evaluate(model="hf", model_args={"pretrained": str(model_dir)}, device="cpu",
                             tasks=["littlekit_mathcamps"], task_manager=manager, batch_size=16,
                             log_samples=True)  # fmt: skip
    theirs = {s["doc"]["id"]: s for s in output["samples"]["littlekit_mathcamps"]}
    metrics = {k.removesuffix(",none"): v for k, v in output["results"]["littlekit_mathcamps"].items()}

    benchmark = registry.get("mathcamps")
    args = benchmark.settings(model=str(model_dir), samples=1, temperature=0.0, **settings)
    scored, table = benchmark.evaluate(*load_model(str(model_dir), "cpu"), args)
    assert set(theirs) == set(scored["id"]) and len(theirs) >= 30
    for row in scored.itertuples():
        assert theirs[row.id]["filtered_resps"][0] == row.completions[0], row.id
    for row in table.itertuples():
        name = "acc" if row.by == "band" else "acc_grade"
        assert metrics[hooks.metric_name(name, row.group)] == row.pass_at_k, row


def load_config(path: Path) -> dict:
    loader = type("Loader", (yaml.SafeLoader,), {})
    loader.add_constructor("!function", lambda load, node: load.construct_scalar(node))
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)


def metrics_of(name: str) -> set[str]:
    config = load_config(TASKS_DIR / name)
    if "include" in config:
        config = {**load_config(TASKS_DIR / config["include"]), **config}
    return {entry["metric"] for entry in config["metric_list"]}


def test_every_group_littlekit_reports_is_a_metric_of_its_task():
    from littlekit.curriculum.registry import BANDS, GRADE_ORDER

    bins = {f"bpb_bin{b}" for b in cl.bin_table(cl.PAPER_EDGES)["bin"]}
    assert metrics_of("littlekit_clear.yaml") == {"bpb", *bins}
    comta = [*co.CATEGORY_ORDER, *co.SPLIT_ORDER]
    assert metrics_of("littlekit_comta.yaml") == {"bpb", *(hooks.metric_name("bpb", g) for g in comta)}
    grades = {hooks.metric_name("acc_grade", g) for g in GRADE_ORDER}
    assert metrics_of("littlekit_curriculum_plain.yaml") == {"acc", "acc_k5", "acc_beyond", *grades}
    assert {hooks.metric_name("acc", band) for band in BANDS} == {"acc_k5", "acc_beyond"}
    assert metrics_of("littlekit_mathcamps.yaml") == {"acc", "acc_k_5", "acc_beyond_k_5", *grades}


def test_generation_stops_where_littlekit_s_do():
    for fmt in ("plain", "reversed", "scratchpad"):
        kwargs = load_config(TASKS_DIR / f"littlekit_curriculum_{fmt}.yaml")["generation_kwargs"]
        assert kwargs["max_gen_toks"] == ce.DEFAULT_MAX_NEW_TOKENS[fmt] and kwargs["do_sample"] is False
        assert kwargs["until"] == (["\n\n"] if fmt == "scratchpad" else ["\n"])  # scratchpad: first Answer:
    kwargs = load_config(TASKS_DIR / "littlekit_mathcamps.yaml")["generation_kwargs"]
    assert kwargs["until"] == list(mc.STOP) and kwargs["max_gen_toks"] == 24


def test_settings_are_checked_by_littlekit_eval_s_own_parser(model_dir):
    settings = hooks.benchmark_settings("clear", {"pretrained": str(model_dir), "per_bin": "all",
                                                  "fold_extremes": True, "batch_size": "auto"})  # fmt: skip
    assert settings.per_bin is None and settings.fold_extremes is True and settings.batch_size == 16
    with pytest.raises(UsageError, match="--per-bin: expected a whole number or 'all', got '0'"):
        hooks.benchmark_settings("clear", {"pretrained": str(model_dir), "per_bin": 0})
    with pytest.raises(ValueError, match="pretrained=DIR"):
        hooks.clear_dataset(per_bin=1)
    with pytest.raises(UsageError, match="--comta: give the path of CoMTA_dataset.json"):
        hooks.comta_dataset(pretrained=str(model_dir))


def test_littlekit_imports_and_names_the_task_folder_without_lm_eval():
    probe = ("import sys; sys.modules['lm_eval'] = None\n"
             "import littlekit.evals.lm_eval_tasks.hooks, littlekit.evals.registry\n"
             "from littlekit.cli import main; sys.exit(main(['eval', '--lm-eval-tasks']))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == TASKS_DIR and (TASKS_DIR / "littlekit_clear.yaml").is_file()
