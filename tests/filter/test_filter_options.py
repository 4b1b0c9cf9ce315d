"""The stages' options are resolved in one place (littlekit.filter.options): `littlekit filter`
(in process and with --executor local), a notebook and the datatrove blocks get the same
StageOptions from the same flags, artifacts directory (with its filter_config.json) and defaults."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dill
import pytest
from test_artifacts import build_dir  # a tiny AoA table, word table and fastText model, trained here

from littlekit.cli import build_parser, main
from littlekit.filter.artifacts import stage_list, stage_options_from_artifacts
from littlekit.filter.base import RELEASED, Option
from littlekit.filter.datatrove.blocks import LittleKitFilter
from littlekit.filter.datatrove.pipeline import build_datatrove_pipeline
from littlekit.filter.filter_config import OperatingPoint
from littlekit.filter.options import flag, option_names, resolve_stage_options
from littlekit.filter.registry import StageOptions

FOUR = "aoa,fasttext,symbolic,frequency"
# (stages, uses the artifacts directory, flags, the same settings as a notebook gives them)
CASES = {
    "defaults": ("aoa,symbolic", False, [], {}),
    "filter_config": (FOUR, True, [], {}),
    "flags_over_filter_config": (
        FOUR,
        True,
        [
            "--max-aoa",
            "10",
            "--fasttext-min-k5-prob",
            "released",
            "--min-blocked-share",
            "0.5",
            "--symbolic-families",
            "roots,exponents",
            "--aoa-impute",
            "none",
            "--max-oov",
            "0.2",
            "--min-beyond-score",
            "3",
            "--encoder-batch-size",
            "8",
        ],
        {
            "max_aoa": 10.0,
            "fasttext_min_k5_prob": None,
            "min_blocked_share": 0.5,
            "symbolic_families": "roots,exponents",
            "aoa_impute": "none",
            "max_oov": 0.2,
            "min_beyond_score": 3.0,
            "encoder_batch_size": 8,
        },
    ),  # fmt: skip
    # a model given in place of the directory's: the directory's operating point is not its own
    "path_flag_over_directory": ("aoa,fasttext", True, ["--fasttext-model", "{other_model}"], "other_model"),
}


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> Path:
    root = build_dir(tmp_path_factory.mktemp("artifacts"))
    OperatingPoint(fasttext_min_k5_prob=0.6, max_aoa=11.0, min_blocked_share=0.3, chosen_on="a test").save(
        root
    )
    shutil.copy(root / "models" / "fasttext_grade.bin", root.parent / "other.bin")
    return root


def plain(options: StageOptions | dict) -> dict:
    """As report.json and the datatrove manifest hold them (a tuple is a list in JSON)."""
    return json.loads(json.dumps(options.as_dict() if isinstance(options, StageOptions) else options))


def cli_options(
    tmp_path: Path, capsys, stages: str, root: Path | None, flags: list[str], executor: str
) -> dict:
    source = tmp_path / "docs.jsonl"
    source.write_text('{"id": "a", "text": "the cat sat on the mat"}\n', encoding="utf-8")
    argv = ["filter", "--in", str(source), "--stages", stages, *flags]
    argv += ["--artifacts", str(root)] if root else []
    if executor == "inprocess":
        argv += ["--out", f"{tmp_path}/run/", "--quiet"]
        report = tmp_path / "run" / "report.json"
    else:
        argv += [
            "--out",
            str(tmp_path / "kept"),
            "--executor",
            "local",
            "--logging-dir",
            str(tmp_path / "logs"),
        ]
        report = tmp_path / "logs" / "report.json"
    code = main(argv)
    assert code == 0, capsys.readouterr().err
    return json.loads(report.read_text(encoding="utf-8"))["run"]["options"]


@pytest.mark.parametrize("executor", ["inprocess", "local"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_command_line_a_notebook_and_the_datatrove_blocks_resolve_the_same_options(
    case, executor, artifacts, tmp_path, capsys
):
    stages, uses_dir, flags, given = CASES[case]
    root = artifacts if uses_dir else None
    other = str(artifacts.parent / "other.bin")
    flags = [part.format(other_model=other) for part in flags]
    if given == "other_model":
        given = {"fasttext_model": other}
    from_cli = cli_options(tmp_path, capsys, stages, root, flags, executor)

    from_notebook = resolve_stage_options(stage_list(stages), given, root)
    blocks = build_datatrove_pipeline(
        tmp_path / "docs.jsonl", tmp_path / "dt", stages, options=given, artifacts=root
    )
    from_blocks = [plain(block.options) for block in blocks if isinstance(block, LittleKitFilter)]
    assert from_cli == plain(from_notebook)
    assert from_blocks == [from_cli] * len(stage_list(stages))

    if root is not None and "fasttext_model" not in given:
        # what notebooks wrote before resolve_stage_options: the directory's fields, then overrides
        by_hand = StageOptions(**{**stage_options_from_artifacts(root, stage_list(stages)), **given})
        assert plain(by_hand) == from_cli


def test_each_layer_is_where_the_rule_says(artifacts):
    point = resolve_stage_options(FOUR, {}, artifacts)
    assert (point.fasttext_min_k5_prob, point.max_aoa, point.min_blocked_share) == (0.6, 11.0, 0.3)
    flags = resolve_stage_options(FOUR, {"fasttext_min_k5_prob": RELEASED, "max_aoa": 10.0}, artifacts)
    assert (flags.fasttext_min_k5_prob, flags.max_aoa, flags.min_blocked_share) == (None, 10.0, 0.3)
    assert resolve_stage_options(FOUR) == StageOptions()  # no flag, no directory: the defaults
    other = str(artifacts.parent / "other.bin")
    own_model = resolve_stage_options(FOUR, {"fasttext_model": other}, artifacts)
    assert own_model.fasttext_model == other and own_model.fasttext_min_k5_prob is None
    assert own_model.aoa_table == str(artifacts / "data" / "aoa.parquet")


def test_every_stage_option_has_one_flag_that_defaults_to_not_given():
    parser = build_parser(["filter"])
    (filter_parser,) = (
        action.choices["filter"] for action in parser._actions if getattr(action, "choices", None)
    )
    by_dest = {action.dest: action for action in filter_parser._actions}
    assert option_names() == tuple(StageOptions().as_dict())
    for option in option_names():
        assert by_dest[option].option_strings == [flag(option)], option
        assert by_dest[option].default is None, option  # so filter_config.json can stand in between


def test_the_values_are_checked_once_on_the_datatrove_path(monkeypatch, tmp_path):
    checked = []
    real = Option.checked

    def counting(self, value):
        if self.name == "max_aoa":
            checked.append(value)
        return real(self, value)

    monkeypatch.setattr(Option, "checked", counting)
    source = tmp_path / "docs.jsonl"
    source.write_text('{"id": "a", "text": "the cat sat on the mat"}\n', encoding="utf-8")
    blocks = build_datatrove_pipeline(source, tmp_path / "kept", "aoa,symbolic", options={"max_aoa": 10.0})
    filters = [block for block in blocks if isinstance(block, LittleKitFilter)]
    in_worker = [dill.loads(dill.dumps(block)) for block in filters]  # as a worker receives them
    assert [block.stage.max_aoa for block in in_worker if block.stage_name == "aoa"] == [10.0]
    assert checked == [10.0]  # in the driver, once for every block, and never again in a worker
