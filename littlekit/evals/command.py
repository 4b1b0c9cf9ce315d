"""`littlekit eval curriculum`: held-out curriculum problems, the benchmark with a command of its own.

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

`BENCHMARK` is its entry in `evals.registry` (the `littlekit eval` command): its load, score and
table are the steps this command runs, and its parser and runner are the ones below.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from littlekit.argtypes import UsageError, int_range, non_negative, positive_int, top_p
from littlekit.evals.benchmark import Benchmark, check_model, check_out, load_model

BAND_CHOICES = ("K5", "BEYOND", "all")


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
    return c


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
    from littlekit.swap import same_file

    for path in args.exclude:
        if not path.is_file():
            raise _usage(f"--exclude: {path} is not a file")
    if args.out is None:
        return
    for path in args.exclude:  # with or without --force: the results would replace a training file
        if same_file(args.out, path):
            raise _usage(f"--out {args.out} is the --exclude file {path} (the same file): the results "
                         f"would overwrite it; give another --out")  # fmt: skip
    check_out(args.out, args.model, args.force, CURRICULUM_PROG)


def run_curriculum_eval(args: argparse.Namespace) -> int:
    """Check what was typed, draw the held-out problems, load the model, score, print and write."""
    from littlekit.evals import curriculum as ce

    band = _band(args.band)
    temperature = _temperature(args)
    _check_files(args)
    check_model(args.model, CURRICULUM_PROG)
    units, draw, training, where = held_out(args)
    model, tokenizer = load_model(args.model, args.device)
    _check_budget(model, tokenizer, [ce.prompt(record) for record in draw.unseen], args)
    complete = _completer(model, tokenizer, args)
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


def held_out(args: argparse.Namespace):
    """(units, `HeldOutDraw`, TrainingSet or None, words naming it): the problems of --band drawn
    from the held-out seeds, those the model's training text or --exclude hold redrawn."""
    from littlekit.curriculum.units import select_units
    from littlekit.evals import curriculum as ce

    units = select_units(_band(args.band))
    training, where = _training_set(args.model, args.exclude)
    draw = ce.held_out_draw(units, args.per_unit, args.seed, args.register, args.format, args.sampling,
                            training)  # fmt: skip
    if not draw.unseen:
        raise RuntimeError(f"every held-out problem is in {where}: nothing unseen is left to evaluate")
    return units, draw, training, where


def _completer(model: Any, tokenizer: Any, args: argparse.Namespace):
    from littlekit.evals import curriculum as ce

    return ce.model_completer(model, tokenizer, args.format, args.max_new_tokens, _temperature(args),
                              args.top_p, args.batch_size, args.seed)  # fmt: skip


def score(model: Any, tokenizer: Any, records: list[dict], args: argparse.Namespace):
    """One row per held-out problem: prompt, completions, read-back predictions, n, c."""
    from littlekit.evals import curriculum as ce

    return ce.evaluate(records, _completer(model, tokenizer, args), args.samples)


def grade_table(results, args: argparse.Namespace):
    """Accuracy per grade with its 95% CI (the command also prints the per-unit table and band lines)."""
    from littlekit.evals import curriculum as ce

    return ce.accuracy_tables(results, 1)["grade"]


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


BENCHMARK = Benchmark(
    name="curriculum",
    measures="accuracy per unit, grade and band on held-out curriculum problems",
    paper="ours: the verified curriculum (not in the paper)",
    load=lambda args: held_out(args)[1].unseen,
    score=score,
    table=grade_table,
    add_parser=add_curriculum_eval_parser,
    run=run_curriculum_eval,
)
