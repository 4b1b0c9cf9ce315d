"""Stage names to stage objects, so `--stages aoa,symbolic` and a notebook build the same cascade.

A stage joins by declaring a `StageSpec` in its own module (littlekit.filter.base: its options,
artifacts, label and keep rule on stored scores) and registering it once:

    SPEC = StageSpec(name="length", position=6, label="Length", description="...",
                     build=lambda options: LengthStage(options.max_words),
                     options=(Option("max_words", 2000, "...", parse=int, threshold=True),))
    register_stage(SPEC)

Everything else reads the declaration: `StageOptions` gets the stage's settings (checked by each
option's own check), `littlekit filter` a flag per option, filter_config.json the stage's
thresholds, the artifacts directory its files, figures its label, and the out-of-fold checks and
`apply_operating_point` its rule on stored scores. The published five register below, in cascade
order. Importing a stage module is cheap: none imports its heavy library (fastText, torch,
transformers) before a stage is built, so naming `aoa,symbolic` never pays for the models.

A stage from another package can also register through the `littlekit.stages` entry point group
(each entry point names a module whose import registers its stages).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from typing import Any

from littlekit.filter import aoa, encoder, fasttext, frequency
from littlekit.filter.base import Option, Stage, StageSpec
from littlekit.filter.symbolic import stage as symbolic

_SPECS: dict[str, StageSpec] = {}
_OPTIONS: dict[str, tuple[Option, str]] = {}  # option name -> (declaration, its stage)
_ENTRY_POINTS_LOADED = False


def register_stage(spec: StageSpec) -> StageSpec:
    """Make `spec.name` buildable by build_stages, its options StageOptions fields and flags."""
    if spec.name in _SPECS:
        raise ValueError(f"stage {spec.name!r} is already registered")
    for option in spec.options:
        if option.name in _OPTIONS:
            raise ValueError(
                f"stage {spec.name!r} declares option {option.name!r}, which stage "
                f"{_OPTIONS[option.name][1]!r} already declares"
            )
    for artifact in spec.artifacts:
        if artifact.option not in {option.name for option in spec.options if option.path}:
            raise ValueError(f"stage {spec.name!r}: artifact {artifact.path} fills no path option of its own")
    _SPECS[spec.name] = spec
    _OPTIONS.update({option.name: (option, spec.name) for option in spec.options})
    return spec


def _load_entry_points() -> None:
    """Import the modules other packages register stages from (once)."""
    global _ENTRY_POINTS_LOADED
    if not _ENTRY_POINTS_LOADED:
        _ENTRY_POINTS_LOADED = True
        for point in entry_points(group="littlekit.stages"):
            importlib.import_module(point.value.split(":")[0])


def stage_specs() -> dict[str, StageSpec]:
    """Registered stages by name, in cascade order (their `position`)."""
    _load_entry_points()
    return dict(sorted(_SPECS.items(), key=lambda item: item[1].position))


def stage_spec(name: str) -> StageSpec:
    """The declaration of a registered stage; KeyError naming the known ones."""
    specs = stage_specs()
    if name not in specs:
        raise KeyError(f"unknown stage {name!r}; known stages: {', '.join(specs)}")
    return specs[name]


def known_stages() -> dict[str, str]:
    """Registered stage names, in cascade order of the published filter, with a line on each."""
    return {name: spec.description for name, spec in stage_specs().items()}


def stage_label(name: str) -> str:
    """A stage's name in figures and tables (the paper's Figure 2 names); the name itself if unknown."""
    spec = stage_specs().get(name)
    return name if spec is None else spec.label


def stage_options() -> dict[str, Option]:
    """Every registered stage's option declarations by name, in cascade order."""
    return {option.name: option for spec in stage_specs().values() for option in spec.options}


def option_stage(option: str) -> str:
    """The stage that declares an option."""
    stage_specs()
    return _OPTIONS[option][1]


class StageOptions:
    """Settings for every registered stage, each declared by its stage (`StageSpec.options`).

    Built like a frozen dataclass: `StageOptions(max_aoa=10.0)`; an option not given takes its
    declared default; each value passes its option's check once, here (ValueError naming it), and
    an unknown name is a TypeError. Fields read as attributes (`options.max_aoa`); `as_dict()` and
    `replace(**changes)` are the dataclass helpers. A pickled StageOptions (a datatrove worker's)
    imports the modules of the stages it was built with before it is rebuilt.
    """

    __slots__ = ("_values",)

    def __init__(self, **given: Any) -> None:
        declared = stage_options()
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise TypeError(f"unknown stage option(s) {', '.join(unknown)}; known: {', '.join(declared)}")
        values = {
            name: option.checked(given.get(name, option.default)) for name, option in declared.items()
        }
        object.__setattr__(self, "_values", values)

    def __getattr__(self, name: str) -> Any:
        try:
            return object.__getattribute__(self, "_values")[name]
        except KeyError:
            raise AttributeError(f"no stage option {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"StageOptions are frozen: use replace({name}=...)")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StageOptions) and self._values == other._values

    def __hash__(self) -> int:
        return hash(tuple((name, repr(value)) for name, value in self._values.items()))

    def __repr__(self) -> str:
        return "StageOptions(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        modules = tuple(sorted({spec.build.__module__ for spec in stage_specs().values()}))
        return _rebuild_options, (modules, self.as_dict())

    def as_dict(self) -> dict[str, Any]:
        """Every option's value by name."""
        return dict(self._values)

    def replace(self, **changes: Any) -> StageOptions:
        """A copy with some options changed (checked again)."""
        return StageOptions(**{**self._values, **changes})


def _rebuild_options(modules: tuple[str, ...], values: dict[str, Any]) -> StageOptions:
    """A pickled StageOptions in another process: its values were checked where it was built."""
    for module in modules:  # a stage registered outside littlekit registers on import
        importlib.import_module(module)
    unknown = sorted(set(values) - set(stage_options()))
    if unknown:
        names = ", ".join(unknown)
        raise TypeError(f"unknown stage option(s) {names}: is the module declaring them importable?")
    options = object.__new__(StageOptions)
    object.__setattr__(options, "_values", dict(values))
    return options


def stage_names(spec: str | Sequence[str]) -> list[str]:
    """Validated stage names from "aoa,symbolic" or a list; ValueError names the known ones."""
    known = stage_specs()
    names = [part.strip() for part in spec.split(",")] if isinstance(spec, str) else [*spec]
    names = [name for name in names if name]
    if not names:
        raise ValueError(f"no stages given; known stages: {', '.join(known)}")
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"unknown stage {', '.join(map(repr, unknown))}; known stages: {', '.join(known)}")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"stage listed twice: {', '.join(repeated)}")
    return names


def build_stages(
    spec: str | Sequence[str], options: StageOptions | Mapping[str, Any] | None = None
) -> list[Stage]:
    """The stages named in `spec`, in that order, built with `options` (a StageOptions or a dict)."""
    names = stage_names(spec)
    if options is None:
        options = StageOptions()
    elif isinstance(options, Mapping):
        options = StageOptions(**options)
    return [stage_spec(name).build(options) for name in names]


def check_gate_order(names: Sequence[str], options: StageOptions | Mapping[str, Any] | None = None) -> None:
    """ValueError (with the fix) when a stage reads the scores of stages that do not run before it
    (the encoder's agreement gate reads stage 1's and stage 2's)."""
    if options is None:
        options = StageOptions()
    elif isinstance(options, Mapping):
        options = StageOptions(**options)
    names = list(names)
    specs = stage_specs()
    for position, name in enumerate(names):
        spec = specs.get(name)
        if spec is None:  # a stage built by hand carries no declaration (nor registered gate)
            continue
        needed = spec.requires(options)
        missing = [stage for stage in needed if stage not in names[:position]]
        if missing:
            raise ValueError(
                f"the {name} stage reads the {' and '.join(needed)} scores, so {' and '.join(missing)} "
                f"must run before {name}: {spec.requires_why}"
            )


# the published filter's five stages, each declared in its own module
for _spec in (aoa.SPEC, fasttext.SPEC, encoder.SPEC, symbolic.SPEC, frequency.SPEC):
    register_stage(_spec)
