"""`littlekit eval`: evaluations of a causal LM from the command line (one sub-command per benchmark).

    littlekit eval curriculum --model runs/default/training/littlelearner/best --band all \\
        --per-unit 50 --seed 0 --format reversed --exclude mixture.jsonl --out results.jsonl
    littlekit eval curriculum --model Qwen/Qwen3-0.6B --band BEYOND --samples 16 --temperature 1.0

`curriculum` scores greedy (or sampled, with pass@k) accuracy per unit, grade and band on held-out
curriculum problems (`littlekit.evals.curriculum` states the held-out rule), and prints one line
per band, `accuracy <band> = 0.xxx (n=...)`, after the per-unit and per-grade tables. Format and
register default to `littlekit curriculum`'s (scratchpad, compact): pass the ones the model was
trained on. What is typed is checked before a model is loaded (exit 2 with one line); a model
that will not load or generate ends with one line and exit 1. `--out` is never overwritten
without `--force`, and never, even with it, when it is a file the command reads (an --exclude
training file or a file of the --model folder, also through a symlink or a hard link).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from littlekit.argtypes import UsageError, int_range, non_negative, positive_int, top_p

PROG = "littlekit eval"
BAND_CHOICES = ("K5", "BEYOND", "all")


def add_eval_parser(subparsers) -> argparse.ArgumentParser:
    """Register `littlekit eval` and its sub-commands on the CLI's subparsers."""
    p = subparsers.add_parser(
        "eval",
        help="evaluate a causal LM (littlekit eval curriculum --model PATH --band K5|BEYOND|all)",
        description="Evaluations of any causal LM by path or Hub id.",
    )
    p.set_defaults(eval_run=None, eval_parser=p)
    evals = p.add_subparsers(dest="evaluation", metavar="EVALUATION")
    add_curriculum_eval_parser(evals)
    return p


def add_curriculum_eval_parser(evals) -> argparse.ArgumentParser:
    from littlekit.curriculum.command import MAX_PER_UNIT, per_unit_count
    from littlekit.curriculum.formats import FORMATS, REGISTERS
    from littlekit.curriculum.sampling import MODES

    c = evals.add_parser(
        "curriculum",
        help="accuracy per unit, grade and band on held-out curriculum problems",
        description="Greedy (or sampled, pass@k) accuracy on held-out problems of littlekit.curriculum, "
        "prompted and read back in the format the model was trained on.",
    )
    c.add_argument("--model", required=True, help="a save_pretrained directory or a Hub id (offline: cached)")
    c.add_argument("--band", default="all", help="K5, BEYOND or all (default all)")
    c.add_argument(
        "--per-unit",
        type=per_unit_count,
        default=50,
        help=f"held-out problems per unit, 1 to {MAX_PER_UNIT:,} (default 50)",
    )
    c.add_argument("--seed", type=int_range(0, 2**63 - 1), default=0, help="evaluation seed (default 0)")
    c.add_argument(
        "--format", choices=FORMATS, default="scratchpad", help="the trained format (default scratchpad)"
    )
    c.add_argument("--register", choices=REGISTERS, default="compact", help="default compact")
    c.add_argument(
        "--sampling", choices=MODES, default="balanced", help="operand sampling (default balanced)"
    )
    c.add_argument("--samples", type=positive_int, default=1, help="completions per problem (default 1)")
    c.add_argument("--temperature", type=non_negative, help="0 greedy; default 0, or 1.0 with --samples > 1")
    c.add_argument("--top-p", type=top_p, default=1.0, help="nucleus sampling (default 1.0: off)")
    c.add_argument(
        "--max-new-tokens", type=positive_int, help="default 24 (plain, reversed), 320 (scratchpad)"
    )
    c.add_argument("--batch-size", type=positive_int, default=64, help="generation batch (default 64)")
    c.add_argument("--device", help="cpu, cuda, ... (default cuda when present)")
    c.add_argument(
        "--exclude",
        action="append",
        type=Path,
        default=[],
        metavar="FILE.jsonl",
        help="more training file(s): problems whose statement or seed they hold are not evaluated "
        "(a model trained here is checked against its own training shards without this)",
    )
    c.add_argument(
        "--seen",
        action="store_true",
        help="also score the drawn problems its training text holds, apart (what memorisation gives)",
    )
    c.add_argument("--out", type=Path, help="write one JSON record per problem here")
    c.add_argument("--force", action="store_true", help="overwrite --out")
    c.set_defaults(eval_run=run_curriculum_eval)
    return c


def run_eval_command(args: argparse.Namespace) -> int:
    """Run the named evaluation, or print the list of them."""
    if args.eval_run is None:
        args.eval_parser.print_help(sys.stderr)
        return 2
    return args.eval_run(args)


# --- littlekit eval curriculum -------------------------------------------------------------------

CURRICULUM_PROG = "littlekit eval curriculum"


def _usage(message: str) -> UsageError:
    return UsageError(message, CURRICULUM_PROG)


def _band(text: str) -> str:
    for choice in BAND_CHOICES:
        if text.strip().lower() == choice.lower():
            return choice
    raise _usage(f"--band: unknown band {text!r}; choose K5, BEYOND or all")


def _temperature(args: argparse.Namespace) -> float:
    if args.temperature is None:
        return 1.0 if args.samples > 1 else 0.0
    if args.samples > 1 and args.temperature == 0:
        raise _usage("--samples > 1 needs --temperature > 0 (greedy samples are all the same)")
    return args.temperature


def _check_files(args: argparse.Namespace) -> None:
    from littlekit.swap import same_file, unwritable

    for path in args.exclude:
        if not path.is_file():
            raise _usage(f"--exclude: {path} is not a file")
    if args.out is None:
        return
    for path in args.exclude:  # with or without --force: the results would replace a training file
        if same_file(args.out, path):
            raise _usage(f"--out {args.out} is the --exclude file {path} (the same file): the results "
                         f"would overwrite it; give another --out")  # fmt: skip
    model = Path(args.model).expanduser()
    if model.is_dir():
        for path in (p for p in model.rglob("*") if p.is_file()):
            if same_file(args.out, path):
                raise _usage(f"--out {args.out} is the --model file {path} (the same file): the results "
                             f"would overwrite it; give another --out")  # fmt: skip
    if args.out.is_dir():
        raise _usage(f"--out: {args.out} is a folder; give a file name")
    if (args.out.exists() or args.out.is_symlink()) and not args.force:
        raise _usage(f"--out: {args.out} exists; pass --force to overwrite it")
    if problem := unwritable(args.out):
        raise _usage(f"--out {args.out}: {problem}")


def check_model(where: str) -> None:
    """A save_pretrained directory, or a Hub id (offline: one in the local cache); else UsageError."""
    from littlekit.lm.tokenizer import _hub_id, _offline

    path = Path(where).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise _usage(f"--model: {path} holds no config.json; pass a save_pretrained directory "
                         f"(a checkpoint's best/ or last/) or a Hub id")  # fmt: skip
        return
    if path.exists():
        raise _usage(f"--model: {where} is a file; give a save_pretrained directory or a Hub id")
    if not _hub_id(where):
        raise _usage(f"--model: {where} does not exist; check the path")
    if _offline():
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(where, "config.json"), str):
            raise _usage(f"--model: {where} is not a local directory, nor a Hub model in the local cache "
                         f"(offline mode: HF_HUB_OFFLINE is set)")  # fmt: skip


def run_curriculum_eval(args: argparse.Namespace) -> int:
    """Check what was typed, draw the held-out problems, load the model, score, print and write."""
    from littlekit.curriculum.units import select_units
    from littlekit.evals import curriculum as ce

    band = _band(args.band)
    temperature = _temperature(args)
    _check_files(args)
    check_model(args.model)
    units = select_units(band)
    training, where = _training_set(args.model, args.exclude)
    draw = ce.held_out_draw(units, args.per_unit, args.seed, args.register, args.format, args.sampling,
                            training)  # fmt: skip
    if not draw.unseen:
        raise RuntimeError(f"every held-out problem is in {where}: nothing unseen is left to evaluate")
    model, tokenizer = _load(args.model, args.device)
    _check_budget(model, tokenizer, [ce.prompt(record) for record in draw.unseen], args)
    complete = ce.model_completer(model, tokenizer, args.format, args.max_new_tokens, temperature,
                                  args.top_p, args.batch_size, args.seed)  # fmt: skip
    started = time.perf_counter()
    results = ce.evaluate(draw.unseen, complete, args.samples)
    seconds = time.perf_counter() - started
    print_header(args, band, units, temperature, seconds, len(draw.unseen))
    if training is None:
        print(f"held out by seed only: {where}")
    else:
        print_excluded(draw.excluded, draw.unseen, args.per_unit, where)
    print_tables(results, args.samples)
    if args.seen:
        print_seen(ce.evaluate(draw.seen, complete, args.samples) if draw.seen else None, args.samples)
    if args.out is not None:
        write_results(results, args.out, args.model, args.force)
    return 0


def _training_set(model: str, exclude: list[Path]):
    """(TrainingSet or None, words naming where it comes from): the model's own training text
    (`evals.seen`) and the --exclude files."""
    from littlekit.evals import curriculum as ce
    from littlekit.evals.seen import TrainingText

    parts, names = [], []
    text = TrainingText.of_model(model)
    if text is not None:
        parts.append(ce.TrainingSet(frozenset(text.lines)))
        names.append(f"the model's training text ({len(text.documents):,} documents)")
    if exclude:
        parts.append(ce.TrainingSet.read(exclude))
        names.append(", ".join(str(p) for p in exclude))
    if not parts:
        return None, "the model names no training text (not trained here) and no --exclude was given"
    training = parts[0]
    for part in parts[1:]:
        training = training | part
    return training, " and ".join(names)


def print_seen(results, samples: int) -> None:
    """Accuracy on the drawn problems the training text holds, per band: what memorisation gives."""
    from littlekit.evals import curriculum as ce

    print()
    if results is None:
        print("seen: no drawn problem is in the training text")
        return
    for line in ce.band_lines(results, 1) + (ce.band_lines(results, samples) if samples > 1 else []):
        print("seen (in the training text, not in the tables above): " + line)


def _check_budget(model: Any, tokenizer: Any, prompts: list[str], args: argparse.Namespace) -> None:
    """The longest prompt plus --max-new-tokens must fit the model's positions: past them a Qwen3
    generates from positions it never learned (or fails deep in generation)."""
    from littlekit.evals.curriculum import DEFAULT_MAX_NEW_TOKENS

    positions = getattr(model.config, "max_position_embeddings", None)
    if not positions:
        return
    budget = args.max_new_tokens or DEFAULT_MAX_NEW_TOKENS[args.format]
    longest = max(len(ids) for ids in tokenizer(prompts)["input_ids"])
    if longest + budget > positions:
        room = max(positions - longest, 0)
        raise _usage(f"--max-new-tokens {budget} after the longest prompt ({longest} tokens) passes the "
                     f"model's {positions} positions; give at most {room}")  # fmt: skip


def _load(where: str, device: str | None):
    from transformers.utils import logging as hf_logging

    from littlekit.evals.models import load_causal_lm

    hf_logging.disable_progress_bar()  # the weights' loading bar; this command prints its own lines
    try:
        return load_causal_lm(where, device)
    except Exception as exc:
        raise RuntimeError(f"could not load the model {where}: {type(exc).__name__}: {exc}") from None


def print_header(args, band: str, units, temperature: float, seconds: float, problems: int) -> None:
    sampling = "greedy" if temperature == 0 else f"{args.samples} sample(s) at temperature {temperature:g}"
    print(f"model {args.model}: {len(units)} units ({band}), {problems:,} held-out problems "
          f"({args.per_unit} per unit, seed {args.seed}), format {args.format}, register {args.register}, "
          f"{sampling}; {seconds:.1f}s")  # fmt: skip


def print_excluded(excluded: dict[str, int], records: list[dict], per_unit: int, where: str) -> None:
    """How many drawn problems the training text held, and which units they left short."""
    found = {unit: 0 for unit in excluded}
    for record in records:
        found[record["unit"]] += 1
    short = ", ".join(f"{unit} {n}" for unit, n in found.items() if n < per_unit)
    print(
        f"held out: {sum(excluded.values()):,} drawn problem(s) were in {where} and were redrawn"
        + (f"; units short of {per_unit} held-out problems: {short}" if short else "")
    )


def print_tables(results, samples: int) -> None:
    """The per-unit and per-grade tables, then one `accuracy <band> = ...` line per band."""
    from littlekit.evals import curriculum as ce

    tables = ce.accuracy_tables(results, 1)
    extra = ce.accuracy_tables(results, samples) if samples > 1 else {}
    for name, keys in (("unit", ["unit", "grade", "band"]), ("grade", ["grade", "band"])):
        print()
        print(table_text(tables[name], keys, extra.get(name), samples))
    print()
    for line in ce.band_lines(results, 1) + (ce.band_lines(results, samples) if samples > 1 else []):
        print(line)


def table_text(table, keys: list[str], extra=None, samples: int = 1) -> str:
    """An accuracy table as aligned text: its keys, n, accuracy, 95% CI (and pass@k)."""
    frame = table[keys].astype(str)
    frame["n"] = table["problems"].to_numpy()
    frame["accuracy"] = [f"{value:.3f}" for value in table["pass_at_k"]]
    bounds = zip(table["low"], table["high"], strict=True)
    frame["95% CI"] = [f"[{low:.3f}, {high:.3f}]" for low, high in bounds]
    if extra is not None:
        frame[f"pass@{samples}"] = [f"{value:.3f}" for value in extra["pass_at_k"]]
    return frame.to_string(index=False)


def write_results(results, path: Path, model: str, force: bool) -> None:
    from littlekit.curriculum.export import write_jsonl

    rows = json.loads(results.to_json(orient="records"))
    count = write_jsonl(({"model": model, **row} for row in rows), path, force=force)
    print(f"wrote {count:,} per-problem records to {path}")
