"""Class labels: the integer codes of the two-class case and label normalisation.

spamkit is multi-class; spam filtering is the common case. Class names are
strings in the corpus layer. Models sort their classes, so ``"ham" < "spam"``
gives ``HAM = 0`` and ``SPAM = 1`` and spam is the positive class everywhere.
"""

HAM = 0
SPAM = 1
HAM_NAME = "ham"
SPAM_NAME = "spam"
BINARY_CLASSES = (HAM_NAME, SPAM_NAME)

# Folder and column names that mean "ham" or "spam" in public corpora:
# the SpamAssassin public corpus (easy_ham, easy_ham_2, hard_ham, spam, spam_2),
# the TREC index ("spam"/"ham"), Ling-Spam ("legit"), and 0/1 label columns.
_ALIASES = {
    "ham": HAM_NAME, "easy_ham": HAM_NAME, "easy_ham_2": HAM_NAME,
    "hard_ham": HAM_NAME, "legit": HAM_NAME, "legitimate": HAM_NAME,
    "good": HAM_NAME, "nonspam": HAM_NAME, "non-spam": HAM_NAME, "0": HAM_NAME,
    "spam": SPAM_NAME, "spam_2": SPAM_NAME, "junk": SPAM_NAME, "bad": SPAM_NAME,
    "1": SPAM_NAME,
}


def normalise_label(name: str) -> str:
    """Map a label as written in a corpus to spamkit's class name.

    Known spellings of ham and spam become ``"ham"`` and ``"spam"``; any other
    name is a class of its own, lower-cased and stripped.

    Examples
    --------
    >>> normalise_label("easy_ham"), normalise_label(" SPAM "), normalise_label("Sports")
    ('ham', 'spam', 'sports')
    """
    key = name.strip().lower()
    return _ALIASES.get(key, key)
