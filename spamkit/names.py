"""The names a user chooses from, and the one number the command line shows as a default,
defined once for every module and for the command line.

Standard library only, so that ``spamkit COMMAND --help`` can list the choices without
importing NumPy, SciPy or scikit-learn. The modules that implement each name import it
from here (``spamkit.models.registry`` maps model names to classes; ``spamkit.config``
turns settings into filters).
"""

from __future__ import annotations

#: every model name, in the order the command line lists them
MODEL_NAMES = ("fisher-nb", "fisher", "logistic", "multinomial", "bernoulli", "complement", "knn")
#: the models online evaluation learns one message at a time
ONLINE_MODELS = ("fisher-nb", "fisher", "logistic", "multinomial", "bernoulli")
#: how messages become tokens: "mail" (Analyzer.mail(), every header field, case kept) or
#: "words" (lower-cased words of the body and of a few header fields) or "bogofilter" (bogofilter
#: 1.2's lexer on the raw message: spamkit.text.bogolex)
TOKENS = ("mail", "words", "bogofilter")
#: feature values: presence, counts, counts over the row's length, TF-IDF
REPRESENTATIONS = ("binary", "tf", "tfnorm", "tfidf")
#: how max_features chooses columns: corpus frequency or information gain
SELECTIONS = ("frequency", "ig")
#: how a filter's scores become probabilities: as the model gives them, Platt-scaled or
#: isotonic-regressed on cross-validated log-odds
CALIBRATIONS = ("none", "platt", "isotonic")
#: kNN similarity and vote weighting
METRICS = ("cosine", "euclidean", "manhattan", "minkowski", "chebyshev", "hamming", "jaccard")
WEIGHTS = ("uniform", "inverse", "softmax")
#: training regimes of online evaluation: learn every message, only the misclassified ones, or
#: the misclassified ones and those scored within a margin of the threshold ("train on or near
#: error", the thick threshold of Sculley & Wachman 2007)
REGIMES = ("all", "error", "near-error")
#: how --test-fraction holds messages out: by date, file order, stratified at random, or
#: "auto" (by date when every message has one)
SPLIT_METHODS = ("auto", "chrono", "order", "random")
#: spamkit's learning rate of the logistic component: in the stack, of 0.02 to 0.3, the smallest
#: worst-case regret over trec07p-dev, CSDMC2010, Enron1-6 and SMS among the configurations that
#: meet every goal against bogofilter (``scripts/ablation.py``; docs/results.md)
DEFAULT_RATE = 0.2
