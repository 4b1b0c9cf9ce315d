"""The course's download table: each exercise notebook's student and instructor editions.

    python book/tools/course_downloads.py [--course book/executed/course] [--page PAGE]

`make book` builds the editions into book/executed/course/ (`littlekit course build`) and then runs
this, which writes a markdown table the course pages include: per exercise notebook, a download
link to its student edition (what students get) and its instructor edition, the number of
exercises and the autograded points, read from the editions themselves. Like the executed
notebooks it is not committed, and nothing on it is typed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from littlekit.course.editions import exercises  # noqa: E402
from littlekit.course.grading import INSTRUCTOR_DIR, STUDENT_DIR  # noqa: E402

EXECUTED = ROOT / "book" / "executed"


def download_rows(course: Path, executed: Path = EXECUTED) -> list[str]:
    """One table row per exercise notebook whose two editions are both in `course` (under `executed`)."""
    rows = []
    for student in sorted((course / STUDENT_DIR).glob("ex[0-9][0-9]_*.ipynb")):
        instructor = course / INSTRUCTOR_DIR / student.name
        if not instructor.is_file():
            raise SystemExit(f"{instructor} is missing: rebuild the course (littlekit course build)")
        found = exercises(nbformat.read(instructor, as_version=4))
        points = sum(ex.points for ex in found)
        # links written as ../executed/...: they resolve the same from book/executed/ and from the
        # course pages in book/course/ that include this table
        link, full = (f"../executed/{p.resolve().relative_to(executed.resolve()).as_posix()}"
                      for p in (student, instructor))
        exercise_page = f"../executed/exercises/{student.stem}"
        rows.append(f"| {{doc}}`{student.stem} <{exercise_page}>` | {{download}}`student <{link}>` | "
                    f"{{download}}`instructor <{full}>` | {len(found)} | {points} |")
    if not rows:
        raise SystemExit(f"no student edition in {course / STUDENT_DIR}: run littlekit course build first")
    return rows


def write_page(course: Path, page: Path, executed: Path = EXECUTED) -> None:
    lines = [
        "| exercise notebook | student edition | instructor edition | exercises | autograded points |",
        "|---|---|---|---|---|",
        *download_rows(course, executed),
    ]
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--course", type=Path, default=EXECUTED / "course",
                        help="the course folder under book/executed/ that `littlekit course build` wrote")
    parser.add_argument("--page", type=Path, default=EXECUTED / "course_downloads.md",
                        help="the table to write (default: book/executed/course_downloads.md)")
    args = parser.parse_args(argv)
    write_page(args.course, args.page)
    print(f"course downloads: {args.page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
