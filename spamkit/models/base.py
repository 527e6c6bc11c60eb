"""What every spamkit classifier shares: input checks, posteriors from joint log-likelihoods.

Models take matrices and labels and return class probabilities; they never
see strings of text. They follow scikit-learn's estimator conventions
(``fit`` returns ``self``, learned state ends in ``_``, constructor arguments
are stored unchanged, ``get_params``/``set_params``, estimator tags), so they drop into
scikit-learn pipelines, cross-validation and grid search and pass its estimator checks
(``sklearn.utils.estimator_checks``, run in the tests) -- without importing scikit-learn:
:class:`Estimator` implements the contract itself (as described in scikit-learn's developer
guide, "Developing scikit-learn estimators"), and scikit-learn is imported only when it is
asked for (tags, ``score``) or when input needs its general validation. Importing
scikit-learn costs about 0.5 s and 60 MB (it imports ``scipy.stats``), which every command
that loads a filter paid before it read a message.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from ..common import errors
from ..common.errors import ConfigError, DegenerateDataWarning


#: log-odds are kept within LOG_ODDS_LIMIT (700: exp(700) is near the largest float) wherever
#: they are compared or combined (a kNN vote or a Fisher score can be infinite)
from ..scoring import LOG_ODDS_LIMIT  # the scoring core's, which pipe mode reads too


def csr_index_arrays(X) -> tuple[np.ndarray, np.ndarray]:
    """A CSR matrix's row pointers as contiguous int64 and its column indices as the matrix holds
    them (int32 or int64, not copied; anything else as an int64 copy): what the compiled CSR loops
    of ``spamkit.common.speedups`` read."""
    indices = X.indices
    if not (indices.dtype in (np.int32, np.int64) and indices.flags.c_contiguous):
        indices = np.ascontiguousarray(indices, dtype=np.int64)
    return np.ascontiguousarray(X.indptr, dtype=np.int64), indices


def finite_log_odds(scores) -> np.ndarray:
    """Log-odds made finite and ordered: NaN (0/0, e.g. a message with no known token) is 0,
    infinities and anything beyond :data:`LOG_ODDS_LIMIT` are clipped to it.

    >>> finite_log_odds([float("nan"), float("inf"), -1e9, 2.5]).tolist()
    [0.0, 700.0, -700.0, 2.5]
    """
    z = np.asarray(scores, dtype=np.float64)
    # np.clip(np.nan_to_num(z, nan=0.0), ...) gives the same numbers at a quarter of the cost on
    # one message's scores (nan_to_num and clip are Python wrappers around these ufuncs)
    return np.minimum(np.maximum(np.where(z != z, 0.0, z), -LOG_ODDS_LIMIT), LOG_ODDS_LIMIT)


class Estimator:
    """scikit-learn's estimator contract, without importing scikit-learn.

    The parameters are the keyword arguments of the class's ``__init__``, stored unchanged
    under their own names; :meth:`get_params` reads them back (``deep=True`` adds a
    parameter's own parameters as ``name__sub``), :meth:`set_params` sets them (nested ones
    through ``name__sub``), ``repr`` shows the ones that differ from their defaults, and
    ``__sklearn_tags__`` answers scikit-learn's questions about the estimator (it is only
    called by scikit-learn, so importing scikit-learn's tag classes there costs nothing new).

    >>> class Smoother(Estimator):
    ...     def __init__(self, alpha=1.0, fit_prior=True):
    ...         self.alpha, self.fit_prior = alpha, fit_prior
    >>> s = Smoother(alpha=0.5)
    >>> s.get_params(), s
    ({'alpha': 0.5, 'fit_prior': True}, Smoother(alpha=0.5))
    >>> s.set_params(fit_prior=False).fit_prior
    False
    """

    @classmethod
    def _parameter_names(cls) -> list[str]:
        """The names of ``__init__``'s parameters, sorted (what scikit-learn's ``clone`` rebuilds from)."""
        init = cls.__init__
        if init is object.__init__:
            return []
        names = []
        for p in inspect.signature(init).parameters.values():
            if p.name == "self" or p.kind == p.VAR_KEYWORD:
                continue
            if p.kind == p.VAR_POSITIONAL:
                raise TypeError(f"{cls.__name__}.__init__ takes *{p.name}: an estimator's parameters "
                                "must be named")
            names.append(p.name)
        return sorted(names)

    def get_params(self, deep: bool = True) -> dict:
        """The constructor's parameters and their values (and, if ``deep``, the parameters of
        those that are estimators themselves, as ``name__sub``)."""
        out: dict = {}
        for name in self._parameter_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params) -> "Estimator":
        """Set parameters by name (``name__sub`` reaches a parameter's own parameter); returns ``self``."""
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested: dict[str, dict] = {}
        for key, value in params.items():
            name, delim, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"Invalid parameter {name!r} for estimator {self}. "
                                 f"Valid parameters are: {self._parameter_names()!r}.")
            if delim:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, sub_params in nested.items():
            valid[name].set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()}
        changed = []
        for name in self._parameter_names():
            value = getattr(self, name, None)
            if repr(value) != repr(defaults.get(name, inspect.Parameter.empty)):
                changed.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(changed)})"

    def first_partial_fit(self, classes) -> bool:
        """Whether this ``partial_fit`` is the model's first (it has no ``classes_`` yet), after
        checking its ``classes``: the first call needs them (every class the stream may hold),
        a later call's, when given, must be the first's. A ConfigError otherwise."""
        known = getattr(self, "classes_", None)
        if known is None and classes is None:
            raise ConfigError(f"the first partial_fit of a {type(self).__name__} needs classes=[...]: every "
                              "class the stream may hold")
        if known is not None and classes is not None and not np.array_equal(np.unique(np.asarray(classes)),
                                                                              np.unique(known)):
            raise ConfigError(f"classes {list(classes)} differ from the first partial_fit's {known.tolist()}")
        return known is None

    def __sklearn_tags__(self):
        from sklearn.utils import Tags, TargetTags  # only scikit-learn asks, so it is loaded

        return Tags(estimator_type=None, target_tags=TargetTags(required=False), transformer_tags=None,
                    regressor_tags=None, classifier_tags=None)


class _PredictorMixin:
    """What scikit-learn's classifier and regressor mixins add: the estimator type in the tags,
    the target required, and ``score`` (a metric of scikit-learn's, imported when called); and
    the tags each class declares in :attr:`sklearn_tag_settings`."""

    _estimator_type_name: str
    _score_name: str
    predict: Callable                # the estimator's own (annotation only: no attribute here)
    #: scipy.sparse input accepted (the ``accept_sparse`` of input validation; tagged ``input_tags.sparse``)
    _accept_sparse: str | bool = False
    #: scikit-learn tags a class sets on top of its bases', as {"group.field": value}, e.g.
    #: ``{"input_tags.positive_only": True}``: each class declares its own, and
    #: ``__sklearn_tags__`` applies them from the most basic class to the most derived, so a
    #: subclass's setting wins, as in an override of ``__sklearn_tags__`` calling ``super()``
    sklearn_tag_settings: dict = {}

    def __sklearn_tags__(self):
        from sklearn import utils

        tags = super().__sklearn_tags__()
        kind = self._estimator_type_name
        tags.estimator_type = kind
        setattr(tags, f"{kind}_tags", getattr(utils, f"{kind.capitalize()}Tags")())
        tags.target_tags.required = True
        tags.input_tags.sparse = bool(self._accept_sparse)
        for cls in reversed(type(self).__mro__):
            for path, value in vars(cls).get("sklearn_tag_settings", {}).items():
                group, field = path.split(".")
                part = getattr(tags, group)
                if not hasattr(part, field):     # a dataclass would take a misspelt field silently
                    raise AttributeError(f"{cls.__name__}.sklearn_tag_settings: scikit-learn has no tag {path!r}")
                setattr(part, field, value)
        return tags

    def score(self, X, y, sample_weight=None) -> float:
        from sklearn import metrics

        return float(getattr(metrics, self._score_name)(y, self.predict(X), sample_weight=sample_weight))


class ClassifierMixin(_PredictorMixin):
    """A classifier to scikit-learn; :meth:`score` is the accuracy of ``predict`` (``accuracy_score``)."""

    _estimator_type_name, _score_name = "classifier", "accuracy_score"


class RegressorMixin(_PredictorMixin):
    """A regressor to scikit-learn; :meth:`score` is R² of ``predict`` (``r2_score``)."""

    _estimator_type_name, _score_name = "regressor", "r2_score"


def is_plain_csr(X, n_features: int | None = None) -> bool:
    """Whether X is what spamkit's vectorizer makes -- a float64 CSR matrix with finite values,
    of ``n_features`` columns if given (else, as for a fit, at least one row and one column) --
    so that scikit-learn's general input validation (and import) can be skipped."""
    return (isinstance(X, sp.csr_matrix) and X.dtype == np.float64
            and (X.shape[1] == n_features if n_features is not None else min(X.shape) >= 1)
            and X.indices.dtype in (np.int32, np.int64) and bool(np.isfinite(X.data).all()))


class ProbabilisticClassifier(ClassifierMixin, Estimator):
    """Base class: subclasses implement ``joint_log_likelihood(X)`` (log p(x, c), shape (n, C)).

    Posteriors are normalised once, here, with log-sum-exp, so a 10,000-token
    message does not underflow.
    """

    #: accept scipy.sparse input (Naive Bayes and kNN do; Gaussian NB densifies)
    _accept_sparse: str | bool = "csr"
    #: the classes, set by fitting (annotation only: an unfitted model has no such attribute)
    classes_: np.ndarray

    # ------------------------------------------------------------- validation

    def check_fitted(self):
        if not hasattr(self, "classes_"):
            raise errors.NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")

    def class_codes(self, y) -> np.ndarray:
        """The index in ``classes_`` of each label of ``y``; a label the model does not know is a
        ConfigError that names it."""
        labels = np.asarray(y).ravel()
        if labels.dtype.kind == "U" and self.classes_.dtype.kind == "U":
            # text labels against text classes: one vectorised comparison per class (the stack's
            # folds map 38,715 labels six times in a fit), the same codes as the lookup below
            codes = np.full(len(labels), -1, dtype=np.int64)
            for i, c in enumerate(self.classes_.tolist()):
                codes[labels == c] = i
            if len(codes) and codes.min() < 0:
                unknown = labels[int(np.argmax(codes < 0))].item()
                raise ConfigError(f"label {unknown!r} is not one of the classes {self.classes_.tolist()}")
            return codes
        index = {c: i for i, c in enumerate(self.classes_.tolist())}
        try:
            return np.fromiter((index[v] for v in labels.tolist()), dtype=np.int64, count=len(labels))
        except KeyError as exc:
            raise ConfigError(f"label {exc.args[0]!r} is not one of the classes {self.classes_.tolist()}") from None

    def _is_own_matrix(self, X, reset: bool) -> bool:
        """Whether X can skip scikit-learn's validation (:func:`is_plain_csr`, of the fitted width
        unless this is a fit)."""
        return bool(self._accept_sparse) and is_plain_csr(X, None if reset else self.n_features_in_)

    def _note_width(self, X, reset: bool) -> None:
        """On a fit, what scikit-learn's validation records: the width, and no column names."""
        if reset:
            self.n_features_in_ = X.shape[1]
            self.__dict__.pop("feature_names_in_", None)

    def _validate_X(self, X, reset: bool):
        """CSR (or dense) float64 input, with the feature count checked against fit."""
        if not reset:
            self.check_fitted()
        # Fast path for what spamkit's vectorizer produces: a float64 CSR of the right width.
        # scikit-learn's general validation costs more than scoring one short message.
        if self._is_own_matrix(X, reset):
            self._note_width(X, reset)
            return X
        from sklearn.utils.validation import validate_data

        X = validate_data(self, X, accept_sparse=self._accept_sparse or False, reset=reset,
                          dtype=np.float64)
        if sp.issparse(X):
            X = sp.csr_matrix(X)
        return X

    def _validate_Xy(self, X, y, reset: bool):
        """X as in :meth:`_validate_X`, y one label per row (scikit-learn's checks and messages)."""
        if not reset:
            self.check_fitted()
        # Fast path for spamkit's own matrices with labels that are strings, integers or
        # booleans (never continuous: scikit-learn's target check would refuse floats; a
        # fitted model's class_codes refuses any label it does not know).
        if self._is_own_matrix(X, reset) and isinstance(y, (list, np.ndarray)) and len(y) == X.shape[0]:
            y = np.asarray(y)
            if y.ndim == 1 and (y.dtype.kind in "Uiub" or (y.dtype.kind == "O" and (
                    not reset or all(isinstance(v, str) for v in y.tolist())))):
                self._note_width(X, reset)
                return X, y
        from sklearn.utils.multiclass import check_classification_targets
        from sklearn.utils.validation import validate_data

        X, y = validate_data(self, X, y, accept_sparse=self._accept_sparse or False, reset=reset,
                             dtype=np.float64)
        check_classification_targets(y)
        if sp.issparse(X):
            X = sp.csr_matrix(X)
        return X, y

    # ------------------------------------------------------------- posteriors

    def joint_log_likelihood(self, X) -> np.ndarray:
        """log p(x, c) for every row of X and every class, shape (n_docs, n_classes)."""
        raise NotImplementedError

    def predict_log_proba(self, X) -> np.ndarray:
        """log p(c | x), normalised with log-sum-exp; shape (n_docs, n_classes)."""
        jll = self.joint_log_likelihood(X)
        # log sum_c exp(jll_c) = m + log sum_c exp(jll_c - m), m the row maximum (no overflow or
        # underflow); a row whose every entry is -inf stays -inf.
        m = jll.max(axis=1, keepdims=True)
        finite_m = np.where(np.isfinite(m), m, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_norm = finite_m + np.log(np.exp(jll - finite_m).sum(axis=1, keepdims=True))
            out = jll - log_norm
        impossible = ~np.isfinite(log_norm.ravel())
        if impossible.any():
            warnings.warn(f"{int(impossible.sum())} row(s) have zero likelihood under every class "
                          "(unsmoothed model, alpha=0, and unseen events); their posteriors are NaN",
                          DegenerateDataWarning, stacklevel=2)
            out[impossible] = np.nan
        return out

    def predict_proba(self, X) -> np.ndarray:
        """p(c | x); rows sum to 1, columns in the order of ``classes_``."""
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        """The most probable class of each row (the first in ``classes_`` order on an exact tie)."""
        jll = self.joint_log_likelihood(X)
        return self.classes_[np.argmax(jll, axis=1)]


def class_labels(y, n: int) -> np.ndarray:
    """``y`` as one class label per row of ``n``: a column vector is flattened (with
    scikit-learn's DataConversionWarning), continuous numbers are refused as scikit-learn's
    classifiers refuse them ("Unknown label type: continuous")."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        import warnings

        from sklearn.exceptions import DataConversionWarning
        warnings.warn("A column-vector y was passed when a 1d array was expected: it is flattened",
                      DataConversionWarning, stacklevel=3)
        y = y.ravel()
    if y.ndim != 1 or len(y) != n:
        raise ValueError(f"y must be 1-D with one label per row, got shape {y.shape} for {n} rows")
    if y.dtype.kind == "f" and np.any(y != np.round(y)):
        raise ValueError("Unknown label type: continuous (class labels are names or whole numbers)")
    return y


def check_sample_weight(sample_weight, n: int) -> np.ndarray:
    """Weights of n samples: ones by default; finite, non-negative, not all zero."""
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.ndim == 0:
        w = np.full(n, float(w))
    if w.shape != (n,):
        raise ValueError(f"sample_weight has shape {w.shape}, expected ({n},)")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("sample_weight must be finite and non-negative")
    if n and w.sum() == 0:
        raise ValueError("sample weights sum to zero: nothing to learn from")
    return w


def unit_rows(X) -> sp.csr_matrix:
    """A float copy of X with every row scaled to unit Euclidean length (all-zero rows stay zero):
    cosine kNN's stored rows and complement NB's length normalisation.

    >>> unit_rows(sp.csr_matrix([[3.0, 4.0], [0.0, 0.0]])).toarray().tolist()
    [[0.6, 0.8], [0.0, 0.0]]
    """
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    X.data /= np.repeat(norms, np.diff(X.indptr))
    return X


class NaiveBayesParameters:
    """The parameters every Naive Bayes model of spamkit takes (a mixin, before the base class):
    ``alpha`` (additive smoothing), ``fit_prior`` and ``class_prior`` (see :func:`class_log_prior`)."""

    def __init__(self, alpha=1.0, fit_prior=True, class_prior=None):
        self.alpha = alpha
        self.fit_prior = fit_prior
        self.class_prior = class_prior

    #: scikit-learn's estimator suite checks accuracy > 0.83 on Gaussian blobs, which a count or
    #: category model cannot reach on real numbers; scikit-learn tags its own discrete Naive
    #: Bayes estimators poor_score for the same reason
    sklearn_tag_settings = {"classifier_tags.poor_score": True}


def class_log_prior(class_count, fit_prior: bool = True, class_prior=None) -> np.ndarray:
    """log p(c) of a Naive Bayes model: the given ``class_prior``, else the class frequencies
    N_c / N (``fit_prior``), else uniform.

    >>> np.exp(class_log_prior([9.0, 5.0])).round(4).tolist()
    [0.6429, 0.3571]
    """
    counts = np.asarray(class_count, dtype=np.float64)
    n_classes = len(counts)
    if class_prior is not None:
        prior = np.asarray(class_prior, dtype=np.float64)
        if prior.shape != (n_classes,) or np.any(prior < 0) or not np.isclose(prior.sum(), 1.0):
            raise ConfigError(f"class_prior must be {n_classes} non-negative numbers summing to 1, "
                              f"got {class_prior!r}")
        with np.errstate(divide="ignore"):
            return np.log(prior)
    if fit_prior:
        with np.errstate(divide="ignore"):
            return np.log(counts) - np.log(counts.sum())
    return np.full(n_classes, -np.log(n_classes))


def check_positive(value, name: str, *, zero: bool = False) -> float:
    """``value`` as a float, which must be finite and > 0 (>= 0 with ``zero``); otherwise a
    ConfigError naming the parameter ``name``.

    >>> check_positive("0.5", "beta")
    0.5
    >>> check_positive(0, "alpha", zero=True)
    0.0
    >>> check_positive(0, "beta")
    Traceback (most recent call last):
    spamkit.common.errors.ConfigError: beta must be a finite number > 0, got 0
    """
    bound = ">= 0" if zero else "> 0"
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number {bound}, got {value!r}") from None
    if not (np.isfinite(number) and (number >= 0 if zero else number > 0)):
        raise ConfigError(f"{name} must be a finite number {bound}, got {value!r}")
    return number


def check_alpha(alpha) -> float:
    """Additive smoothing must be a finite number >= 0 (0 only for hand checks: unsmoothed MLE)."""
    return check_positive(alpha, "alpha", zero=True)
