"""`littlekit fit`: write the filter's artifacts folder (the released layout) from a data root.

    littlekit fit all --data data --out runs/default/artifacts              # the judge's labels
    littlekit fit all --labels source --out runs/source/artifacts           # grade-labelled sources
    littlekit fit all --labels judge,more.jsonl --out runs/more/artifacts   # plus a judge-format file
    littlekit fit labels --data data --out runs/default/artifacts
    littlekit fit fasttext --out runs/default/artifacts         # needs the labels
    littlekit fit encoder --out runs/default/artifacts          # needs the labels
    littlekit fit operating-point --out runs/default/artifacts  # needs fasttext's out-of-fold scores
    littlekit fit word-table --data data --out runs/default/artifacts   # needs fasttext (and encoder)

The artifacts folder lives in a run folder (`--run`, default: the folder above `--out`), where
the steps also keep what they hand to each other and their reports: the labels, stage 2's
out-of-fold scores, stage 3's points (`littlekit.runs`). Every step is a `littlekit.fit.recipe_*`
function, the same calls the book makes, so with the same seed `fit all` writes the same
`filter_config.json` as the book's run.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from littlekit import config, runs
from littlekit.argtypes import UsageError, fraction, positive_int
from littlekit.filter.artifacts import (
    artifact_path,
    artifact_problems,
    export_word_table,
    write_artifacts_readme,
)
from littlekit.filter.cascade import Cascade
from littlekit.filter.filter_config import config_path, read_operating_point
from littlekit.filter.word_table import DEFAULT_MIN_DOCUMENTS, MIN_BEYOND_SCORE, blocklist, load_word_scores
from littlekit.fit.labels import DEFAULT_LABELS, DEFAULT_MAX_PER_BAND, load_labels
from littlekit.fit.points import DEFAULT_POINT, POINTS, point_rule
from littlekit.fit.recipe_encoder import (
    OPERATING_RULES,
    EncoderRecipe,
    EncoderStart,
    encoder_samples,
    encoder_start,
    encoder_train_config,
    leave_one_corpus_out_cascade,
    save_encoder_points,
    train_encoder,
    tune_encoder_points,
)
from littlekit.fit.recipe_fasttext import (
    FastTextRecipe,
    train_fasttext_stage,
    tune_fasttext_point,
)
from littlekit.fit.recipe_labels import (
    export_default_aoa,
    make_labels,
)
from littlekit.fit.recipe_word_table import (
    pool_corpus,
    pool_documents,
    pool_stages,
    tune_blocked_share,
    word_table_from_outcomes,
)
from littlekit.fit.steps import FASTTEXT_POINT, finished, made_from_any, remove_step
from littlekit.swap import file_beside, hold_output, restore_interrupted_swap, staged_folder

STEPS = ("labels", "aoa", "fasttext", "encoder", "operating-point", "word-table")


@dataclass
class Fit:
    """One `littlekit fit` run: where it reads and writes, and a progress line per step."""

    data_root: Path
    artifacts: Path
    run: Path
    seed: int = 0
    labels_spec: str = DEFAULT_LABELS  # `littlekit.fit.labels.build_labels`' label sets
    sample_per_band: int | None = None  # a quick run: at most this many labels per band
    pool_sample_size: int | None = None  # a quick run: the word table's pools from a sample of the corpus
    max_per_band: int = DEFAULT_MAX_PER_BAND
    threads: int = 1
    fasttext: FastTextRecipe = field(default_factory=FastTextRecipe)
    encoder: EncoderRecipe = field(default_factory=EncoderRecipe)
    min_count: int = 10
    min_documents: int = DEFAULT_MIN_DOCUMENTS
    alpha: float = 1.0
    hold_out_corpora: bool = True  # the every-kind point must also hold with each corpus held out
    notes: dict[str, str] = field(default_factory=dict)
    say: Callable[[str], None] = print

    def step(self, number: int, total: int, what: str) -> float:
        self.say(f"[{number}/{total}] {what} ...")
        return time.perf_counter()

    def done(self, started: float, what: str) -> None:
        self.say(f"      {what} ({time.perf_counter() - started:.0f}s)")

    def labels(self) -> pd.DataFrame:
        return load_labels(runs.require(self.run, "labels"))


def fit_labels(fit: Fit) -> None:
    path = runs.path(fit.run, "labels")
    labels = make_labels(
        path,
        fit.data_root,
        seed=fit.seed,
        max_per_band=fit.max_per_band,
        labels=fit.labels_spec,
        sample_per_band=fit.sample_per_band,
    )
    counts = ", ".join(f"{band} {n:,}" for band, n in labels["band"].value_counts().sort_index().items())
    fit.say(f"      {len(labels):,} labelled documents ({counts}) from {fit.labels_spec} -> {path}")


def fit_aoa(fit: Fit) -> None:
    path, note = export_default_aoa(fit.artifacts, fit.data_root)
    fit.notes["aoa_table"] = note
    fit.say(f"      -> {path}")


def fit_fasttext(fit: Fit) -> None:
    labels = fit.labels()
    model_path = artifact_path(fit.artifacts, "fasttext_model")
    stage, train, _ = train_fasttext_stage(labels, model_path, fit.fasttext)
    fit.say(f"      trained on {len(train):,} labels -> {model_path}")
    tuning, groups = tune_fasttext_point(labels, fit.fasttext, fit.data_root)
    report = runs.folder(fit.run, "fasttext_fit")
    with file_beside(report / "oof_scores.parquet") as partial:
        tuning.oof.to_parquet(partial, index=False)
    with file_beside(report / FASTTEXT_POINT) as partial:
        tuning.point.save(partial)
    config_file = tuning.point.save(fit.artifacts)
    fit.notes["fasttext_model"] = (
        f"trained with train_fasttext on {len(train):,} training labels (seed {fit.fasttext.seed})"
    )
    fit.say(
        f"      out of fold over {groups.nunique():,} source groups, {fit.fasttext.tuning_folds} folds: "
        f"{tuning.point.describe()} -> {config_file}"
    )


def fit_encoder(fit: Fit) -> EncoderStart:
    import torch

    torch.set_num_threads(fit.threads)
    samples = encoder_samples(fit.labels(), fit.encoder)
    report = runs.folder(fit.run, "encoder_fit")
    start = encoder_start(fit.encoder, samples.train_all, report / "init")
    train_config = encoder_train_config(fit.encoder, start)
    model_dir = artifact_path(fit.artifacts, "encoder_model")
    result = train_encoder(start, samples, model_dir, train_config, fit.encoder)
    trained = "taken as given" if result is None else f"trained on {result.n_train:,} labels"
    fit.notes["encoder_model"] = f"{start.origin}; {trained}, max_length {fit.encoder.max_length}"
    fit.say(f"      {start.origin}: {trained} -> {model_dir}")
    return start


def fit_operating_point(fit: Fit, start: EncoderStart | None = None) -> None:
    import torch

    torch.set_num_threads(fit.threads)
    fasttext_point = read_operating_point(fit.artifacts)
    oof_file = runs.path(fit.run, "fasttext_fit") / "oof_scores.parquet"
    if fasttext_point is None or fasttext_point.target is None or not oof_file.is_file():
        raise runs.MissingProduct(
            f"stage 2's out-of-fold scores ({oof_file}) or its point ({fit.artifacts}/filter_config.json) "
            "are missing: run `littlekit fit fasttext` with the same --out first"
        )
    labels = fit.labels()
    if start is None:
        samples = encoder_samples(labels, fit.encoder)
        start = encoder_start(
            fit.encoder, samples.train_all, runs.folder(fit.run, "encoder_fit") / "init"
        )
    train_config = encoder_train_config(fit.encoder, start)
    report = runs.folder(fit.run, "encoder_fit")
    loco = None
    if fit.hold_out_corpora:
        loco = leave_one_corpus_out_cascade(labels, fit.fasttext, fit.encoder, start, train_config)
        with file_beside(report / "loco_scores.parquet") as partial:
            loco.to_parquet(partial, index=False)
        fit.say(f"      held each of {loco['corpus'].nunique()} label corpora out of both classifiers")
    points = tune_encoder_points(
        pd.read_parquet(oof_file), labels, fasttext_point, train_config, fit.encoder, start, loco=loco
    )
    model_dir = artifact_path(fit.artifacts, "encoder_model")
    # the head goes beside the encoder it was fitted for; a fit of the point alone (say on another
    # label set, for comparison) may have no encoder in its artifacts: the head stays in the report
    save_encoder_points(points, report, model_dir=model_dir if model_dir.is_dir() else None)
    chosen = points.chosen(fit.encoder.operating_rule)
    config_file = chosen.save(fit.artifacts)
    fit.say(f"      {fit.encoder.operating_rule} rule: {chosen.describe()} -> {config_file}")


def fit_word_table(fit: Fit) -> None:
    import torch

    torch.set_num_threads(fit.threads)
    fasttext_model = artifact_path(fit.artifacts, "fasttext_model")
    if not fasttext_model.is_file():
        raise runs.MissingProduct(f"{fasttext_model} is missing: run `littlekit fit fasttext` first")
    encoder_dir = artifact_path(fit.artifacts, "encoder_model")
    if artifact_problems(fit.artifacts, ["encoder"]):
        encoder_dir = None
        fit.say(f"      no encoder in {fit.artifacts}: stage 3 is left out of the pools' cascade")
    corpus = pool_corpus(fit.data_root, sample_size=fit.pool_sample_size, seed=fit.seed)
    stages = pool_stages(fasttext_model, encoder_dir)
    documents = pool_documents(corpus.documents)
    outcomes = list(_progress(Cascade(stages).run(documents), len(documents)))
    words = word_table_from_outcomes(
        outcomes, min_count=fit.min_count, alpha=fit.alpha, min_documents=fit.min_documents
    )
    path = export_word_table(words.table, fit.artifacts)
    blocked = blocklist(load_word_scores(path))
    chain = " -> ".join(stage.name for stage in stages)
    fit.notes["word_table"] = (
        f"scored from the K-5 and Beyond-K-5 pools of a cascade run of {chain} over {len(documents):,} "
        f"documents: {len(words.table):,} words, {len(blocked):,} with beyond_score >= {MIN_BEYOND_SCORE:g}"
    )
    fit.say(f"      {len(words.table):,} words ({len(blocked):,} blocklisted) -> {path}")
    choice = tune_blocked_share(
        fit.run, fit.artifacts, words, fit.min_count, fit.alpha, fit.min_documents, data_root=fit.data_root
    )
    report = runs.folder(fit.run, "frequency_fit")
    choice.sweep.to_csv(report / "blocked_share_sweep.csv", index=False)
    fit.notes["word_table"] += "; " + choice.note
    fit.say(f"      {choice.note} -> {config_path(fit.artifacts)}")


def _progress(outcomes, total: int):
    """Yield the outcomes, printing a line every tenth of the way."""
    every = max(1, total // 10)
    for i, outcome in enumerate(outcomes, 1):
        if i % every == 0 or i == total:
            print(f"      {i:,}/{total:,} documents", flush=True)
        yield outcome


def run_fit(fit: Fit, steps: tuple[str, ...], force: bool = False) -> None:
    """Run the named steps in order into a copy of the artifacts folder, swapped in whole when every
    step is done (an error or an interruption leaves the folder as it was); `all` also writes the
    artifacts README. A step whose product is there already is refused unless `force`; refitting
    one takes the steps made from it out of the folder (`littlekit.fit.steps`)."""
    target, say = fit.artifacts, fit.say
    # one fit per artifacts folder: a second one is refused while this one runs (staged_folder
    # holds it too; held here first, so that the second is told of this one, not of what is there)
    with hold_output(target, "littlekit fit", "--out"):
        restore_interrupted_swap(target, held=True)  # a killed fit's staging goes, whatever its pid now
        done = [step for step in steps if finished(step, fit.artifacts, fit.run)]
        if done and not force:
            raise FileExistsError(
                f"{fit.artifacts} (run folder {fit.run}) already holds what `littlekit fit "
                f"{' '.join(done)}` makes; pass --force to fit it again (the folder is swapped only once "
                "the new fit is complete)"
            )
        with staged_folder(target) as staging:
            fit.artifacts = staging
            fit.say = lambda line: say(line.replace(str(staging), str(target)))
            try:
                _remove_replaced(fit, steps)
                _run_steps(fit, steps)
                readme = write_artifacts_readme(fit.artifacts, fit.notes)
            except BaseException as error:  # the staging folder is removed: name the folder itself
                _name_target(error, staging, target)
                raise
            finally:
                fit.artifacts, fit.say = target, say
    fit.say(f"wrote {target / readme.name}")


def _name_target(error: BaseException, staging: Path, target: Path) -> None:
    """Rewrite the staging folder's path in `error`'s message (a MissingProduct naming a file in
    it, say) as the artifacts folder's: the staging folder is gone once the error is seen."""
    old, new = str(staging), str(target)
    error.args = tuple(arg.replace(old, new) if isinstance(arg, str) else arg for arg in error.args)
    for name in ("strerror", "filename", "filename2"):  # an OSError's message and file names
        value = getattr(error, name, None)
        if isinstance(value, str):
            setattr(error, name, value.replace(old, new))


def _remove_replaced(fit: Fit, steps: tuple[str, ...]) -> None:
    """Take out of the staged folder what the steps replace and what was made from it."""
    stale = [s for s in made_from_any(steps) if finished(s, fit.artifacts, fit.run)]
    replaced = [s for s in steps if finished(s, fit.artifacts, fit.run)]
    for step in reversed([s for s in STEPS if s in {*stale, *replaced}]):
        remove_step(step, fit.artifacts, fit.run)
    if stale:
        again = " then ".join(f"`littlekit fit {s} --out {fit.artifacts}`" for s in stale)
        fit.say(
            f"      {', '.join(stale)} were made from what `fit {' '.join(steps)}` replaces, so they are "
            f"taken out of the folder: run {again} to make them again"
        )


def _run_steps(fit: Fit, steps: tuple[str, ...]) -> None:
    start = None
    for number, name in enumerate(steps, 1):
        t0 = fit.step(number, len(steps), name)
        if name == "labels":
            fit_labels(fit)
        elif name == "aoa":
            fit_aoa(fit)
        elif name == "fasttext":
            fit_fasttext(fit)
        elif name == "encoder":
            start = fit_encoder(fit)
        elif name == "operating-point":
            fit_operating_point(fit, start)
        elif name == "word-table":
            fit_word_table(fit)
        fit.done(t0, f"{name} done")


def fit_label_set(
    run: str | os.PathLike,
    labels: str,
    steps: tuple[str, ...],
    data_root: str | os.PathLike | None = None,
    fasttext: FastTextRecipe | None = None,
    encoder: EncoderRecipe | None = None,
    threads: int = 1,
    say: Callable[[str], None] = print,
    sample_per_band: int | None = None,
) -> Path:
    """`littlekit fit`'s `steps` for the label set `labels` in the run folder `run` (its artifacts
    in `run/artifacts`), with these recipes (default: the defaults); returns the artifacts folder.
    The chapters use it to repeat a fit on another label set for comparison. `sample_per_band`:
    at most that many labels per band (`fit labels --sample-per-band`, a quick run); None: all."""
    artifacts = runs.path(run, "artifacts")
    artifacts.mkdir(parents=True, exist_ok=True)
    fit = Fit(
        data_root=config.data_root(data_root),
        artifacts=artifacts,
        run=Path(run),
        seed=(fasttext or FastTextRecipe()).seed,
        labels_spec=labels,
        threads=threads,
        fasttext=fasttext or FastTextRecipe(),
        encoder=encoder or EncoderRecipe(),
        say=say,
        sample_per_band=sample_per_band,
    )
    run_fit(fit, steps, force=True)  # the chapter owns its run folder
    return artifacts


# --- the command line -----------------------------------------------------------------------------


def add_fit_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """`littlekit fit {all,labels,aoa,fasttext,encoder,operating-point,word-table}`."""
    parser = subparsers.add_parser(
        "fit",
        help="write the filter's artifacts folder from a data root (labels, fastText, encoder, word table)",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("step", choices=("all", *STEPS), help="what to fit; all: every step in order")
    parser.add_argument("--data", default=None, help="data root (default: $LITTLEKIT_DATA or data/)")
    parser.add_argument("--out", required=True, help="the artifacts folder to write (released layout)")
    parser.add_argument(
        "--run", default=None, help="run folder for labels and reports (default: --out's parent)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--force",
        action="store_true",
        help="fit a step whose product is already there (the steps made from it are taken out)",
    )
    parser.add_argument(
        "--labels",
        default=DEFAULT_LABELS,
        help=f"comma-separated label sets (default {DEFAULT_LABELS}): judge (the data root's LLM-judge "
        "labels with ARC and MathCAMPS items), rewrites (K-5 rewrites of judged web passages, training "
        "only), source (the grade-labelled sources), or judge-format JSON-lines files whose records "
        "carry their text",
    )
    parser.add_argument(
        "--max-per-band", type=positive_int, default=DEFAULT_MAX_PER_BAND, help="source labels per band"
    )
    parser.add_argument(
        "--sample-per-band",
        type=positive_int,
        default=None,
        help="a quick run: at most this many labels per band, a seeded sample of every label set",
    )
    parser.add_argument(
        "--pool-sample-size",
        type=positive_int,
        default=None,
        help="a quick run: build the word table's pools from a seeded sample of at most this many of "
        "the corpus documents (default: all of them)",
    )
    parser.add_argument(
        "--threads",
        type=positive_int,
        default=1,
        help="torch CPU threads, and fastText's out-of-fold models trained at once (default 1)",
    )
    parser.add_argument(
        "--point",
        choices=tuple(POINTS),
        default=DEFAULT_POINT,
        help="the operating point's rule: paper (the default: at most 2.5%% of Beyond-K-5 labels kept out "
        "of fold, stage 1 at 12) or precision (Beyond-K-5 at most 2%% with 95%% confidence in every kind of "
        "text, at least 90%% judge-K5 among the web labels kept); the three options below override it",
    )
    parser.add_argument("--beyond-keep-target", type=fraction, default=None, help="default: the point's")
    parser.add_argument(
        "--operating-rule", choices=OPERATING_RULES, default=None, help="default: the point's"
    )
    parser.add_argument(
        "--min-web-precision",
        type=_optional_fraction,
        default=argparse.SUPPRESS,
        help="of the web labels kept out of fold, at least this share K-5 ('none': no such condition; "
        "default: the point's)",
    )
    parser.add_argument("--encoder-base", default=EncoderRecipe.encoder_base)
    parser.add_argument(
        "--train-sample-size", type=positive_int, default=EncoderRecipe.train_sample_size
    )
    parser.add_argument(
        "--no-grade-head",
        action="store_true",
        help="stage 3 is the encoder alone (its argmax), without the grade head over its log-odds and "
        "readability features that the default fits out of fold and saves beside the model",
    )
    parser.add_argument(
        "--no-corpus-holdout",
        action="store_true",
        help="choose the every-kind point on source-grouped folds only, without requiring it to hold "
        "with each label corpus held out of both classifiers (faster; keeps more K-5 text)",
    )
    return parser


def point_settings(args: argparse.Namespace) -> tuple[dict, dict]:
    """The recipes' point fields: `--point`'s rule, with any of the three options given instead."""
    rule = point_rule(args.point)
    fasttext, encoder = rule.fasttext_settings(), rule.encoder_settings()
    if args.beyond_keep_target is not None:
        fasttext["beyond_keep_target"] = args.beyond_keep_target
    if args.operating_rule is not None:
        encoder["operating_rule"] = args.operating_rule
    if hasattr(args, "min_web_precision"):  # given, possibly 'none'
        fasttext["min_web_precision"] = encoder["min_web_precision"] = args.min_web_precision
    return fasttext, encoder


def _optional_fraction(text: str) -> float | None:
    return None if text.strip().lower() == "none" else fraction(text)


def run_fit_command(args: argparse.Namespace) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before anything imports the Hub client
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # this command prints its own progress
    hf_logging.set_verbosity_error()  # no load report: the new classifier head is meant to be untrained
    out = Path(args.out).expanduser()
    run = Path(args.run).expanduser() if args.run else out.parent
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; it must be the artifacts folder", "littlekit fit")
    out.mkdir(parents=True, exist_ok=True)
    fasttext_point, encoder_point = point_settings(args)
    fit = Fit(
        data_root=config.data_root(args.data),
        artifacts=out,
        run=run,
        seed=args.seed,
        labels_spec=args.labels,
        sample_per_band=args.sample_per_band,
        pool_sample_size=args.pool_sample_size,
        max_per_band=args.max_per_band,
        threads=args.threads,
        fasttext=FastTextRecipe(seed=args.seed, processes=args.threads, **fasttext_point),
        encoder=EncoderRecipe(
            seed=args.seed,
            encoder_base=args.encoder_base,
            train_sample_size=args.train_sample_size,
            grade_head=not args.no_grade_head,
            **encoder_point,
        ),
        hold_out_corpora=not args.no_corpus_holdout,
    )
    steps = STEPS if args.step == "all" else (args.step,)
    print(
        f"littlekit fit {args.step}: data {fit.data_root}, artifacts {out}, run folder {run}, "
        f"seed {args.seed}"
    )
    try:
        run_fit(fit, steps, force=args.force)
    except FileExistsError as error:
        raise UsageError(str(error), "littlekit fit") from None
    return 0
