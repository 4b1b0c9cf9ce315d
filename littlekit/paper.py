"""The LittleLearner paper's numbers and claims, in one place, each with where the paper states it.

Prose never types one of these: a chapter glues `paper_<name>` (`Chapter.glue_paper`) and its
markdown reads `{glue:text}`paper_<name>``. `CLAIMS` is the reproduction scorecard's list of rows:
every claim of the paper this project reproduces, tests or cannot run, in the paper's order. A
chapter that tests a claim reports it by key (`Chapter.finding`); a claim no chapter reports is
listed on the scorecard with its `not_run` reason.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PaperNumber:
    """One number as the paper prints it (`shown`), its value, and where the paper gives it."""

    value: float
    shown: str
    where: str


@dataclass(frozen=True)
class Claim:
    """One row of the reproduction scorecard: what the paper claims, and its figure for it."""

    key: str
    where: str
    statement: str
    paper: str
    not_run: str = ""  # why no chapter can test it here (empty: a chapter reports it)


def _n(value: float, shown: str, where: str) -> PaperNumber:
    return PaperNumber(float(value), shown, where)


NUMBERS: dict[str, PaperNumber] = {
    # the released filter (Section 3.1, Appendix A; the released filter_k5.py)
    "max_aoa": _n(12.0, "12", "released filter, stage 1 (P95_MAX_AOA)"),
    "oov_limit": _n(0.05, "5%", "released filter, stage 1 (OOV_THRESHOLD)"),
    "beyond_score": _n(4.0, "4.0", "released filter, stage 5 (MIN_BEYOND_SCORE)"),
    "symbolic_patterns": _n(28, "28", "released filter, stage 4"),
    "encoder_docs": _n(266e6, "~266M", "Section 3.1: documents the ModernBERT stage scores"),
    "encoder_cost_ratio": _n(50, "50x", "Section 3.1: ModernBERT's cost over fastText's"),
    "encoder_max_tokens": _n(2048, "2,048", "released filter, stage 3 truncation"),
    # Appendix A.1: Age of Acquisition and frequency
    "aoa_eta2": _n(0.413, "0.413", "Appendix A.1, Figure 10: eta squared of p95 AoA"),
    "dale_chall_eta2": _n(0.230, "0.230", "Appendix A.1, Figure 10: eta squared of Dale-Chall"),
    "fk_eta2": _n(0.164, "0.164", "Appendix A.1, Figure 10: eta squared of Flesch-Kincaid"),
    "aoa_zipf_r": _n(-0.453, "-0.453", "Appendix A.1: AoA against Zipf frequency"),
    "aoa_only_oov": _n(0.10, "10%", "Appendix A.1: FineWeb-Edu words AoA alone leaves uncovered"),
    "subtlex_oov": _n(0.025, "2.5%", "Appendix A.1: OOV with SUBTLEX-US frequencies"),
    "wikipedia_oov": _n(0.0023, "0.23%", "Appendix A.1: OOV with Wikipedia frequencies"),
    # Appendix A.2: the judge
    "judge_cost_openevolve": _n(0.0014, "$0.0014", "Appendix A.2: OpenEvolve ensemble, per sample"),
    "judge_cost_gepa": _n(0.0017, "$0.0017", "Appendix A.2: the GEPA-optimised prompt, per sample"),
    "judge_cost_seed": _n(0.0035, "$0.0035", "Appendix A.2: the seed prompts, per sample"),
    "judge_cost_sample": _n(0.0066, "$0.0066", "Appendix A.2: ensemble cost per sample"),
    "judge_cost_total": _n(45.87e6, "USD 45.87M", "Appendix A.2: the ensemble over all FineWeb-Edu"),
    "fineweb_edu_docs": _n(6.95e9, "6.95B", "Appendix A.2: FineWeb-Edu documents"),
    "judge_max_tokens": _n(1024, "1,024", "Appendix A.2: the judge's output cap"),
    # Figure 2 and Appendix A.5-A.6: validation
    "cct_k5_kept": _n(0.35, "~35%", "Figure 2 (left): CommonCoreText K-5 retained"),
    "cct_beyond_kept": _n(0.0, "0%", "Figure 2 (left): CommonCoreText Beyond-K-5 retained"),
    "cct_passages": _n(460, "460", "Appendix A.5: CommonCoreText passages"),
    "weebit_k5_kept": _n(0.42, "~42%", "Figure 2 (right): WeeBit K-5 retained"),
    "weebit_beyond_kept": _n(0.0248, "2.48%", "Figure 2 (right): WeeBit Beyond-K-5 retained"),
    "ngram_terms": _n(126, "126", "Appendix A.6: grade-6+ technical phrases of the n-gram audit"),
    "ngram_hit_rate": _n(0.0009, "0.09%", "Appendix A.6: retained passages holding one of them"),
    "retained_median_words": _n(115, "115", "Table 4: median words, retained K-5 passages"),
    "removed_median_words": _n(205, "205", "Table 4: median words, removed K-5 passages"),
    "retained_mean_words": _n(150, "150", "Table 4: mean words, retained K-5 passages"),
    "removed_mean_words": _n(228, "228", "Table 4: mean words, removed K-5 passages"),
    "retained_sentence_words": _n(13.3, "13.3", "Table 4: mean sentence length, retained"),
    "removed_sentence_words": _n(21.7, "21.7", "Table 4: mean sentence length, removed"),
    "retained_long_words": _n(0.123, "12.3%", "Table 4: long words (7+ characters), retained"),
    "removed_long_words": _n(0.180, "18.0%", "Table 4: long words (7+ characters), removed"),
    # Section 3.2 and Figure 1: the corpus and the models
    "corpus_tokens": _n(88e9, "88B", "Figure 1: LittleCurriculum's tokens"),
    "train_tokens_low": _n(80e9, "~80B", "Section 3.2: tokens a LittleLearner trains on"),
    "largest_model": _n(5e9, "5B", "Section 3.2: the largest LittleLearner"),
    "train_hours": _n(100, "100 h", "Section 3.2: the 5B run on 8 B200"),
    "train_gpus": _n(8, "8", "Section 3.2: B200 GPUs of the 5B run"),
    "cooloff_k5": _n(0.91, "91%", "Appendix B: cool-off mixture, K-5 pretraining data"),
    # Appendix C: MathCAMPS
    "mathcamps_samples": _n(1024, "1,024", "Section 4, Figure 6: rollouts per problem for pass@1"),
    "mathcamps_min_answers": _n(30, "30", "Appendix C.2: a standard needs this many unique answers"),
    "mathcamps_fk_k5": _n(5.28, "5.28", "Appendix C.2.1: FK grade of the K-5 questions"),
    "mathcamps_fk_beyond": _n(5.37, "5.37", "Appendix C.2.1: FK grade of the Beyond-K-5 questions"),
    "mathcamps_sentence_k5": _n(10.7, "10.7", "Appendix C.2.1: mean sentence words, K-5 questions"),
    "mathcamps_sentence_beyond": _n(10.1, "10.1", "Appendix C.2.1: mean sentence words, Beyond-K-5"),
    "mathcamps_word_k5": _n(4.29, "4.29", "Appendix C.2.1: mean word length, K-5 questions"),
    "mathcamps_word_beyond": _n(4.20, "4.20", "Appendix C.2.1: mean word length, Beyond-K-5"),
    "mathcamps_words_k5": _n(28, "28", "Appendix C.2.1: mean question words, K-5 questions"),
    "mathcamps_words_beyond": _n(23, "23", "Appendix C.2.1: mean question words, Beyond-K-5"),
    "spearman_k5": _n(0.80, "0.80", "Appendix C.2: per-problem Spearman between models in K-5"),
    # Section 3.2 ablation: single-digit number tokens at 2B (Beyond-K-5 MathCAMPS pass@1)
    "digits_ll_before": _n(0.011, "1.1%", "Appendix B, 2B ablation: LittleLearner, default tokenizer"),
    "digits_ll_after": _n(0.018, "1.8%", "Appendix B, 2B ablation: LittleLearner, single-digit tokens"),
    "digits_unf_before": _n(0.046, "4.6%", "Appendix B, 2B ablation: UNFILTERED, default tokenizer"),
    "digits_unf_after": _n(0.103, "10.3%", "Appendix B, 2B ablation: UNFILTERED, single-digit tokens"),
    # Section 4.2: post-training
    "sft_math_problems": _n(108e3, "108k", "Section 4.2: SFT math word problems"),
    "sft_reading_qa": _n(526e3, "526k", "Section 4.2: SFT reading-comprehension QA"),
    "grpo_band_low": _n(1, "1", "Section 4.2: GRPO pool, fewest solves of 16"),
    "grpo_band_high": _n(15, "15", "Section 4.2: GRPO pool, most solves of 16"),
    # Table 5: in-context learning on the SFT'd 5B LittleLearner (K-5 / Beyond-K-5)
    "icl_direct_k5": _n(0.340, "34.0%", "Table 5: direct, K-5"),
    "icl_direct_beyond": _n(0.060, "6.0%", "Table 5: direct, Beyond-K-5"),
    "icl_prose_k5": _n(0.368, "36.8%", "Table 5: natural-prose shots, K-5"),
    "icl_prose_beyond": _n(0.059, "5.9%", "Table 5: natural-prose shots, Beyond-K-5"),
    "icl_compact_k5": _n(0.170, "17.0%", "Table 5: compact algebraic shots, K-5"),
    "icl_compact_beyond": _n(0.016, "1.6%", "Table 5: compact algebraic shots, Beyond-K-5"),
    "icl_qa_k5": _n(0.092, "9.2%", "Table 5: Q/A-only shots, K-5"),
    "icl_qa_beyond": _n(0.002, "0.2%", "Table 5: Q/A-only shots, Beyond-K-5"),
    "aoa_zipf_n": _n(50142, "50,142", "Appendix A.1, Figure 11: words in the AoA-Zipf fit"),
    "nawl_eta2": _n(0.157, "0.157", "Appendix A.1, Figure 10: eta squared of NAWL coverage"),
    "word_length_eta2": _n(0.113, "0.113", "Appendix A.1, Figure 10: eta squared of mean word length"),
    "ttr_eta2": _n(0.106, "0.106", "Appendix A.1, Figure 10: eta squared of type-token ratio"),
    "wikipedia_idf_eta2": _n(0.027, "0.027", "Appendix A.1, Figure 10: eta squared of mean Wikipedia IDF"),
    "sentence_length_eta2": _n(0.010, "0.010", "Appendix A.1, Figure 10: eta squared of sentence length"),
    "symbolic_removal": _n(0.001, "~0.1%", "Section 3.1.4, Appendix A.3: stage 4's removal after ModernBERT"),
    # -- more numbers: AoA, judge, symbolic --
    "retained_pool_tokens": _n(100e9, "~100B", "Appendix A.4: tokens retained before frequency sampling"),
    "sampling_target_tokens": _n(80e9, "80B", "Appendix A.4: the training target frequency sampling fills"),
    # -- more numbers: fastText, frequency --
    # -- more numbers: encoder --
    "weebit_k5_passages": _n(2218, "2,218", "Appendix A.6: WeeBit passages of grades 2-4 (K-5)"),
    "weebit_beyond_passages": _n(6000, "6,000", "Appendix A.6: WeeBit passages of grades 6-10 (Beyond-K-5)"),
    "weebit_out_of_scope": _n(
        0.0005, "0.05%", "Appendix A.6: WeeBit Beyond-K-5 passages kept that are clearly out of scope (three)"
    ),
    # -- more numbers: validation --
    "familiarity_gemma_size": _n(2e9, "2B", "Section 3.3: Gemma 2B, the external reference model"),
    # -- more numbers: tokenizer, training, familiarity --
    # -- more numbers: Jeopardy, MathCAMPS, curriculum --
    # Section 4.1, Figures 7 and 17: the scaling runs (the largest is largest_model)
    "scaling_small": _n(0.6e9, "0.6B", "Section 4.1, Figure 7: the smallest size of the scaling runs"),
    "scaling_middle": _n(1.3e9, "1.3B", "Section 4.1, Figure 7: the middle LittleLearner"),
    # Appendix B: the matched single-digit tokenizer ablation (its pass@1 figures are digits_*)
    "digits_model": _n(2e9, "2B", "Appendix B: the model size of the single-digit tokenizer ablation"),
    # -- more numbers: scaling, digits --
    # Appendix C.4: GRPO's segments and re-banding
    "grpo_band_samples": _n(16, "16", "Appendix C.4: GRPO re-banding, samples per problem"),
    "grpo_segment_low": _n(150, "150", "Appendix C.4: GRPO steps per segment, fewest"),
    "grpo_segment_high": _n(300, "300", "Appendix C.4: GRPO steps per segment, most"),
    # Table 5 and Appendix C.5.3: mean output length (characters) per shot style
    "icl_direct_chars": _n(352, "352", "Table 5: direct, mean output (characters)"),
    "icl_prose_chars": _n(374, "374", "Table 5, Appendix C.5.3: natural-prose shots, mean output"),
    "icl_compact_chars": _n(99, "99", "Table 5, Appendix C.5.3: compact algebraic shots, mean output"),
    "icl_qa_chars": _n(41, "41", "Table 5, Appendix C.5.3: Q/A-only shots, mean output"),
    # the BoundaryEvo preprint (arXiv 2610.13285; shared/seeds), not the LittleLearner paper
    "boundaryevo_examples": _n(1000, "1,000", "BoundaryEvo preprint, abstract: training examples in all"),
    # -- more numbers: post-training, ICL, BoundaryEvo --
}


def number(name: str) -> PaperNumber:
    """The paper's number `name`; a KeyError names the known ones."""
    if name not in NUMBERS:
        raise KeyError(f"no paper number {name!r}; known: {', '.join(sorted(NUMBERS))}")
    return NUMBERS[name]


WEEBIT_NOT_RUN = (
    "WeeBit's licence does not allow redistribution, and no graded evaluation set may enter this "
    "project: the paper's second check is not run here"
)

EXTENSION = "extension (not in the paper)"

CLAIMS: tuple[Claim, ...] = (
    Claim(
        "fig10",
        "Figure 10, Appendix A.1",
        "Of the rule-based metrics, the 95th percentile of words' Age of Acquisition separates grade "
        "bands best",
        "eta squared 0.413 for p95 AoA (Dale-Chall 0.230, Flesch-Kincaid 0.164)",
    ),
    Claim(
        "aoa_coverage",
        "Figure 11, Appendix A.1",
        "AoA with a WordFreq Zipf fallback for unlisted words gives the best trade-off of coverage and "
        "alignment",
        "AoA alone leaves 10% of words uncovered; the Zipf fallback is the chosen trade-off",
    ),
    Claim(
        "judge_votes",
        "Appendix A.2",
        "An LLM judge votes a grade band per document across three prompt setups, ties to the higher "
        "grade, at about $0.0066 per sample",
        "majority of three setups; $0.0066 per sample; USD 45.87M for FineWeb-Edu",
    ),
    Claim(
        "classifiers",
        "Section 3.1",
        "fastText and ModernBERT grade classifiers distilled from the judge's labels carry the K-5 "
        "boundary to web scale; ModernBERT is the stronger and 50x dearer",
        "ModernBERT on ~266M documents, 50x fastText's cost",
    ),
    Claim(
        "table3",
        "Table 3, Appendix A.3",
        "The symbolic-notation filter is a narrow cleanup pass: it removes formal notation, little else",
        "low removal rate",
    ),
    Claim(
        "blocklist",
        "Section 3.1 (stage 5)",
        "A frequency-ratio blocklist (log2 ratio of Beyond-K-5 to K-5 rates of at least 4.0) removes "
        "documents carrying words far more frequent beyond K-5",
        "MIN_BEYOND_SCORE 4.0",
    ),
    Claim(
        "k5_tokenizer",
        "Appendix B",
        "The tokenizer is trained on the K-5 corpus only",
        "tokenizer from K-5 text",
    ),
    Claim(
        "familiarity_gap",
        "Sections 3.2 and 4",
        "Trained alike, LittleLearner is less familiar than UNFILTERED with Beyond-K-5 text",
        "higher BPB beyond K-5 for LittleLearner",
    ),
    Claim(
        "fig2_left",
        "Figure 2 (left)",
        "On CommonCoreText the filter keeps about a third of K-5 passages and no Beyond-K-5 passage",
        "K-5 ~35%, Beyond-K-5 0%",
    ),
    Claim(
        "fig2_right",
        "Figure 2 (right), Appendix A.6",
        "On WeeBit, never tuned on, the filter keeps 42% of K-5 and 2.48% of Beyond-K-5 passages",
        "K-5 ~42%, Beyond-K-5 2.48%",
        not_run=WEEBIT_NOT_RUN,
    ),
    Claim(
        "web_yield",
        "Figure 1, Section 3.1",
        "Filtering FineWeb-Edu's 6.95B documents yields an 88B-token K-5 corpus",
        "88B tokens",
    ),
    Claim(
        "ngram_audit",
        "Appendix A.6",
        "Of the retained passages, 0.09% hold one of 126 grade-6+ technical phrases",
        "0.09%",
    ),
    Claim(
        "table4",
        "Table 4",
        "Retained K-5 passages are shorter and simpler than removed ones",
        "median words 115 vs 205; sentence 13.3 vs 21.7 words; long words 12.3% vs 18.0%",
    ),
    Claim(
        "fig3",
        "Figure 3",
        "LittleLearner's bits per byte rise with CLEAR difficulty more steeply than UNFILTERED's",
        "steeper rise for LittleLearner",
    ),
    Claim(
        "fig4",
        "Figure 4",
        "LittleLearner is less familiar than UNFILTERED with higher-grade maths dialogue (CoMTA)",
        "larger BPB gap on algebra, trigonometry and calculus turns",
    ),
    Claim(
        "fig5",
        "Figure 5",
        "LittleLearner answers K-5 science questions but collapses beyond K-5 (Jeopardy)",
        "collapse beyond grade 5",
    ),
    Claim(
        "fig6",
        "Figure 6",
        "LittleLearner matches UNFILTERED on K-5 maths and falls behind beyond it (MathCAMPS)",
        "on par in K-5; disproportionate drop beyond",
    ),
    Claim(
        "fig7",
        "Figure 7, Figure 17",
        "Larger LittleLearners do better in K-5 and somewhat at grades 6-7, not at grade 8",
        "helps K-5 and 6-7, not grade 8",
    ),
    Claim(
        "digits",
        "Appendix B (tokenizer ablation)",
        "Single-digit number tokens raise Beyond-K-5 accuracy, far more for UNFILTERED",
        "LittleLearner 1.1% → 1.8%, UNFILTERED 4.6% → 10.3%",
    ),
    Claim(
        "fig8",
        "Figure 8",
        "SFT + GRPO lift K-5 for both models but barely move LittleLearner beyond K-5",
        "LittleLearner small gain beyond K-5; UNFILTERED large",
    ),
    Claim(
        "fig9",
        "Figure 9",
        "In-context examples slightly help K-5 and do not recover Beyond-K-5",
        "slight K-5 gain, none beyond",
    ),
    Claim(
        "table5",
        "Table 5",
        "Shot styles steer output length; none recovers Beyond-K-5",
        "direct 34.0% / 6.0%, prose 36.8% / 5.9%, compact 17.0% / 1.6%, Q/A 9.2% / 0.2%",
    ),
    Claim(
        "curriculum",
        EXTENSION,
        "Every generated K-8 problem is verified by SymPy and tied to a CCSS standard",
        "not in the paper",
    ),
    Claim(
        "boundary_evo",
        EXTENSION,
        "BoundaryEvo: training at the capability boundary moves a student past what it saw",
        "not in the paper",
    ),
    Claim(
        "table6",
        "Table 6",
        "Free completions of LittleLearner stay in K-5 register where UNFILTERED's go beyond",
        "qualitative examples",
    ),
)


def claim(key: str) -> Claim:
    """The claim `key`; a KeyError names the known ones."""
    for item in CLAIMS:
        if item.key == key:
            return item
    raise KeyError(f"no claim {key!r}; known: {', '.join(c.key for c in CLAIMS)}")
