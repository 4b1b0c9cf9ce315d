"""Findings boxes, glued prose, the typed-number scan, and the scorecard and RESULTS.md built from
executed notebooks (real papermill runs of small notebooks that call the chapters' own API)."""

from __future__ import annotations

import json
import shutil
import sys

import nbformat
import pytest

from littlekit import paper
from littlekit.analysis import findings
from littlekit.config import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "book" / "tools"))
import scorecard  # noqa: E402
import typed_numbers  # noqa: E402

papermill = pytest.importorskip("papermill")


# --- the typed-number scan ------------------------------------------------------------------------


def test_a_typed_result_is_found_and_references_are_not():
    assert typed_numbers.typed_numbers("The filter keeps 49.9% of K-5 passages.") == ["49.9"]
    assert typed_numbers.typed_numbers("Here 1,234 of 6,228 web documents survive") == ["1,234", "6,228"]
    allowed = (
        "Chapter 7 tests Figure 2 (left) and Table 4 of Appendix A.6 at stages 2-3 for grades 6-8 and "
        "K-5, with Qwen3 in bf16, pass@1, since 2024 [12]; it keeps {glue:text}`k5_kept:.1%` "
        "(`--per-unit 30`, $p_{95}$)."
    )
    assert typed_numbers.typed_numbers(allowed) == []


def test_a_number_typed_into_a_notebook_cell_fails_the_scan(tmp_path):
    source = REPO_ROOT / "notebooks" / "01_age_of_acquisition.ipynb"
    notebook = json.loads(source.read_text(encoding="utf-8"))
    notebook["cells"].append(nbformat.v4.new_markdown_cell("AoA explains 41% of the variance."))
    typed = tmp_path / source.name
    typed.write_text(json.dumps(notebook), encoding="utf-8")
    before = typed_numbers.notebook_typed_numbers(source)
    after = typed_numbers.notebook_typed_numbers(typed)
    assert after[len(before) :] == [(len(notebook["cells"]) - 1, "41", "AoA explains 41% of the variance.")]
    assert typed_numbers.main([str(typed)]) == 1


@pytest.mark.parametrize("path", typed_numbers.book_notebooks(), ids=lambda p: p.name)
def test_no_number_is_typed_into_the_books_prose(path):
    typed = typed_numbers.notebook_typed_numbers(path)
    assert not typed, "\n".join(f"cell {i}: {number!r} in {line}" for i, number, line in typed[:20])


# --- findings -------------------------------------------------------------------------------------


def test_a_verdict_comes_from_the_interval():
    assert findings.against_target(0.45, 0.55, 0.40, at_most=False) == findings.HOLDS
    assert findings.against_target(0.31, 0.41, 0.35, at_most=False) == findings.UNTESTABLE
    assert findings.against_target(0.10, 0.20, 0.35, at_most=False) == findings.DOES_NOT_HOLD
    assert findings.against_target(0.005, 0.022, 0.03, at_most=True) == findings.HOLDS
    assert findings.against_target(0.026, 0.096, 0.03, at_most=True) == findings.UNTESTABLE
    assert findings.against_target(0.04, 0.06, 0.03, at_most=True) == findings.DOES_NOT_HOLD
    assert (
        findings.same_sign(0.1, 0.3) == findings.HOLDS
        and findings.same_sign(-0.1, 0.3) == findings.UNTESTABLE
    )
    assert findings.same_sign(float("nan"), 0.3) == findings.UNTESTABLE


def test_a_finding_names_a_known_claim_a_known_verdict_and_what_would_change_it():
    with pytest.raises(KeyError, match="no claim 'fig99'"):
        findings.Finding("fig99", "1%", findings.HOLDS, "more data")
    with pytest.raises(ValueError, match="verdict must be one of"):
        findings.Finding("fig3", "1%", "mostly", "more data")
    with pytest.raises(ValueError, match="what would change it"):
        findings.Finding("fig3", "1%", findings.HOLDS, " ")
    row = findings.Finding("fig3", "+0.1 <x>", findings.HOLDS, "a flatter rise").row()
    assert row["paper"] == paper.claim("fig3").paper and row["where"] == "Figure 3"
    assert "+0.1 &lt;x&gt;" in findings.box_html([row])


def test_every_paper_number_says_where_the_paper_gives_it():
    assert all(n.where and n.shown for n in paper.NUMBERS.values())
    assert len({c.key for c in paper.CLAIMS}) == len(paper.CLAIMS)
    assert paper.claim("fig2_right").not_run  # WeeBit is listed, not silently left out
    with pytest.raises(KeyError, match="no paper number"):
        paper.number("nope")


# --- a real build: two small chapters executed, then the scorecard ---------------------------------

CHAPTER = """from littlekit.analysis.notebook import setup_chapter
chapter = setup_chapter(run_name, "validation", subfolder=name)
chapter.glue("kept", f"{kept:.1%}")
chapter.glue_paper("cct_k5_kept")
verdict = findings.against_target(kept - 0.05, kept + 0.05, 0.35, at_most=False)
chapter.finding(claim, ours=f"{kept:.1%} (CI {kept - 0.05:.1%}-{kept + 0.05:.1%})", verdict=verdict,
                would_change="a larger validation set")
chapter.findings_box()"""


def small_chapter(path, claim: str) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    parameters = nbformat.v4.new_code_cell(
        f"run_name = 'x'\nname = 'x'\nkept = 0.5\nclaim = '{claim}'", metadata={"tags": ["parameters"]}
    )
    notebook.cells = [
        parameters,
        nbformat.v4.new_code_cell("from littlekit.analysis import findings"),
        nbformat.v4.new_markdown_cell("We keep {glue:text}`kept`; the paper {glue:text}`paper_cct_k5_kept`."),
        nbformat.v4.new_code_cell(CHAPTER),
    ]
    nbformat.write(notebook, path)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    from notebook_smoke import set_kernel_env

    patch = pytest.MonkeyPatch()
    set_kernel_env(patch)
    source, executed = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("executed")
    run_name = "pytest-scorecard"
    for stem, claim, kept in (("07_validation", "fig2_left", 0.5), ("10_familiarity", "fig3", 0.36)):
        small_chapter(source / f"{stem}.ipynb", claim)
        papermill.execute_notebook(
            str(source / f"{stem}.ipynb"),
            str(executed / f"{stem}.ipynb"),
            progress_bar=False,
            parameters={"run_name": run_name, "name": stem, "kept": kept, "claim": claim},
            kernel_name="python3",
        )
    yield executed
    patch.undo()
    shutil.rmtree(REPO_ROOT / "runs" / run_name, ignore_errors=True)


def test_glued_values_and_findings_travel_in_the_executed_notebook(executed):
    notebook = json.loads((executed / "07_validation.ipynb").read_text())
    assert findings.notebook_glue_keys(notebook) == {"kept", "paper_cct_k5_kept"}
    [row] = findings.notebook_findings(notebook)
    assert (row["claim"], row["ours"], row["verdict"]) == ("fig2_left", "50.0% (CI 45.0%-55.0%)", "holds")
    written = REPO_ROOT / "runs" / "pytest-scorecard" / "validation" / "07_validation" / "findings.json"
    assert json.loads(written.read_text()) == [row]


def test_the_scorecard_and_results_hold_every_claim_and_exactly_the_executed_findings(executed, tmp_path):
    page, results = tmp_path / "scorecard.md", tmp_path / "RESULTS.md"
    assert scorecard.main(["--executed", str(executed), "--page", str(page), "--results", str(results)]) == 0
    text = results.read_text()
    assert text.splitlines()[2].startswith("Built from commit `") and " cores (" in text and " UTC" in text
    table = [line for line in text.splitlines() if line.startswith("| ") and line.count("|") == 8]
    assert len(table) == 1 + len(paper.CLAIMS)  # the header, then one row per claim (each reported once)
    for stem in ("07_validation", "10_familiarity"):
        for row in findings.notebook_findings(json.loads((executed / f"{stem}.ipynb").read_text())):
            expected = f"| {row['where']} | {row['statement']} | {row['paper']} | {row['ours']} | "
            assert any(line.startswith(expected) and f"**{row['verdict']}**" in line for line in table)
    untestable = "**untestable here**"  # kept 36% with a 5-point interval straddles the paper's 35%
    assert any(line.startswith("| Figure 3 |") and untestable in line for line in table)
    weebit = next(line for line in table if line.startswith("| Figure 2 (right)"))
    assert "**not run here**" in weebit and "WeeBit" in weebit
    assert "**not reported by this build**" in next(line for line in table if line.startswith("| Table 4"))
    assert "| 07_validation |" in text  # the time table
    assert "{doc}`07 <executed/07_validation>`" in page.read_text()


def test_findings_naming_an_unknown_claim_stop_the_scorecard():
    with pytest.raises(ValueError, match="does not know"):
        scorecard.scorecard_rows({"07_x": [{"claim": "fig99"}]})


def test_the_readme_links_the_built_results_instead_of_typing_them():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert "RESULTS.md" in readme
    assert "| what | ours | paper |" not in readme


def test_a_claim_of_no_change_needs_the_whole_interval_inside_the_margin():
    from littlekit.experiments.compare import margin_change_verdict, null_change

    assert findings.within_margin(-0.03, 0.04, 0.05) == findings.HOLDS
    assert findings.within_margin(-0.08, 0.02, 0.05) == findings.UNTESTABLE  # holds 0, crosses -5 points
    assert findings.within_margin(0.06, 0.12, 0.05) == findings.DOES_NOT_HOLD
    row = {"low": -0.08, "high": 0.02, "accuracy a": 0.2, "accuracy b": 0.18}
    assert null_change(row, 0.05) == "inconclusive" and null_change(row, 0.1) == "does not change"
    assert null_change({"low": 0.07, "high": 0.2, "accuracy a": 0.1, "accuracy b": 0.2}, 0.05) == "raises"
    assert null_change({"low": 0.0, "high": 0.0, "accuracy a": 0.0, "accuracy b": 0.0}, 0.05) == (
        "untestable at this scale"
    )
    small_rise = {"low": 0.01, "high": 0.03, "accuracy a": 0.1, "accuracy b": 0.12}
    assert margin_change_verdict(small_rise, 0.05) == "raises"
