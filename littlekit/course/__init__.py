"""The course's editions and grading: a student and an instructor edition of each exercise notebook
(`editions`), built and graded with nbgrader on the instructor's machine (`grading`), from the
command line (`command`: `littlekit course build` and `littlekit course grade`)."""
