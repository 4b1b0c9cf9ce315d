"""The book's recipes are presets: `littlekit train --preset book-pair --dry-run` prints the settings
chapter 9 trains its pair with, read from the notebook's JSON (its parameter cell and the keywords
its training cell passes into TrainConfig), never by running it."""

from __future__ import annotations

import ast
import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from littlekit.argtypes import Parser
from littlekit.cli import main
from littlekit.lm import launch, launch_command
from littlekit.lm.presets import PRESETS, preset
from littlekit.lm.train.config import TrainConfig, default_of

CHAPTER_9 = Path(__file__).resolve().parents[2] / "notebooks" / "09_training.ipynb"
BOOK_PRESET = "book-pair"  # chapter 9's
PATHS = {"data", "tokenizer", "val_data", "run_dir"}  # per run, never in a preset


def code_cells(path: Path) -> list[tuple[list[str], str]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    return [(c.get("metadata", {}).get("tags", []), "".join(c["source"])) for c in code]


def parameters(path: Path) -> dict[str, Any]:
    """The parameter cell's defaults: `name: check = value  # ...` lines."""
    (source,) = [source for tags, source in code_cells(path) if "parameters" in tags]
    return {
        node.target.id: ast.literal_eval(node.value)
        for node in ast.parse(source).body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None
    }


def notebook_settings(path: Path = CHAPTER_9) -> dict[str, Any]:
    """What the training cell passes into TrainConfig, its names read from the parameter cell: the
    `recipe = dict(...)` keywords and the TrainConfig(...) call's own. A keyword that is neither a
    parameter nor a literal must be one of the run's paths."""
    params = parameters(path)
    (source,) = [s for _, s in code_cells(path) if "recipe = dict(" in s and "TrainConfig(" in s]
    tree = ast.parse(source)
    (recipe,) = [
        node.value for node in tree.body
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["recipe"]
    ]  # fmt: skip
    calls = [recipe] + [
        node for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "TrainConfig"
    ]  # fmt: skip
    keywords = [k for call in calls for k in call.keywords if k.arg is not None]  # not **recipe
    settings = {}
    for keyword in keywords:
        if isinstance(keyword.value, ast.Name) and keyword.value.id in params:
            settings[keyword.arg] = params[keyword.value.id]
        elif isinstance(keyword.value, ast.Constant):
            settings[keyword.arg] = keyword.value.value
        else:
            assert keyword.arg in PATHS, f"chapter 9 passes {keyword.arg}={ast.unparse(keyword.value)}"
    return settings


def dry_run(capsys: pytest.CaptureFixture, *argv: str) -> dict[str, Any]:
    """`littlekit train ... --dry-run`'s settings, `name = value` lines read back."""
    assert main(["train", *argv, "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("# ") and lines[-1].startswith("# as flags: littlekit train")
    pairs = [line.split(" = ", 1) for line in lines if not line.startswith("#")]
    return {name: ast.literal_eval(value) for name, value in pairs}


def trainer_defaults() -> dict[str, Any]:
    return {f.name: default_of(f) for f in fields(TrainConfig) if f.init}


def without_paths(settings: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in settings.items() if name not in PATHS}


def test_chapter_9s_cells_are_read():
    settings = notebook_settings()
    recipe = {"size", "seq_len", "global_batch", "micro_batch", "max_steps", "muon_lr", "adamw_lr"}
    assert recipe <= set(settings)
    assert settings["global_batch"] == parameters(CHAPTER_9)["batch_size"]


def test_book_preset_dry_run_prints_chapter_9s_settings_exactly(capsys):
    expected = {**trainer_defaults(), **notebook_settings()}  # what TrainConfig(**recipe) holds
    printed = dry_run(capsys, "--preset", BOOK_PRESET)
    assert set(printed) == set(expected)
    assert without_paths(printed) == without_paths(expected)
    assert (printed["data"], printed["tokenizer"], printed["val_data"]) == (None, None, None)
    # the preset holds the notebook's recipe and nothing more
    assert set(preset(BOOK_PRESET)) <= set(notebook_settings())


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_resolves_to_the_trainers_defaults_and_its_overrides(capsys, name):
    printed = dry_run(capsys, "--preset", name)
    assert without_paths(printed) == without_paths({**trainer_defaults(), **preset(name)})


def test_an_unknown_preset_names_the_known_ones(capsys):
    assert main(["train", "--preset", "chapter-nine", "--dry-run"]) == 2
    error = capsys.readouterr().err
    assert "chapter-nine" in error and all(name in error for name in PRESETS)
    with pytest.raises(ValueError, match="known: " + ", ".join(PRESETS)):
        preset("chapter-nine")


def test_a_later_flag_overrides_the_preset(capsys):
    after = dry_run(capsys, "--preset", BOOK_PRESET, "--muon-lr", "0.1", "--max-steps=7", "--size", "nano")
    assert (after["muon_lr"], after["max_steps"], after["size"]) == (0.1, 7, "nano")
    assert (after["adamw_lr"], after["global_batch"]) == (0.02, 16)  # the rest stays the preset's
    before = dry_run(capsys, "--muon-lr", "0.1", "--max-steps=7", "--size", "nano", "--preset", BOOK_PRESET)
    assert before == after  # wherever it stands
    both = dry_run(capsys, "--preset", BOOK_PRESET, "--model-override", "num_hidden_layers=2")
    assert both["model_overrides"] == {"num_hidden_layers": 2}


def test_a_preset_leaves_the_paths_required_outside_a_dry_run(capsys):
    assert main(["train", "--preset", BOOK_PRESET]) == 2
    assert "required: --data, --tokenizer" in capsys.readouterr().err


def test_an_abbreviated_preset_is_refused(capsys):
    assert main(["train", "--pres", BOOK_PRESET, "--dry-run"]) == 2
    assert "--preset in full" in capsys.readouterr().err


def launch_plan(argv: list[str]) -> launch.Plan:
    parser = Parser(prog="littlekit")
    launch_command.add_launch_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["launch", "--data", "/d", "--tokenizer", "/t", *argv])
    plan = launch.make_plan(launch_command.config_from_args(args))
    assert plan.ok, plan.problems
    return plan


def test_launch_takes_the_same_presets():
    paper = launch_plan(["--preset", "paper-5b"])
    assert launch.train_argv(paper.train_args()) == launch.train_argv(
        launch_plan(["--size", "5B", "--tokens", "80B"]).train_args()
    )
    shape = {f.name: f.default for f in fields(launch.LaunchConfig)}
    assert {k: preset("paper-5b")[k] for k in ("seq_len", "global_batch", "micro_batch")} == {
        k: shape[k] for k in ("seq_len", "global_batch", "micro_batch")
    }
    book = launch_plan(["--preset", BOOK_PRESET, "--gpus-per-node", "1", "--muon-lr", "0.05"])
    args = book.train_args()
    shape = (args.size, args.seq_len, args.global_batch, book.steps, book.eval_every)
    assert shape == ("micro", 256, 16, 560, 100)
    assert (args.settings["adamw_lr"], args.settings["muon_lr"]) == (0.02, 0.05)


def test_presets_set_only_trainer_settings_and_no_paths():
    names = {f.name for f in fields(TrainConfig)}
    for values in PRESETS.values():
        assert set(values) <= names - PATHS
