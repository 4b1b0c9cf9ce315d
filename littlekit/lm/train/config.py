"""The training settings, declared once: `TrainConfig`, whose fields carry their command-line flags.

Each field's metadata holds a `Flag` (help, argument type, choices, help group). From them come
the `littlekit train` parser (`add_train_parser`), the parsed namespace's config
(`config_from_args`), the arguments `littlekit launch` writes into its script (`setting_argv`)
and launch's own flags for the trainer's settings (`add_setting_flags`), so a new setting is one
new field here and nothing else. `--preset NAME` (littlekit.lm.presets) fills settings before the
other arguments are read (`read_presets_first`), so a flag overrides the preset wherever it stands;
`--dry-run` prints the resolved settings.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any

from littlekit.argtypes import finite, fraction, int_range, non_negative
from littlekit.lm.presets import PRESETS, preset
from littlekit.lm.shards import PAPER_COOLOFF_MIX, mixture_sources
from littlekit.lm.sizes import QWEN3_SIZES

MIXES: dict[str, dict[str, float]] = {"paper-cooloff": PAPER_COOLOFF_MIX}
PARALLEL = ("ddp", "fsdp")
PRECISIONS = ("auto", "bf16", "fp32")
OPTIMIZERS = ("muon", "adamw")
LAST, BEST = "last", "best"
OLD = ".old"  # last.old/: the previous checkpoint while write_checkpoint swaps the new one in
METRICS = "metrics.jsonl"
STATE_PT, STATE_JSON = "trainer_state.pt", "trainer_state.json"
CONFIG_JSON = "train_config.json"
# What a run leaves in its run_dir: `littlekit train` refuses to start a fresh run over them
# without --force, and a fresh run replaces them only once its first checkpoint is written.
RESULTS = (LAST, BEST, METRICS, LAST + OLD, BEST + OLD)
MAX_COUNT = 2**31 - 1  # batch sizes, lengths and steps: beyond this something was mistyped
MAX_SEED = 2**32 - 1
MAX_TIMEOUT_MINUTES = 7 * 24 * 60  # a collective waiting a week is a typo
COUNT = int_range(1, MAX_COUNT)
STEPS = int_range(0, MAX_COUNT)

# The help groups of `littlekit train`, in the order --help shows them.
DATA, MODEL, BATCH = "data", "model", "batch and steps"
OPTIM, RUN = "optimizer and schedule", "evaluation, checkpoints, hardware"
GROUPS = (DATA, MODEL, BATCH, OPTIM, RUN)
CLI = "littlekit.cli"  # the field-metadata key holding a setting's Flag


@dataclass(frozen=True)
class Flag:
    """How one TrainConfig field is spelt and parsed on the command line.

    The flag is --field-name (--no-field-name for a bool that defaults to True, which it turns
    off) unless `name` says otherwise. Without `type`, a field annotated int, float or str is
    parsed as one (a float must be finite)."""

    help: str | None = None
    group: str = RUN
    type: Callable[[str], Any] | None = None
    choices: Sequence[str] | None = None
    metavar: str | None = None
    name: str | None = None
    required: bool = False
    repeat: bool = False  # action="append": from_cli gets the list of parsed values (None if none)
    from_cli: Callable[[Any, argparse.Namespace], Any] | None = None  # parsed value -> field value
    to_cli: Callable[[Any], list[str]] | None = None  # field value -> the flag's values, one per use


def setting(default: Any = MISSING, *, default_factory: Any = MISSING, **flag: Any) -> Any:
    """A TrainConfig field and its Flag: `x: int = setting(3, type=COUNT, help="...")`."""
    return field(default=default, default_factory=default_factory, metadata={CLI: Flag(**flag)})


# --- the fields whose command-line form is not their value ------------------------------------------


def parse_source(text: str) -> tuple[str, float]:
    """'DIR' -> (DIR, 1.0); 'DIR:WEIGHT' -> (DIR, WEIGHT) when what follows the last ':' is a number."""
    head, sep, tail = text.rpartition(":")
    if sep and head:
        try:
            return head, float(tail)
        except ValueError:
            pass
    return text, 1.0


def _data_from_cli(items: list[str], args: argparse.Namespace) -> str | dict[str, float]:
    if getattr(args, "mix", None) is not None:
        if len(items) != 1:
            raise ValueError("--mix takes one --data root")
        return items[0]
    if len(items) == 1 and parse_source(items[0])[1] == 1.0:
        return parse_source(items[0])[0]
    return dict(parse_source(item) for item in items)


def _data_to_cli(data: str | Mapping[str, float] | Iterable[str]) -> list[str]:
    if isinstance(data, (str, os.PathLike)):
        return [str(data)]
    if isinstance(data, Mapping):
        return [f"{directory}:{weight}" for directory, weight in data.items()]
    return [str(source) for source in data]  # already DIR[:WEIGHT] texts, as launch keeps them


def _run_dir_from_cli(value: str | None, args: argparse.Namespace) -> str:
    if value is not None:
        return value
    from littlekit.config import run_dir

    return str(run_dir("default") / "train")


def model_override(text: str) -> tuple[str, Any]:
    """'KEY=VALUE' -> (KEY, VALUE read as JSON, else the text): num_hidden_layers=2, hidden_act=silu."""
    key, sep, raw = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(
            f"expected KEY=VALUE with a Qwen3Config setting as KEY, got {text!r}"
        )
    try:
        return key, json.loads(raw)
    except json.JSONDecodeError:
        return key, raw


def _overrides_from_cli(pairs: list[tuple[str, Any]] | None, args: argparse.Namespace) -> dict[str, Any]:
    return dict(pairs or ())


def _overrides_to_cli(overrides: Mapping[str, Any]) -> list[str]:
    return [f"{key}={json.dumps(value)}" for key, value in overrides.items()]


@dataclass
class TrainConfig:
    """Everything a training run is told; `train(config)` runs it. Defaults suit the nano model.

    Every field is a `littlekit train` flag and a `littlekit launch` one (see the module docstring)."""

    data: str | dict[str, float] = setting(
        group=DATA,
        required=True,
        repeat=True,
        metavar="DIR[:WEIGHT]",
        from_cli=_data_from_cli,
        to_cli=_data_to_cli,
        help="training shard directory, repeatable with weights for a mixture; with --mix, the root",
    )
    tokenizer: str = setting(group=DATA, required=True, help="tokenizer directory (the shards' vocabulary)")
    run_dir: str = setting(
        group=DATA,
        from_cli=_run_dir_from_cli,
        help="checkpoints and metrics.jsonl (default: runs/default/train)",
    )
    val_data: str | None = setting(
        None, group=DATA, help="held-out shard directory for validation bits per byte"
    )
    mix: str | None = setting(
        None, group=DATA, choices=sorted(MIXES), help="a named mixture of sources under --data"
    )
    size: str = setting(
        "nano",
        group=MODEL,
        choices=list(QWEN3_SIZES),
        help="model size (ignored with --resume or --init-from)",
    )
    model_overrides: dict[str, Any] = setting(
        default_factory=dict,
        group=MODEL,
        name="--model-override",
        repeat=True,
        type=model_override,
        metavar="KEY=VALUE",
        from_cli=_overrides_from_cli,
        to_cli=_overrides_to_cli,
        help="a Qwen3Config setting over the size's, repeatable (VALUE as JSON, else text)",
    )
    init_from: str | None = setting(
        None, group=MODEL, help="start from these save_pretrained weights (fresh optimizer)"
    )
    seq_len: int = setting(256, group=BATCH, type=COUNT, help="tokens per sequence")
    global_batch: int = setting(
        32, group=BATCH, type=COUNT, help="sequences per optimizer step (all processes)"
    )
    micro_batch: int = setting(8, group=BATCH, type=COUNT, help="sequences per process per forward/backward")
    max_steps: int = setting(1000, group=BATCH, type=COUNT, help="optimizer steps of the whole run")
    stop_at: int | None = setting(
        None, group=BATCH, type=COUNT, help="end this invocation after this step; --resume later"
    )
    warmup_steps: int | None = setting(None, group=OPTIM, type=STEPS, help="default 2%% of --max-steps")
    cooldown_steps: int | None = setting(None, group=OPTIM, type=STEPS, help="default 20%% of --max-steps")
    min_lr_ratio: float = setting(
        0.0, group=OPTIM, type=fraction, help="the cool-off ends at this share of the lr"
    )
    optimizer: str = setting(
        "muon",
        group=OPTIM,
        choices=OPTIMIZERS,
        help="muon: Muon for the hidden matrices + AdamW; adamw: AdamW for all",
    )
    muon_lr: float = setting(0.02, group=OPTIM, type=non_negative, help="Muon's peak lr (hidden matrices)")
    adamw_lr: float = setting(
        3e-3,
        group=OPTIM,
        type=non_negative,
        help="AdamW's peak lr (embeddings, norms, head; all with --optimizer adamw)",
    )
    weight_decay: float = setting(
        0.0, group=OPTIM, type=non_negative, help="decoupled, on the hidden matrices only"
    )
    grad_clip: float = setting(
        1.0, group=OPTIM, type=non_negative, help="global gradient-norm clip; 0 disables"
    )
    seed: int = setting(
        0, group=BATCH, type=int_range(0, MAX_SEED), help="seeds the initial weights and the data order"
    )
    eval_every: int = setting(100, type=STEPS, help="0: start and end only")
    val_batches: int | None = setting(
        None, type=COUNT, help="validation batches per evaluation (default: all)"
    )
    val_batch_size: int | None = setting(None, type=COUNT, help="default --micro-batch")
    save_every: int = setting(0, type=STEPS, help="last/ every N steps (0: at the end and at --stop-at)")
    resume: str | None = setting(
        None,
        metavar="CHECKPOINT|auto",
        help="continue from a last/ checkpoint; auto: --run-dir's last/ if any",
    )
    force: bool = setting(
        False,
        help="without --resume, start over in a --run-dir that holds a run (its last/, best/ and "
        "metrics.jsonl stay until the new run writes its first checkpoint)",
    )
    device: str = setting("auto", help="auto, cpu, cuda")
    precision: str = setting("auto", choices=PRECISIONS, help="auto: bf16 autocast on cuda, fp32 on cpu")
    compile: bool = setting(False, group=MODEL, help="torch.compile the training forward")
    parallel: str = setting("ddp", choices=PARALLEL, help="with several processes: DDP or FSDP2 fully_shard")
    activation_checkpointing: bool = setting(False, group=MODEL, help="recompute activations in the backward")
    dist_timeout_minutes: float = setting(
        0.0,
        type=non_negative,
        help="how long a collective waits for the other processes, as they do while rank 0 saves "
        "(0: 30, or twice the estimated checkpoint's write at 200 MB/s when longer)",
    )
    log_every: int = setting(1, type=COUNT, help="a metrics.jsonl record every N steps")
    progress: bool = setting(
        True, help="no progress bar (on rank 0: tqdm on a terminal, else progress lines)"
    )

    def sources(self) -> dict[str, float]:
        """{shard directory: weight} for the loader."""
        if self.mix is not None:
            if self.mix not in MIXES:
                raise ValueError(f"unknown mixture {self.mix!r}; known: {', '.join(MIXES)}")
            if not isinstance(self.data, (str, os.PathLike)):
                raise ValueError("with a named mixture, data is the root directory holding its sources")
            return mixture_sources(self.data, MIXES[self.mix])
        if isinstance(self.data, (str, os.PathLike)):
            return {str(self.data): 1.0}
        sources = {str(k): float(v) for k, v in self.data.items()}
        for directory, weight in sources.items():
            if not (math.isfinite(weight) and weight > 0):
                raise ValueError(
                    f"--data {directory}:{weight:g}: a source's weight must be a positive number"
                )
        return sources


@dataclass
class TrainResult:
    """What a `train` call did (the same on every rank)."""

    run_dir: str
    steps: int  # optimizer steps completed in all (including resumed ones)
    tokens: int  # training tokens consumed in all
    losses: list[float]  # global mean loss of each logged step of this call, in order
    final_loss: float | None
    best_val_bpb: float | None
    best_step: int | None
    last_val_bpb: float | None
    last_checkpoint: str
    best_checkpoint: str | None
    metrics_path: str
    world_size: int
    resumed_from_step: int = 0


# --- the command line, generated from the fields ---------------------------------------------------


def flag_of(f: Field) -> Flag:
    return f.metadata.get(CLI, Flag())


def default_of(f: Field) -> Any:
    """The field's default (a fresh one from a factory), or MISSING."""
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


def option(f: Field) -> str:
    """The field's `littlekit train` flag: --seq-len, --no-progress, --model-override."""
    dashed = f.name.replace("_", "-")
    return flag_of(f).name or (f"--no-{dashed}" if default_of(f) is True else f"--{dashed}")


def _value_type(f: Field) -> Callable[[str], Any] | None:
    flag = flag_of(f)
    if flag.type is not None or flag.choices is not None or flag.from_cli is not None:
        return flag.type
    annotation = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    base = annotation.replace(" ", "").removesuffix("|None").removeprefix("None|")
    parsers: dict[str, Callable[[str], Any] | None] = {"int": int, "float": finite, "str": None}
    if base in parsers:
        return parsers[base]
    raise TypeError(f"setting {f.name!r}: say how its flag is parsed (setting(type=..., from_cli=...))")


def argument(f: Field, default: Any = MISSING, negatable: bool = False) -> tuple[str, dict[str, Any]]:
    """(flag, add_argument keywords) for a field; `default` replaces the field's own (launch's
    script defaults). A bool is store_true/store_false as `littlekit train` spells it, or with
    `negatable` both --x and --no-x."""
    flag = flag_of(f)
    default = default_of(f) if default is MISSING else default
    kwargs: dict[str, Any] = {"dest": f.name, "help": flag.help}
    if isinstance(default_of(f), bool):
        if negatable:
            return f"--{f.name.replace('_', '-')}", {
                **kwargs,
                "action": argparse.BooleanOptionalAction,
                "default": default,
            }
        return option(f), {**kwargs, "action": "store_false" if default_of(f) else "store_true"}
    if flag.repeat:
        kwargs["action"] = "append"  # default None: argparse would append to a default list in place
    elif default is not MISSING:
        kwargs["default"] = default
    extra = {"type": _value_type(f), "choices": flag.choices, "metavar": flag.metavar}
    kwargs.update({key: value for key, value in extra.items() if value is not None})
    if flag.required:
        kwargs["required"] = True
    return option(f), kwargs


def value_from_args(f: Field, args: argparse.Namespace) -> Any:
    """The field's value from a namespace that add_train_parser (or add_setting_flags) filled."""
    value = getattr(args, f.name)
    from_cli = flag_of(f).from_cli
    return from_cli(value, args) if from_cli is not None else value


def add_train_parser(
    subparsers: Any, config_class: type[TrainConfig] = TrainConfig
) -> argparse.ArgumentParser:
    """Register `littlekit train` on the CLI's subparsers: one flag per field of `config_class`."""
    p = subparsers.add_parser(
        "train",
        help="train a Qwen3 model on token shards (Muon + AdamW, WSD schedule, DDP/FSDP under torchrun)",
        description="Pretrain a Qwen3 model on packed token shards; checkpoints in save_pretrained format "
        "(best/ by validation bits per byte, last/ with the trainer state for --resume). Run under "
        "torchrun for several processes.",
    )
    p.add_argument(
        "--preset",
        choices=list(PRESETS),
        help="a named recipe (littlekit.lm.presets; book-pair: chapter 9's) setting some of the flags "
        "below; a flag given too overrides it, before or after --preset",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the resolved settings and check them; train nothing (--data, --tokenizer optional)",
    )
    groups = {name: p.add_argument_group(name) for name in GROUPS}
    for f in fields(config_class):
        if f.init:
            group = flag_of(f).group
            if group not in groups:
                groups[group] = p.add_argument_group(group)
            name, kwargs = argument(f)
            groups[group].add_argument(name, **kwargs)
    read_presets_first(p, lambda name: preset_namespace(name, config_class), dry_run_optional=True)
    return p


def preset_namespace(name: str, config_class: type[TrainConfig] = TrainConfig) -> dict[str, Any]:
    """A preset's settings as `littlekit train`'s parsed namespace holds them (a repeated flag's
    value: the list of its parsed uses, so --model-override adds to a preset's)."""
    by_name = {f.name: f for f in fields(config_class) if f.init}
    values: dict[str, Any] = {}
    for key, value in preset(name).items():
        if key not in by_name:
            raise ValueError(f"preset {name!r} sets {key!r}, which is no {config_class.__name__} field")
        flag = flag_of(by_name[key])
        if flag.repeat:
            texts = flag.to_cli(value) if flag.to_cli else [str(value)]
            value = [flag.type(text) if flag.type else text for text in texts]
        values[key] = value
    return values


def scan_preset(args: Sequence[str]) -> tuple[str | None, bool]:
    """(--preset's value, whether --dry-run is given) in arguments, as written in full (the last
    --preset wins, as argparse takes it); nothing after `--` counts."""
    name, dry_run = None, False
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--preset" and i + 1 < len(args):
            name = args[i + 1]
        elif arg.startswith("--preset="):
            name = arg.partition("=")[2]
        dry_run = dry_run or arg == "--dry-run"
    return name, dry_run


class _PresetsFirst:
    """Mixed into a command's parser by `read_presets_first`: the --preset settings go into the
    namespace before argparse fills in defaults, so a given flag replaces them and a missing one
    keeps them; a required flag the preset sets (or, with `dry_run_optional`, any under --dry-run)
    may be left out."""

    _preset_values: Callable[[str], dict[str, Any]]
    _dry_run_optional: bool

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def]
        args = list(sys.argv[1:] if args is None else args)
        name, dry_run = scan_preset(args)
        namespace = argparse.Namespace() if namespace is None else namespace
        values = self._preset_values(name) if name in PRESETS else {}  # another name: argparse refuses it
        for key, value in values.items():
            if not hasattr(namespace, key):
                setattr(namespace, key, value)
        relaxed = [
            a for a in self._actions  # type: ignore[attr-defined]
            if a.required and (a.dest in values or (dry_run and self._dry_run_optional))
        ]  # fmt: skip
        for action in relaxed:
            action.required = False
        try:
            namespace, extras = super().parse_known_args(args, namespace)  # type: ignore[misc]
        finally:
            for action in relaxed:
                action.required = True
        if getattr(namespace, "preset", None) != name:  # an abbreviation the scan did not see
            self.error("write --preset in full: --preset NAME or --preset=NAME")  # type: ignore[attr-defined]
        return namespace, extras


def read_presets_first(
    parser: argparse.ArgumentParser,
    preset_values: Callable[[str], dict[str, Any]],
    dry_run_optional: bool = False,
) -> None:
    """Make `parser` (which has a --preset flag) read --preset NAME first: `preset_values(NAME)` are
    the namespace values the preset sets (by dest), overridden by any flag given."""
    base = type(parser)
    parser.__class__ = type(f"Presets{base.__name__}", (_PresetsFirst, base), {})
    parser._preset_values = preset_values  # type: ignore[attr-defined]
    parser._dry_run_optional = dry_run_optional  # type: ignore[attr-defined]


def config_from_args(args: argparse.Namespace, config_class: type[TrainConfig] = TrainConfig) -> TrainConfig:
    """The TrainConfig `littlekit train`'s parsed arguments describe (ValueError for --mix with
    several --data). A required setting left out (only --dry-run allows it) is None."""
    left_out = {f.name for f in fields(config_class) if flag_of(f).required and getattr(args, f.name) is None}
    return config_class(
        **{
            f.name: None if f.name in left_out else value_from_args(f, args)
            for f in fields(config_class)
            if f.init
        }
    )


def add_setting_flags(
    group: Any, settings: Iterable[Field], defaults: Mapping[str, Any] | None = None
) -> None:
    """Another command's flags for some of the trainer's settings (`littlekit launch`), each parsed
    as `littlekit train` parses it and defaulting to TrainConfig's default unless `defaults` names
    another; a bool takes both --x and --no-x."""
    for f in settings:
        default = (defaults or {}).get(f.name, MISSING)
        name, kwargs = argument(f, default, negatable=True)
        kwargs.pop("required", None)
        if kwargs["help"] and option(f).startswith("--no-"):  # the help says what the train flag does
            kwargs["help"] = f"{option(f)}: {kwargs['help']}"
        if default is not MISSING and default != default_of(f):
            kwargs["help"] = f"{kwargs['help'] or ''} [here {' '.join(field_argv(f, default))}]".strip()
        group.add_argument(name, **kwargs)


def field_argv(f: Field, value: Any) -> list[str]:
    """A field's value as `littlekit train` arguments (a bool: its switch, when it flips the default)."""
    if isinstance(default_of(f), bool):
        return [option(f)] if value != default_of(f) else []
    to_cli = flag_of(f).to_cli
    return [part for text in (to_cli(value) if to_cli else [str(value)]) for part in (option(f), text)]


def setting_argv(
    values: Mapping[str, Any], config_class: type[TrainConfig] = TrainConfig, always: Collection[str] = ()
) -> list[str]:
    """`littlekit train` arguments for settings by field name: those in `always` (unless None),
    and every other one whose value is not None and not TrainConfig's default."""
    argv: list[str] = []
    for f in fields(config_class):
        value = values.get(f.name)
        if value is not None and (f.name in always or value != default_of(f)):
            argv += field_argv(f, value)
    return argv
