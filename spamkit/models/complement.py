"""Complement Naive Bayes: each class is described by the words of every *other* class.

J. D. M. Rennie, L. Shih, J. Teevan and D. R. Karger, "Tackling the Poor Assumptions of
Naive Bayes Text Classifiers", ICML 2003. Multinomial NB estimates a class's word
distribution from that class's documents alone, so a small class gets poor, biased
estimates; the complement of a class (all the other classes together) has far more
documents, even counts across classes, and gives steadier weights. With counts n[c, j]
and smoothing α (Rennie et al.'s steps 4-6, "CNB" and, with weight normalisation, "WCNB"):

    θ̃[c, j] = (Σ_{c'≠c} n[c', j] + α) / (Σ_{c'≠c} Σ_j' n[c', j'] + α D)
    w[c, j] = log θ̃[c, j]             then, normalised,  w[c, j] / Σ_j' |w[c, j']|

and a document x goes to the class whose complement fits it *worst*: argmin_c Σ_j x_j w[c, j]
(here as argmax of the joint score -Σ_j x_j w[c, j], or, normalised, Σ_j x_j w[c, j] / Σ_j' w[c, j']
-- the sign folds into the normalisation, as in scikit-learn). The paper's document
transforms are options: ``tf_transform`` (x → log(1 + x), their step 1) and
``length_norm`` (each document scaled to unit Euclidean length, step 3); the IDF step is the
vectorizer's TF-IDF representation. Class priors are ignored, as the paper does (they barely
matter once the weights are estimated from complements). scikit-learn's ``ComplementNB``
is the oracle in the tests (on the transformed counts when a transform is on).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .base import check_alpha, class_log_prior, unit_rows
from .counting import CountingModel


class ComplementNB(CountingModel):
    """Complement Naive Bayes for unbalanced, multi-class text.

    Parameters
    ----------
    alpha : float
        Additive smoothing of the complement counts (1 = Laplace).
    norm : bool
        Weight normalisation (Rennie et al.'s WCNB): each class's weights divided by their
        total, so classes with long documents do not dominate.
    tf_transform : bool
        Count x becomes log(1 + x) before counting and scoring (damps bursty words).
    length_norm : bool
        Each document scaled to unit Euclidean length before counting and scoring.

    Examples
    --------
    >>> X = np.array([[3, 0, 1], [2, 0, 0], [0, 4, 1], [0, 3, 0], [1, 0, 5]])
    >>> ComplementNB().fit(X, ["a", "a", "b", "b", "c"]).predict(np.array([[0, 2, 0], [0, 0, 3]])).tolist()
    ['b', 'c']
    """

    def __init__(self, alpha=1.0, norm=False, tf_transform=False, length_norm=False):
        self.alpha = alpha
        self.norm = norm
        self.tf_transform = tf_transform
        self.length_norm = length_norm

    sklearn_tag_settings = {"input_tags.positive_only": True, "classifier_tags.poor_score": True}

    def check_params(self):
        check_alpha(self.alpha)

    def counted(self, X):
        """The document transforms asked for, on (a copy of) the counts."""
        if sp.issparse(X):
            data = X.data
        else:
            data = np.asarray(X)
        if np.any(data < 0):
            raise ValueError("Negative values in data passed to ComplementNB (input X): "
                             "it counts words (tf, tfnorm or tfidf, never negative)")
        if not (self.tf_transform or self.length_norm):
            return X
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        if self.tf_transform:
            X.data = np.log1p(X.data)
        return unit_rows(X) if self.length_norm else X

    def counts_changed(self) -> None:
        alpha = check_alpha(self.alpha)
        complement = self.feature_count_.sum(axis=0) + alpha - self.feature_count_
        with np.errstate(divide="ignore"):
            logged = np.log(complement) - np.log(complement.sum(axis=1, keepdims=True))
        if self.norm:
            self.feature_log_prob_ = logged / logged.sum(axis=1, keepdims=True)
        else:
            self.feature_log_prob_ = -logged
        self.class_log_prior_ = class_log_prior(self.class_count_)

    def joint_log_likelihood(self, X) -> np.ndarray:
        """The complement score of each class, shape (n_docs, n_classes); higher is more likely."""
        X = self.counted(self._validate_X(X, reset=False))
        jll = np.asarray(X @ self.feature_log_prob_.T)
        if len(self.classes_) == 1:
            jll = jll + self.class_log_prior_
        return jll

    def contributions(self, x) -> tuple[np.ndarray, np.ndarray]:
        """For one row: its non-zero features and each one's share ``x_j w[c, j]`` of every class's
        score (what explains a decision). Returns ``(indices, contributions (n_classes, k))``."""
        row = sp.csr_matrix(self.counted(self._validate_X(x, reset=False)))[0]
        return row.indices, self.feature_log_prob_[:, row.indices] * row.data[None, :]
