"""The names a user chooses from, the one number the command line shows as a default, and
each model's own defaults, defined once for every module and for the command line.

Standard library only, so that ``spamkit COMMAND --help`` can list the choices without
importing NumPy, SciPy or scikit-learn. The modules that implement each name import it
from here (``spamkit.models.registry`` maps model names to classes; ``spamkit.filterfile.config``
turns settings into filters).
"""

from __future__ import annotations

TYPE_CHECKING = False                  # typing is not imported at run time (pipe mode's start-up)
if TYPE_CHECKING:
    from typing import Any

#: the stack (Robinson/Fisher, naive Bayes and logistic regression combined: the default model)
#: and Robinson/Fisher alone, the two models with Fisher's combining
STACK_MODEL, FISHER_MODEL = "fisher-nb", "fisher"
#: the model ``spamkit train`` and ``spamkit online`` use unless told otherwise
DEFAULT_MODEL = STACK_MODEL
#: every model name, in the order the command line lists them
MODEL_NAMES = (STACK_MODEL, FISHER_MODEL, "logistic", "multinomial", "bernoulli", "complement", "knn")
#: the models online evaluation learns one message at a time
ONLINE_MODELS = (STACK_MODEL, FISHER_MODEL, "logistic", "multinomial", "bernoulli", "grams")
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
# the byte 4-gram model's defaults (spamkit.models.bytegrams; the workers that make its
# features read them without NumPy: spamkit.jobs.engines)
#: the bytes of each message read: the best of 2,500 / 3,500 on trec07p-dev, trec06p and
#: CSDMC2010 (scripts/waterloo_logistic.py --bytes; docs/results.md)
GRAM_BYTES = 3500
#: 2**GRAM_BITS weights (4 bytes each: 1 MB). The published 2**22 scores the same within hashing
#: noise: (1-ROCA)% online 2**18 / 2**22: trec06p 0.0394 / 0.0396, trec07p-dev 0.0562 / 0.0568,
#: CSDMC2010 0.0004 / 0.0004, Enron1 0.779 / 0.773, Enron5 0.393 / 0.392 (2**16: 0.801 on Enron1);
#: a table 16 times smaller is read and written faster and fits a core's cache
GRAM_BITS = 18
#: the published learning rate (Cormack, TREC 2007)
GRAM_RATE = 0.002
#: the folds of the 4-gram model's held-out scores, on which a stack's combiner weighs it: 2
#: (each fold model learns half the messages: one pass over them in all, against four with the
#: stack's 5; training trec07p-dev + Enron1 2-3% faster). Trained on the first half of a corpus
#: and judging the second, (1-AUC)% 5 -> 2 folds: trec07p-dev 0.0038 -> 0.0041, CSDMC2010 0 ->
#: 0, trec06p's first 10,000 0.0005 -> 0.0008, Enron1-6 -0.5% to +2.3%, ham past the cut the
#: same or one fewer on all but Enron5 (``scripts/gram_folds.py``; docs/history.md, "Training
#: and classifying ...")
GRAM_FOLDS = 2
#: spamkit's learning rate of the logistic component: of 0.04 to 0.2, the one whose default filter
#: is never far behind the best published peer (bogofilter, the byte 4-gram regression) over
#: whole streams and their first 3,000 messages, trec06p's 37,821 and CCERT's Chinese bodies
#: included: worst ratio 1.00 (trec06p's start), where 0.2, chosen on 5,000-message streams,
#: was 1.07 there and 0.91 over all of trec06p (0.86 now); smaller rates suit trec06p and lose
#: on Chinese bodies (``scripts/rate_choice.py``; docs/results.md)
DEFAULT_RATE = 0.1

#: Robinson/Fisher's defaults, the one place they are written (the models, the command line's
#: options and pipe mode's lean route read them here): Robinson's s (the weight of the prior for
#: a rare token; SpamBayes' 0.45), x (P(spam) of a token never seen), the smallest |f - 0.5|
#: of a clue, and the most clues per message
FISHER_STRENGTH, FISHER_PRIOR, FISHER_MIN_DEV, FISHER_MAX_CLUES = 0.45, 0.5, 0.1, 150


#: the settings each model is best with, where they are not the general defaults (tokens "mail",
#: alpha 1, min_df 1): kNN's (and spamkit.filterfile.config.KNN_BEST); for the Naive Bayes models, ``python scripts/model_defaults.py``
#: (every candidate on Enron1-6, trec07p-dev, CSDMC2010, SMS and 20 Newsgroups; the smallest
#: worst-case regret, docs/results.md "Defaults for every model"): multinomial with light smoothing
#: (alpha 0.01: worst regret 1.38 against 1.89 for Laplace), Bernoulli with alpha 0.1 on tokens
#: seen in two messages or more (1.47 against 4.08), complement NB on Rennie et al.'s log TF and
#: length-normalised documents with alpha 0.1, without weight normalisation (3.38 against 6.48;
#: 86.0% on 20 Newsgroups with mail tokens, 86.7% with words, against 82.5%). The fisher-nb stack
#: weighs the byte 4-gram regression (spamkit.models.bytegrams) as a side input: online, 0.56 times
#: the best published peer on trec06p's 37,821 messages where it was 0.86 without, better on eight
#: of ten streams, the other two within 6% (``python scripts/fusion.py``; docs/results.md, "The
#: 4-gram regression in the default").
MODEL_DEFAULTS: dict[str, dict[str, Any]] = {STACK_MODEL: {"grams": True},
                  "knn": {"tokens": "words", "representation": "tfidf"},
                  "multinomial": {"alpha": 0.01},
                  "bernoulli": {"alpha": 0.1, "min_df": 2},
                  "complement": {"alpha": 0.1, "tf_transform": True, "length_norm": True, "weight_norm": False}}
#: ComplementNB's settings by their option names (``--tf-log`` and so on) -> its parameters
COMPLEMENT_KEYS = {"tf_transform": "tf_transform", "length_norm": "length_norm", "weight_norm": "norm"}


def model_default(model: str, key: str, given=None, fallback=None):
    """``given`` when set, else the model's own default (:data:`MODEL_DEFAULTS`), else ``fallback``.

    >>> model_default("multinomial", "alpha", None, 1.0), model_default("fisher-nb", "alpha", None, 1.0)
    (0.01, 1.0)
    """
    if given is not None:
        return given
    return MODEL_DEFAULTS.get(model, {}).get(key, fallback)
