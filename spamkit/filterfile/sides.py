"""A filter's side models: the byte-level models beside the token model, and the bytes they read.

Takes what a :class:`~spamkit.filterfile.spamfilter.SpamFilter` is given to score (raw bytes,
text, a :class:`~spamkit.parse.message.Message`, a
:class:`~spamkit.corpus.LabelledMessage`) and gives the inputs of the stack's combiner that
come from the raw bytes rather than the tokens: a context model's log-likelihood ratio per
symbol (:mod:`spamkit.models.context`) and the byte 4-gram model's log-odds
(:mod:`spamkit.models.bytegrams`), each fitted, learned, unlearned, scored and read back from a
filter file here. :class:`SideModels` is one of the classes
:class:`~spamkit.filterfile.spamfilter.SpamFilter` is made of (its methods are the filter's);
the filter holds the models (``context``, ``grams``) and the stack that weighs them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..common.errors import ConfigError, ModelFormatError
from ..corpus import LabelledMessage
from ..features.bytekeys import context_keys, packed_gram_rows
from ..models import FisherNBStack
from ..models.bytegrams import GRAM_FOLDS, ByteGramLogistic
from ..models.context import ByteContextModel
from ..parse.message import Message, parse_message, parsed_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

#: the bytes of each message a filter's context model reads by default: the measured best of
#: 1,000 / 1,500 / 3,000 / 5,000 (scripts/context_model.py --online; docs/results.md)
CONTEXT_BYTES = 3000


def parse_item(item) -> Message:
    """A :class:`Message` from a LabelledMessage, raw bytes, text or a Message."""
    if isinstance(item, Message):
        return item
    if isinstance(item, LabelledMessage):
        return parse_message(item.raw, item.kind)
    if isinstance(item, (bytes, bytearray)):
        return parse_message(bytes(item))
    if isinstance(item, str):
        return parse_message(item.encode("utf-8"), kind="text")
    raise ConfigError(f"cannot classify a {type(item).__name__}; pass messages as bytes, str or LabelledMessage")


def raw_of(item) -> bytes:
    """The bytes :func:`parse_item` parses: what a context model reads of a message."""
    if isinstance(item, (Message, LabelledMessage)):
        return item.raw
    if isinstance(item, (bytes, bytearray)):
        return bytes(item)
    if isinstance(item, str):
        return item.encode("utf-8")
    raise ConfigError(f"cannot classify a {type(item).__name__}; pass messages as bytes, str or LabelledMessage")


class SideModels:
    """The side models' part of :class:`~spamkit.filterfile.spamfilter.SpamFilter` (its methods
    take the filter as ``self``)."""

    #: the context model, the bytes it reads, the 4-gram model (set by the filter's constructor)
    context: ByteContextModel | None
    context_bytes: int
    grams: ByteGramLogistic | None
    # the filter's token model (a stack weighs the side models) and its classes, once fitted
    model: Any
    classes_: np.ndarray

    @property
    def reads_bytes(self) -> bool:
        """Whether the filter has side models, which read each message's raw bytes (a context
        model, byte 4-grams) besides its tokens."""
        return self.context is not None or self.grams is not None

    @property
    def side_bytes(self) -> int:
        """How many bytes of each raw message the side models read (the most either reads)."""
        return max(self.context_bytes if self.context is not None else 0,
                   self.grams.n_bytes if self.grams is not None else 0)

    def side_text(self, item) -> bytes:
        """The bytes of a message (an item as :func:`parse_item` takes it) the side models read:
        the first :attr:`side_bytes` of what the parser reads (:func:`spamkit.parse.message.parsed_bytes`,
        without spamkit's own tags), as :meth:`read` takes them."""
        if isinstance(item, Message):
            return item.raw[:self.side_bytes]
        kind = item.kind if isinstance(item, LabelledMessage) else "text" if isinstance(item, str) else "auto"
        return parsed_bytes(raw_of(item), kind)[:self.side_bytes]

    def context_keys(self, texts):
        """The context model's keys of ``texts`` (:func:`spamkit.features.bytekeys.context_keys`)."""
        return context_keys(texts, self.context.order, self.context.bits, self.context_bytes)

    def gram_rows(self, texts) -> list:
        """The 4-gram model's features of ``texts``, packed where the compiled loops are built
        (:func:`spamkit.features.bytekeys.packed_gram_rows`: a training holds them all until the
        combiner is fitted)."""
        if self.grams is None:
            raise ConfigError("this filter has no byte 4-gram model")
        return packed_gram_rows(texts, self.grams.n_bytes, self.grams.bits)

    def side_scores(self, texts) -> np.ndarray | None:
        """The stack's side inputs of messages from the bytes ``texts`` (:meth:`read`): the context
        model's log-likelihood ratio per symbol, then the 4-gram model's log-odds, shape (n,
        side models); None for a filter without side models."""
        if not self.reads_bytes:
            return None
        columns = []
        if self.context is not None:
            columns.append(self.context.mean_log_ratio(self.context_keys(texts)))
        if self.grams is not None:
            columns.append(self.grams.decision_function(self.gram_rows(texts)))
        return np.column_stack(columns)

    def learn_side(self, texts, y) -> None:
        """The side models learn messages' bytes (labels ``y``)."""
        if self.context is not None:
            self.context.partial_fit(self.context_keys(texts), np.asarray(y))
        if self.grams is not None:
            self.grams.partial_fit(self.gram_rows(texts), np.asarray(y), classes=self.classes_)

    def unlearn_side(self, texts, y) -> None:
        """The side models take back messages learned with labels ``y`` (exactly for the context
        model's counts; a step towards the other class for the 4-gram model)."""
        if self.context is not None:
            self.context.unlearn(self.context_keys(texts), np.asarray(y))
        if self.grams is not None:
            self.grams.unlearn(self.gram_rows(texts), np.asarray(y))

    def driver_reads_bytes(self, engine) -> bool:
        """Whether training with ``engine`` reads each message's bytes in this process: for side
        models, unless the engine's workers make the byte 4-grams' slots and there is no context
        model (:meth:`spamkit.jobs.engine.Engine.makes_gram_rows`)."""
        return self.reads_bytes and not engine.makes_gram_rows(self)

    def fit_side(self, texts, y, gram_rows=None) -> np.ndarray:
        """Fit the side models on the bytes ``texts`` of the training messages (labels ``y``; or,
        for the byte 4-gram model, on their slots ``gram_rows`` made elsewhere) and return what
        the stack's combiner is fitted on, shape (n, side models): each message's side scores
        held out: the context model's by the stack's own folds
        (:meth:`ByteContextModel.held_out_mean_log_ratio`), the 4-gram model's by its own
        (:meth:`ByteGramLogistic.held_out_scores`, ``folds``)."""
        columns = []
        k, folds = self.model.fold_assignment(y) if isinstance(self.model, FisherNBStack) else (0, None)
        if self.context is not None:
            keys = self.context_keys(texts)
            self.context.fit(keys, y)
            columns.append(self.context.held_out_mean_log_ratio(keys, y, folds) if k >= 2 else np.zeros(len(texts)))
        if self.grams is not None:
            rows = self.gram_rows(texts) if gram_rows is None else gram_rows
            if len(rows) != len(y):
                raise ConfigError(f"{len(rows)} messages' byte 4-grams for {len(y)} labels")
            self.grams.fit(rows, y)
            columns.append(self.grams.held_out_scores(rows, y) if k >= 2 else np.zeros(len(rows)))
        return np.column_stack(columns)

    @staticmethod
    def _load_context(path, manifest, model, arrays) -> tuple:
        """``(context model, bytes it reads)`` of a filter file, or ``(None, CONTEXT_BYTES)``;
        a stack with side inputs needs one, and nothing else may have one."""
        spec = manifest.get("extra", {}).get("context")
        if spec is None:
            return None, CONTEXT_BYTES
        try:
            params = {k: spec[k] for k in ("order", "beta", "bits")}
            context = ByteContextModel(**params)
            table = "packed" if "context_packed" in arrays else "table"      # dense: older files
            context.restore_state(model.classes_, {k: arrays[f"context_{k}"] for k in
                                                   (table, "class_count", "symbol_count")})
            context_bytes = spec["max_bytes"]
            context_keys([], context.order, context.bits, context_bytes)
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise ModelFormatError(f"{path}: damaged context model ({exc})") from None
        return context, context_bytes

    @staticmethod
    def _load_grams(path, manifest, model, arrays) -> ByteGramLogistic | None:
        """The 4-gram model of a filter file, or None; one needs a side input of the stack."""
        spec = manifest.get("extra", {}).get("grams")
        if spec is None:
            return None
        try:
            grams = ByteGramLogistic(spec["n_bytes"], spec["bits"], spec["rate"],
                                     spec.get("folds", GRAM_FOLDS))      # files before the setting: the default
            grams.restore_state(model.classes_, {k: arrays[f"grams_{k}"] for k in ("weights", "n_learned")})
        except (KeyError, TypeError, ValueError, IndexError, ConfigError) as exc:
            raise ModelFormatError(f"{path}: damaged 4-gram model ({exc})") from None
        return grams
