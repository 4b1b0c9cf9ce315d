"""The paper's experiments on trained models: scaling (and, as they come, post-training, in-context
learning, boundary selection). They build on `lm`, `evals` and `curriculum`; nothing in `filter`
or `fit` knows about them."""
