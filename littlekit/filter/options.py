"""The stages' options resolved in one place: a flag, else filter_config.json, else the default.

    from littlekit.filter.options import resolve_stage_options

    options = resolve_stage_options("all", {"max_aoa": 10.0}, artifacts="runs/default/artifacts")
    stages = build_stages("all", options)

Each option of `StageOptions` (littlekit.filter.registry, the one list of option names) is
taken, in this order, from

1. `given`: what the caller set (a flag of `littlekit filter`, a notebook's override); the
   value `RELEASED` (or None) for a threshold means the released rule, whatever the
   operating point says;
2. the artifacts directory: the file of each stage not given one (littlekit.filter.artifacts'
   layout) and, through `stage_options_from_artifacts`, the operating point of
   `filter_config.json` for the stages whose file comes from there (a threshold belongs to the
   model it was chosen for);
3. the default, StageOptions' own (each stage module's constant).

`littlekit filter` (in process and on datatrove), notebooks and the datatrove blocks all call
`resolve_stage_options`, so the same inputs give the same options everywhere. The values are
checked once, by StageOptions, when the result is built; the datatrove blocks and their workers
take the StageOptions as it is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from littlekit.filter.artifacts import (
    artifact_problems,
    declared_artifacts,
    file_problem,
    how_to_rebuild,
    stage_list,
    stage_options_from_artifacts,
)
from littlekit.filter.base import RELEASED
from littlekit.filter.filter_config import FILTER_CONFIG, read_operating_point
from littlekit.filter.registry import StageOptions, option_stage, stage_options


def option_names() -> tuple[str, ...]:
    """Every registered stage's option names, in cascade order."""
    return tuple(stage_options())


def path_options() -> dict[str, str]:
    """The options naming a file a stage loads -> the stage (from the stages' declarations)."""
    return {name: option_stage(name) for name, option in stage_options().items() if option.path}


class OptionsError(ValueError):
    """Files the stages need that are missing or malformed; the message lists every one of them."""


def flag(option: str) -> str:
    """The command-line flag of a StageOptions field: max_aoa -> --max-aoa."""
    return "--" + option.replace("_", "-")


def resolve_stage_options(
    stages: str | Sequence[str] = (),
    given: StageOptions | Mapping[str, Any] | None = None,
    artifacts: str | os.PathLike | None = None,
    *,
    check_files: bool = False,
) -> StageOptions:
    """StageOptions for `stages`: each option from `given`, else from `artifacts`, else the default.

    `given` maps StageOptions fields to values; an option in it is set, whatever its value
    (`RELEASED` is None, the released rule); a StageOptions sets every option. `artifacts` is an
    artifacts directory (littlekit.filter.artifacts) serving `stages` (only read with it).
    `check_files` (the command line) also checks the files named in `given` before anything
    runs; the datatrove blocks leave that to the worker, whose file system it is.
    OptionsError lists every missing or malformed file at once; ValueError (a bad value) and
    TypeError (an unknown option) are StageOptions'.
    """
    if isinstance(given, StageOptions):
        if artifacts is None:
            return given  # already checked when it was built
        given = given.as_dict()
    values = {option: None if _is_released(value) else value for option, value in (given or {}).items()}
    known = option_names()
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise TypeError(f"unknown stage option(s) {', '.join(unknown)}; known: {', '.join(known)}")
    path_stage = path_options()
    paths = {option: values[option] for option in path_stage if option in values}
    problems = _file_problems(paths) if check_files else []
    from_dir: dict[str, Any] = {}
    if artifacts is not None:
        names = stage_list(stages)
        from_dir = _from_directory(
            Path(artifacts), names, {path_stage[option] for option in paths}, problems
        )
    elif problems:
        raise OptionsError("; ".join(problems))
    values.update({option: None if path is None else str(path) for option, path in paths.items()})
    options = StageOptions(**{**from_dir, **values})  # a given option wins over the directory's
    if check_files:
        _check_required(stage_list(stages), options)
    return options


def _check_required(names: list[str], options: StageOptions) -> None:
    """OptionsError naming, at once, every stage that needs a file no option gives (without
    --artifacts, `--stages all` needs both classifiers' models)."""
    declared = stage_options()
    missing = [
        (stage, option)
        for option, stage in path_options().items()
        if declared[option].required and stage in names and getattr(options, option) is None
    ]
    if missing:
        needs = "; ".join(
            f"stage {stage!r} needs {option} (command line: {flag(option)} PATH)" for stage, option in missing
        )
        raise OptionsError(
            f"--stages {','.join(names)} cannot run: {needs} (or --artifacts DIR, a directory in the "
            "layout of littlekit.filter.artifacts holding them: `littlekit fit all --out DIR` makes one)"
        )


def _is_released(value: Any) -> bool:
    return isinstance(value, str) and value == RELEASED


def _file_problems(paths: Mapping[str, Any]) -> list[str]:
    """What is wrong with each file given in place of the directory's: missing first, then the
    checks the directory's own files get (a model that does not load, a table without its columns)."""
    given = {option: Path(path) for option, path in paths.items() if path is not None}
    declared = stage_options()
    problems = [
        f"{flag(option)} file not found: {path}"
        for option, path in given.items()
        if not declared[option].hub and not path.is_file()
    ]
    for option, path in given.items():
        if path.is_dir() if declared[option].hub else path.is_file():  # an absent Hub model: a Hub id
            problem = file_problem(option, path)
            if problem:
                problems.append(
                    f"{flag(option)} {paths[option]}: {problem}; to rebuild: {how_to_rebuild(option)}"
                )
    return problems


def _from_directory(
    root: Path, names: list[str], given_stages: set[str], problems: list[str]
) -> dict[str, Any]:
    """The directory's files for the stages not given one, and its operating point for those.

    Raises OptionsError with every problem, the ones of the given files (`problems`) included.
    """
    wanted = [name for name in names if name not in given_stages]
    if not root.is_dir():
        problems.append(f"--artifacts directory not found: {root}")
    elif wanted:
        found = artifact_problems(root, wanted)
        problems += [f"{root}/{line}" for line in found]
        fixes = [a for a in declared_artifacts() if any(line.startswith(a.path + " ") for line in found)]
        problems += [f"to rebuild {a.path}: {a.how}" for a in fixes]
    if problems:
        flags = ", ".join(flag(option) for option in path_options())
        raise OptionsError(
            f"--stages {','.join(names)} cannot run: "
            + "; ".join(problems)
            + f" (layout: littlekit.filter.artifacts; {flags} give a file in place of the directory's)"
        )
    return stage_options_from_artifacts(root, wanted) if wanted else {}


def config_values_not_applied(
    stages: Sequence[str], given: Mapping[str, Any], artifacts: str | os.PathLike | None
) -> list[str]:
    """One line per value of the artifacts directory's filter_config.json left out because a file
    given for its stage (--aoa-table, --fasttext-model, ...) replaces the directory's: the
    operating point was chosen with the directory's files, so it is not applied to another one
    (`resolve_stage_options`), and this says so rather than dropping it silently."""
    if artifacts is None:
        return []
    try:
        point = read_operating_point(artifacts)
    except ValueError:
        return []  # resolve_stage_options has refused it already
    if point is None:
        return []
    lines = []
    for option, stage in path_options().items():
        if given.get(option) is None or stage not in stages:
            continue
        for name, value in point.for_stage(stage).items():  # its thresholds, the numbers
            if value is not None and given.get(name) is None:
                lines.append(
                    f"{flag(option)} replaces the {stage} stage's file of --artifacts {artifacts}, so its "
                    f"{FILTER_CONFIG}'s {name} {value:g} (chosen with that file) is not applied; pass "
                    f"{flag(name)} {value:g} to apply it"
                )
    return lines


def given_flags(namespace: Any) -> dict[str, Any]:
    """The stage options set on the command line: the flags whose value is not None (argparse's
    "not given"; the flags have no defaults of their own, StageOptions' apply)."""
    return {
        option: getattr(namespace, option)
        for option in option_names()
        if getattr(namespace, option, None) is not None
    }
