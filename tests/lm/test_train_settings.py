"""Training settings are declared once, as TrainConfig's fields: `littlekit train` and `littlekit launch`
take every one as a flag, with TrainConfig's default, and a new field needs no other edit."""

from __future__ import annotations

import argparse
from dataclasses import MISSING, fields, make_dataclass, replace
from typing import Any

import pytest

from littlekit.argtypes import Parser, UsageError, fraction
from littlekit.lm import launch, launch_command
from littlekit.lm.train.config import (
    TrainConfig,
    add_train_parser,
    config_from_args,
    default_of,
    field_argv,
    flag_of,
    option,
    setting,
    setting_argv,
)

REQUIRED = ["--data", "/d", "--tokenizer", "/t", "--run-dir", "/r"]
LAUNCH = [
    "launch",
    "--size",
    "nano",
    "--tokens",
    "1M",
    "--seq-len",
    "512",
    "--data",
    "/d",
    "--tokenizer",
    "/t",
]
# Every flag `littlekit train` had before its parser was generated, spelt as it was.
OLD_TRAIN_FLAGS = (
    "--data --mix --val-data --tokenizer --run-dir --size --init-from --activation-checkpointing --compile "
    "--seq-len --global-batch --micro-batch --max-steps --stop-at --seed --optimizer --muon-lr --adamw-lr "
    "--weight-decay --grad-clip --warmup-steps --cooldown-steps --min-lr-ratio --eval-every --val-batches "
    "--val-batch-size --save-every --resume --device --precision --parallel --log-every --no-progress"
).split()


def train_parser(config_class: type = TrainConfig) -> argparse.ArgumentParser:
    parser = Parser(prog="littlekit")
    add_train_parser(parser.add_subparsers(dest="command"), config_class)
    return parser


def launch_parser(config_class: type = TrainConfig) -> argparse.ArgumentParser:
    parser = Parser(prog="littlekit")
    launch_command.add_launch_parser(parser.add_subparsers(dest="command"), config_class)
    return parser


def flags_of(parser: argparse.ArgumentParser) -> set[str]:
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    (command,) = sub.choices.values()
    return {name for action in command._actions for name in action.option_strings}


def parse_train(argv: list[str], config_class: type = TrainConfig) -> TrainConfig:
    return config_from_args(train_parser(config_class).parse_args(["train", *argv]), config_class)


def through_launch(argv: list[str], config_class: type = TrainConfig) -> tuple[TrainConfig, launch.Plan]:
    """`littlekit launch` argv -> its plan -> the script's train arguments -> the trainer's config."""
    config = launch_command.config_from_args(launch_parser(config_class).parse_args(argv), config_class)
    plan = launch.make_plan(config)
    assert plan.ok, plan.problems
    return parse_train(launch.train_argv(plan.train_args(), config_class), config_class), plan


def changed(f: Any) -> Any:
    """A valid value other than the field's default, by its type (data, mix and the overrides by hand)."""
    default = default_of(f)
    special = {"data": {"/a": 0.5, "/b": 2.0}, "mix": None, "model_overrides": {"num_hidden_layers": 1}}
    if f.name in special:
        return special[f.name]
    choices = flag_of(f).choices
    if choices:
        return next(c for c in choices if c != default)
    if isinstance(default, bool):
        return not default
    annotation = str(f.type)
    if "int" in annotation:
        return (default or 0) + 3
    if "float" in annotation:
        return default + 0.25
    if "str" in annotation:
        return f"/x/{f.name}"
    raise AssertionError(f"no test value for TrainConfig.{f.name}: {annotation}")


def test_every_old_train_flag_is_still_there():
    assert set(OLD_TRAIN_FLAGS) <= flags_of(train_parser())


def test_every_field_is_a_train_flag_with_its_default():
    flags = flags_of(train_parser())
    assert {option(f) for f in fields(TrainConfig)} <= flags
    assert parse_train(REQUIRED) == TrainConfig(data="/d", tokenizer="/t", run_dir="/r")


def test_every_field_round_trips_through_train_flags():
    base = TrainConfig(data="/d", tokenizer="/t", run_dir="/r")
    config = replace(base, **{f.name: changed(f) for f in fields(TrainConfig) if f.name != "mix"})
    assert all(
        getattr(config, f.name) != getattr(base, f.name) for f in fields(TrainConfig) if f.name != "mix"
    )
    assert parse_train(setting_argv({f.name: getattr(config, f.name) for f in fields(config)})) == config
    mixed = parse_train([*REQUIRED, "--mix", "paper-cooloff"])
    assert (mixed.mix, mixed.data) == ("paper-cooloff", "/d")


def test_every_field_is_a_launch_flag_with_the_trainers_default():
    passed = {f.name for f in launch.passed_settings()}
    planned = {f.name for f in fields(TrainConfig)} & {f.name for f in fields(launch.LaunchConfig)}
    planned -= set(launch.DERIVED)  # launch's --save-every/--eval-every: given, else the plan's own
    # The plan's own settings (cluster-sized defaults) and the ones it computes are the only others.
    assert planned == {
        "size",
        "seq_len",
        "global_batch",
        "micro_batch",
        "parallel",
        "activation_checkpointing",
        "data",
        "mix",
        "val_data",
        "tokenizer",
        "run_dir",
    }
    assert set(launch.DERIVED) == {"max_steps", "save_every", "eval_every"}
    assert passed | planned | set(launch.DERIVED) == {f.name for f in fields(TrainConfig)}
    flags = flags_of(launch_parser())
    assert {option(f) for f in fields(TrainConfig) if f.name not in launch.DERIVED} <= flags

    config, plan = through_launch(LAUNCH)
    assert (config.max_steps, config.save_every, config.eval_every) == (
        plan.steps,
        plan.save_every,
        plan.save_every,
    )
    defaults = TrainConfig(data="/d", tokenizer="/t", run_dir="/r")
    differ = {
        name: getattr(config, name) for name in passed if getattr(config, name) != getattr(defaults, name)
    }
    # What a batch script needs and `littlekit train` on a terminal does not; stated in launch --help.
    assert differ == {"precision": "bf16", "device": "cuda", "resume": "auto", "progress": False}


def test_every_passed_setting_reaches_the_trainer_from_launch_flags():
    base = TrainConfig(data="/d", tokenizer="/t", run_dir="/r")
    wanted = {f.name: changed(f) for f in launch.passed_settings()}
    argv = [part for f in launch.passed_settings() for part in field_argv(f, wanted[f.name])]
    config, plan = through_launch([*LAUNCH, *argv])
    assert {name: getattr(config, name) for name in wanted} == wanted
    assert {name: getattr(base, name) for name in wanted} != wanted
    assert (
        plan.params["total"]
        < launch.make_plan(launch.LaunchConfig(size="nano", tokens=10**6)).params["total"]
    )


def test_a_new_field_needs_no_other_edit():
    """A subclass stands for TrainConfig with fields added: the parsers and the argv carry them."""
    extended = make_dataclass(
        "Extended",
        [
            ("label_smoothing", float, setting(0.0, type=fraction, help="share of the target's mass spread")),
            ("z_loss", bool, setting(False, help="add the z-loss")),
            ("warmup_tokens", "int | None", None),  # no metadata at all: an int flag from the annotation
        ],
        bases=(TrainConfig,),
    )
    new = ["--label-smoothing", "0.1", "--z-loss", "--warmup-tokens", "7"]
    config = parse_train([*REQUIRED, *new], extended)
    assert (config.label_smoothing, config.z_loss, config.warmup_tokens) == (0.1, True, 7)
    plain = parse_train(REQUIRED, extended)
    assert (plain.label_smoothing, plain.z_loss, plain.warmup_tokens) == (0.0, False, None)
    with pytest.raises(UsageError, match="--label-smoothing"):
        parse_train([*REQUIRED, "--label-smoothing", "2"], extended)

    config, _ = through_launch([*LAUNCH, *new], extended)
    assert (config.label_smoothing, config.z_loss, config.warmup_tokens) == (0.1, True, 7)
    with pytest.raises(UsageError, match="--label-smoothing"):
        launch_parser(extended).parse_args([*LAUNCH, "--label-smoothing", "nan"])
    for f in fields(extended):
        if f.name in {"label_smoothing", "z_loss", "warmup_tokens"}:
            assert f.default is not MISSING and option(f) in flags_of(launch_parser(extended))


def test_a_setting_without_a_known_parser_is_refused_when_the_parser_is_built():
    odd = make_dataclass("Odd", [("table", dict, setting(default_factory=dict))], bases=(TrainConfig,))
    with pytest.raises(TypeError, match="table"):
        train_parser(odd)


def test_model_overrides_are_key_value_pairs():
    config = parse_train(
        [*REQUIRED, "--model-override", "num_hidden_layers=2", "--model-override", "hidden_act=silu"]
    )
    assert config.model_overrides == {"num_hidden_layers": 2, "hidden_act": "silu"}
    with pytest.raises(UsageError, match="--model-override"):
        parse_train([*REQUIRED, "--model-override", "no-equals-sign"])
