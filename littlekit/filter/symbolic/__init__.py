"""Filter stage 4: drop a document that uses Beyond-K-5 symbolic notation.

The paper (Sec. 3.1.4, App. A.3, Table 3) scans each document with high-precision regular
expressions for *structured* notation and drops it on the first match. This package keeps one
table, `RULES`, of (family, name, example, gate, pattern) entries over the seven families in
`FAMILIES`. It covers every notation family of Table 3 (equations, exponents, roots,
inequalities, calculus/operators, functions) and the released filter's chemical formulas, in
unicode, LaTeX and plain-text spellings. Score, then threshold: `score` reports the first
family (in `FAMILIES` order) with a match and the matched text (at most 80 characters);
`decide` drops with reason `symbolic_<family>`. `match_all` lists every match per family,
`match_spans` every match with its rule and offsets.

What counts as K-5 and is therefore never matched (each choice is tested):

- Arithmetic with numbers only: `8 + 6 = 14`, `3 × 4 = 12`, `4 x 3 = 12`, `3x4=12`, `5 < 8`,
  `3 < 5 < 8` (ordering numbers, K.CC.C.7 / 2.NBT.A.4), `1/2 of 10`, `3/4/2020`, `$3.50`.
- One letter for an unknown with explicit operators: `n + 3 = 7`, `4 × n = 24`, `x = 5`.
  CCSS 3.OA.D.8 asks for "equations with a letter standing for the unknown quantity"; what
  grade 6 adds (6.EE.A.2) is the juxtaposed coefficient `2x`, two different variables, and
  expressions such as `2(x + 3)` or `(5 * d)`. So `2x + 3 = 7`, `y = 3x`, `a + b = 10` match;
  `x = 5` does not, and neither does `x + x = 8` (one letter).
- Measurement units: a number with a unit letter (`5m = 500 cm`, `483g`, `3h + 2h = 5h`) is not
  a coefficient, and area/volume units (`cm²`, `m^3`, `ft²`) are not exponents (3.MD.C, 5.MD.C).
- Powers of ten with a one-digit whole exponent (`10^3`, `10³`, `10^{3}`, "10 to the third
  power", "10 raised to the power of 3", also inside `2.5 × 10^3`): CCSS 5.NBT.A.2 is "use
  whole-number exponents to denote powers of 10", so they are grade-5 notation. `10^-3` and
  `10^12` still match. The released filter matches every `n^m`; we deliberately do not.

Borderline choices made for precision (the paper's "high-precision rules ... rather than
isolated symbols"):

- The variable after a juxtaposed coefficient excludes the unit letters c, d, g, h, k, l, m, o,
  p, s; two-variable equations and chained inequalities accept any lowercase letter. A single
  inequality with a variable matches with ≤ ≥ <= >= (`x ≥ 3`) and, for n, x, y, z only, with
  < > (`x > 5`, not "u <3").
- Exponent bases are a number, a closing bracket, or a run of at most three letters that is not
  part of a longer word, so footnote marks (`Washington²`) and markdown (`[^1]`) do not match;
  the exponent is a number, one letter or a bracket, never a word (`1 ^ Lesnar`). Superscript
  ¹ and ⁰ may not start a power (footnotes); `x⁻¹` matches. Caret abbreviations of books
  transcribed for Project Gutenberg (`M^r`, `y^e`, `1^{st}`) and `T^T` are not exponents. `**`
  needs a number, one letter or a bracket after it, so markdown bold (`**THE`) is prose.
- `√` must be followed by a number, a bracket or a short symbol (`√x`, `√ 16`), not by a word,
  since it is sometimes typed as a check mark ("√ Done"). `∛`, `∑`, `∫`, `∂`, `∞`, `\\sqrt`
  always match; so do "square root" and "cube root". `Σ` matches only outside Greek words
  (`ΣΧ` is a fraternity, not a sum). `\\frac` matches, as in the released filter, even for
  `\\frac{1}{2}`.
- `f(x)`, `g(y)`, `h(z)` only (Table 3). Named functions (sin, log, ln, exp, ...) need the
  bracket straight after the name and an argument that is not a plural ending or a word, so
  "a reading log (see page 3)", "sin(s)" and "tan(ned)" are prose; `console.log(` matches.
- Chemical formulas (released filter, not Table 3): element symbols of the periodic table, at
  least two, with counts (`H2O`, `CO2`, `C6H12O6`, `Ca(OH)2`) or, without counts, a two-letter
  symbol, a metal or H first and a nonmetal last (`NaCl`, `KCl`, `NaOH`); a unicode subscript
  alone suffices (`O₂`). Not formulas: counts of 1 or 0 (`H1N1`), flu subtypes (`H5N8`), codes
  with counts but without H, O or a two-letter symbol (`W3C`, `PC2`, `PS4`, `Y2K`, `B2B`,
  `NW25`), names (`McK`, `HeLa`, `CoV`, `GaGa`, `UFOs`, `C3PO`, `NaN`, "VO2 max"), all-capital
  words without digits (`USA`, `NASA`, `OK`, `CO`, `NO`; the formula `KOH` is lost to this
  rule), a single element with a count (`O2`, `K12`, `B12`, `N95`, `V8`) and anything after a
  hyphen (`SARS-CoV-2`). A stoichiometric coefficient may come first (`6CO2 + 6H2O`, `2H2O`):
  what follows it must be a formula by these rules, or a molecular element (`6O2`, `3H2`,
  `2Cl2`, `O3`), so `6CO`, `5KW`, `100HP`, `3BHK` and `2K12` stay prose.

Linear time: each pattern starts with a character class or a literal (token-boundary tests are
look-behinds placed after that first character), and every repeat that could meet itself again
is bounded (`{0,3}` spaces, `{1,12}` digits) or possessive, so the work per position is
constant. Speed on adversarial text comes from three layers, cheapest first:

1. a gate (`needles`): substring tests that skip a rule when a character it needs is missing;
2. an anchor (`Anchor`): regexes that start with the rule's rarest required literal and reject
   near misses themselves, one scan of the text;
3. the pattern itself, run only on a window around each anchor hit (`Rule.reach` characters,
   computed from the pattern), so its matches are exactly those of a whole-text scan (tested).

After `MAX_MISSED_HITS` anchor hits without a match a rule scans the rest of the text with its
pattern, so no text costs more than that plain scan plus those windows. A 1 MB adversarial
string (`adversarial_inputs(size)`, timed by the tests and the benchmark) costs a few to a few
tens of milliseconds of CPU. Digits are the ASCII digits 0-9 throughout.

Layout: `patterns` (the regex pieces), `engine` (gates, anchors and `Rule`, the match engine),
`rules` (the table and the chemical-formula checks), `stage` (`SymbolicStage` and the match
listings) and `adversarial` (the megabyte strings of the linear-time checks). Each name is
imported from the module that defines it (`littlekit.filter.symbolic.stage.SymbolicStage`, ...).
"""
