"""The reproduction scorecard and the README's results, assembled from the executed chapters.

    python book/tools/scorecard.py [--executed DIR] [--page book/scorecard.md] [--results RESULTS.md]

Each chapter ends with a findings box (`littlekit.analysis.findings`), which carries its rows as
data in the executed notebook. This reads them back, one row per claim of `littlekit.paper.CLAIMS`
(a claim two chapters test gets a row from each), lists the claims no chapter reported with the
reason they are not run here, and writes the scorecard page of the book and `RESULTS.md`, the
results table the README links to, headed by the commit, the machine and the date of the build,
with each chapter's time. Nothing in either file is typed: rebuild them with `make book`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from littlekit import paper  # noqa: E402
from littlekit.analysis.findings import missing_glue, notebook_findings  # noqa: E402

NOT_RUN = "not run here"
NOT_REPORTED = "not reported by this build"


def chapter_findings(executed: Path) -> dict[str, list[dict[str, str]]]:
    """Each executed chapter's findings rows, by notebook stem, in book order."""
    return {
        path.stem: notebook_findings(json.loads(path.read_text(encoding="utf-8")))
        for path in sorted(executed.glob("[0-9][0-9]_*.ipynb"))
    }


def scorecard_rows(found: dict[str, list[dict[str, str]]]) -> list[dict[str, str]]:
    """One row per (claim, chapter that reported it), claims in the paper's order with the
    extensions last; a claim no chapter reported gets one row saying why."""
    unknown = {row["claim"] for rows in found.values() for row in rows} - {c.key for c in paper.CLAIMS}
    if unknown:
        raise ValueError(f"findings name claims littlekit.paper does not know: {sorted(unknown)}")
    claims = sorted(paper.CLAIMS, key=lambda c: c.where == paper.EXTENSION)
    rows = []
    for claim in claims:
        reports = [
            (stem, row)
            for stem, chapter_rows in found.items()
            for row in chapter_rows
            if row["claim"] == claim.key
        ]
        for stem, row in reports:
            rows.append({**row, "chapter": stem})
        if not reports:
            verdict = NOT_RUN if claim.not_run else NOT_REPORTED
            rows.append(
                {
                    "claim": claim.key,
                    "where": claim.where,
                    "statement": claim.statement,
                    "paper": claim.paper,
                    "ours": "—",
                    "verdict": verdict,
                    "would_change": claim.not_run or "its chapter did not run in this build",
                    "chapter": "",
                }
            )
    return rows


def build_header() -> dict[str, str]:
    """The commit, machine and date this build ran on."""

    def git(*args: str) -> str:
        result = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return result.stdout.strip() if result.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no", "--", "littlekit", "notebooks", "data"):
        commit += " with uncommitted changes"
    return {
        "commit": commit,
        "machine": f"{cpu_model()}, {os.cpu_count()} cores ({platform.machine()})",
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def cpu_model() -> str:
    """The CPU's model name and widest vector extension, from /proc/cpuinfo where there is one. The
    extension matters: torch's CPU kernels differ between AVX2 and AVX-512, so a trained model's
    numbers differ too, and a build is matched only by one on the same kind of CPU."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        lines = cpuinfo.read_text(errors="replace").splitlines()
        name = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), None)
        flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
        vector = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else None
        if name:
            return f"{name} ({vector})" if vector else name
    return platform.processor() or "unknown CPU"


def chapter_seconds(executed: Path) -> dict[str, float]:
    """Each executed notebook's run time as papermill recorded it, by notebook stem."""
    times = {}
    for path in sorted(executed.glob("[0-9][0-9]_*.ipynb")) + sorted(executed.glob("exercises/ex*.ipynb")):
        duration = json.loads(path.read_text(encoding="utf-8")).get("metadata", {}).get("papermill", {})
        if isinstance(duration.get("duration"), int | float):
            times[path.stem] = float(duration["duration"])
    return times


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def scorecard_table(rows: list[dict[str, str]], link) -> list[str]:
    lines = [
        "| paper | claim | paper's figure | here | verdict | what would change it | chapter |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        chapter = link(row["chapter"]) if row["chapter"] else ""
        lines.append(
            "| "
            + " | ".join(
                _cell(x)
                for x in (
                    row["where"],
                    row["statement"],
                    row["paper"],
                    row["ours"],
                    f"**{row['verdict']}**",
                    row["would_change"],
                )
            )
            + f" | {chapter} |"
        )
    return lines


def header_lines(header: dict[str, str]) -> list[str]:
    return [
        f"Built from commit `{header['commit']}` on {header['machine']}, {header['date']}, by "
        "`make book` (`book/tools/scorecard.py`): every figure below was printed by the chapter "
        "named in its row, in that build."
    ]


def write_page(rows: list[dict[str, str]], header: dict[str, str], page: Path) -> None:
    counts = {v: sum(r["verdict"] == v for r in rows) for v in dict.fromkeys(r["verdict"] for r in rows)}
    tally = ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
    lines = [
        "# Reproduction scorecard",
        "",
        *header_lines(header),
        "",
        "One row per claim of the LittleLearner paper, in its order, with what this build measured "
        "and its verdict: *holds* when the interval clears the paper's figure or direction, *does not "
        "hold* when it clears it the other way, *untestable here* when the interval straddles it or "
        "this scale cannot reach the claim; claims no chapter can run are listed with the reason. "
        f"This build: {tally}.",
        "",
        *scorecard_table(rows, lambda stem: f"{{doc}}`{stem[:2]} <executed/{stem}>`"),
        "",
    ]
    page.write_text("\n".join(lines), encoding="utf-8")


def write_results(
    rows: list[dict[str, str]], header: dict[str, str], seconds: dict[str, float], results: Path
) -> None:
    lines = [
        "# Results of a build",
        "",
        *header_lines(header),
        "",
        "Do not edit: `make book` writes this file. The book's reproduction scorecard page is the "
        "same table.",
        "",
        *scorecard_table(rows, lambda stem: f"[{stem}](notebooks/{stem}.ipynb)"),
        "",
        "## Time per notebook",
        "",
        "| notebook | wall s |",
        "|---|---|",
    ]
    lines += [f"| {stem} | {s:,.0f} |" for stem, s in seconds.items()]
    lines += [f"| all ({len(seconds)} notebooks, summed) | {sum(seconds.values()):,.0f} |", ""]
    results.write_text("\n".join(lines), encoding="utf-8")


def glue_problems(executed: Path) -> list[str]:
    """One line per executed notebook whose prose pastes a value its run did not glue."""
    problems = []
    for path in sorted(executed.glob("[0-9][0-9]_*.ipynb")) + sorted(executed.glob("exercises/ex*.ipynb")):
        missing = missing_glue(json.loads(path.read_text(encoding="utf-8")))
        if missing:
            problems.append(f"{path}: its prose pastes values the run never glued: {sorted(missing)}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executed", type=Path, default=ROOT / "book" / "executed")
    parser.add_argument("--page", type=Path, default=ROOT / "book" / "scorecard.md")
    parser.add_argument("--results", type=Path, default=ROOT / "RESULTS.md")
    args = parser.parse_args(argv)
    found = chapter_findings(args.executed)
    if not found:
        print(f"no executed chapters in {args.executed}: run the notebooks first", file=sys.stderr)
        return 1
    unglued = glue_problems(args.executed)
    if unglued:
        print("\n".join(unglued), file=sys.stderr)
        return 1
    rows = scorecard_rows(found)
    header = build_header()
    write_page(rows, header, args.page)
    write_results(rows, header, chapter_seconds(args.executed), args.results)
    silent = [stem for stem, chapter_rows in found.items() if not chapter_rows]
    print(
        f"scorecard: {len(rows)} rows from {len(found)} chapters -> {args.page}, {args.results}"
        + (f"; chapters without a findings box: {', '.join(silent)}" if silent else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
