"""Every model that learns in batches checks a ``partial_fit``'s ``classes`` the same way
(``spamkit.models.base.Estimator.first_partial_fit``): the first call needs them, a later call's,
when given, must be the first's (in any order); a refused first call leaves the model unfitted."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from spamkit.common.errors import ConfigError
from spamkit.features.bytekeys import context_keys, gram_rows
from spamkit.models import (BernoulliNB, ComplementNB, FisherNBStack, GaussianNB, MultinomialNB, OnlineLogistic,
                            RobinsonFisher)
from spamkit.models.bytegrams import ByteGramLogistic
from spamkit.models.context import ByteContextModel

TEXTS = [b"cheap pills here", b"see you at lunch", b"cheap cheap pills", b"lunch at noon?"]
LABELS = np.array(["spam", "ham", "spam", "ham"])
COUNTS = sp.csr_matrix(np.array([[2, 0, 1, 0], [0, 1, 0, 2], [3, 0, 1, 0], [0, 2, 0, 1]], dtype=float))


def _rows(name):
    """The model of ``name`` and its four training rows, in the form it learns from."""
    if name == "bytegrams":
        return ByteGramLogistic(), gram_rows(TEXTS)
    if name == "context":
        return ByteContextModel(order=2, bits=16), context_keys(TEXTS, order=2, bits=16)
    if name == "gaussian":
        return GaussianNB(), COUNTS.toarray()
    model = {"multinomial": MultinomialNB(), "bernoulli": BernoulliNB(), "complement": ComplementNB(),
             "fisher": RobinsonFisher(), "logistic": OnlineLogistic(), "stack": FisherNBStack()}[name]
    return model, COUNTS


def _part(rows, idx):
    return rows.rows(idx) if hasattr(rows, "rows") else (
        [rows[i] for i in idx] if isinstance(rows, list) else rows[idx])


MODELS = ["multinomial", "bernoulli", "complement", "gaussian", "fisher", "logistic", "stack", "bytegrams",
          "context"]


@pytest.mark.parametrize("name", MODELS)
def test_the_first_partial_fit_needs_the_classes(name):
    model, rows = _rows(name)
    with pytest.raises(ConfigError, match="the first partial_fit of a .* needs classes"):
        model.partial_fit(_part(rows, [0, 1]), LABELS[:2])
    assert not hasattr(model, "classes_")              # refused: nothing learned


@pytest.mark.parametrize("name", MODELS)
def test_a_later_partial_fit_takes_the_first_calls_classes_in_any_order_and_no_others(name):
    model, rows = _rows(name)
    model.partial_fit(_part(rows, [0, 1]), LABELS[:2], classes=["ham", "spam"])
    model.partial_fit(_part(rows, [2]), LABELS[2:3], classes=["spam", "ham"])     # the same two: fine
    model.partial_fit(_part(rows, [3]), LABELS[3:])                               # none: fine
    with pytest.raises(ConfigError, match=r"classes \['ham', 'eggs'\] differ from the first partial_fit's"):
        model.partial_fit(_part(rows, [0]), LABELS[:1], classes=["ham", "eggs"])
