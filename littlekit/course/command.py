"""`littlekit course`: build the course's editions, and grade submitted notebooks.

    littlekit course build [--exercises notebooks/exercises] [--out course] [NAME ...]
    littlekit course grade SUBMISSIONS [--course course] --out DIR [--cell-timeout S] [--notebook-timeout S]

`build` writes course/student/ (what students get), course/instructor/ (solutions, tests, expected
answers and rubrics) and course/nbgrader/ (nbgrader's folder; its gradebook keeps the grades).
`grade` reads SUBMISSIONS/<student>/<notebook>.ipynb and writes DIR/scores.csv,
DIR/predictions.csv and DIR/feedback/<student>/<notebook>.md. Grade on a machine where the
chapters each notebook reads have run (`make book`), with the exercise's parameters as the
student left them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from littlekit.argtypes import UsageError, positive_int
from littlekit.config import REPO_ROOT
from littlekit.course.editions import CourseError
from littlekit.course.grading import GradingError, build_course, grade_submissions

PROG = "littlekit course"


def add_course_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `littlekit course build|grade` on the CLI's subparsers."""
    p = subparsers.add_parser("course", help="build the course's student and instructor editions, or grade",
                              description=__doc__.split("\n\n")[0])
    actions = p.add_subparsers(dest="course_action", required=True)
    build = actions.add_parser("build", help="write the student and instructor editions with nbgrader")
    build.add_argument("names", nargs="*", metavar="NAME", help="exercise notebooks by name (default: all)")
    build.add_argument("--exercises", type=Path, default=REPO_ROOT / "notebooks" / "exercises",
                       help="folder of exercise notebooks (default: notebooks/exercises)")
    build.add_argument("--out", type=Path, default=REPO_ROOT / "course",
                       help="course folder (default: course)")
    grade = actions.add_parser("grade", help="grade SUBMISSIONS/<student>/<notebook>.ipynb locally")
    grade.add_argument("submissions", type=Path, metavar="SUBMISSIONS")
    grade.add_argument("--course", type=Path, default=REPO_ROOT / "course",
                       help="the folder `course build` wrote (default: course)")
    grade.add_argument("--out", type=Path, required=True, help="where scores.csv and feedback/ go")
    grade.add_argument("--cell-timeout", type=positive_int, default=600,
                       help="seconds a cell may run before it is interrupted (default 600)")
    grade.add_argument("--notebook-timeout", type=positive_int, default=3600,
                       help="seconds a notebook may run before it is stopped and graded zero (default 3600)")
    return p


def run_course_command(args: argparse.Namespace) -> int:
    try:
        if args.course_action == "build":
            names = build_course(args.exercises, args.out, args.names or None)
            print(f"{len(names)} exercise notebooks: student edition in {args.out / 'student'}, "
                  f"instructor edition in {args.out / 'instructor'}")
            return 0
        scores = grade_submissions(args.submissions, args.course, args.out, cell_timeout=args.cell_timeout,
                                   notebook_timeout=args.notebook_timeout)
    except (CourseError, GradingError) as exc:
        raise UsageError(str(exc), PROG) from exc
    students = sorted({s.student for s in scores})
    print(f"graded {len(students)} students, {len(scores)} exercise rows: {args.out / 'scores.csv'}")
    return 0
