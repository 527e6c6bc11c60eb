"""Corpus readers on small fixtures built in tmp_path: every format, detection, order, errors."""

from __future__ import annotations

import io
import os
import re
import mailbox
import tarfile
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spamkit.corpus import Corpus, iter_corpora, require_classes
from spamkit.corpus.tree import natural_key
from spamkit.common.errors import CorpusError


def mail(subject: str, body: str = "hello", date: str = "Mon, 2 Apr 2007 10:00:00 +0000") -> bytes:
    return f"From: a@example.org\nSubject: {subject}\nDate: {date}\n\n{body}\n".encode()


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def read(corpus: Corpus):
    with corpus:
        return [(m.id, m.label, m.raw, m.kind) for m in corpus]


# ---------------------------------------------------------------- layouts

@pytest.fixture
def enron(tmp_path) -> Path:
    root = tmp_path / "enron1"
    # arrival numbers interleave the classes; file-system order is not arrival order
    write(root / "ham" / "0003.2001-05-01.kaminski.ham.txt", b"Subject: re: model\nsee the attached model\n")
    write(root / "spam" / "0002.2001-04-30.GP.spam.txt", b"Subject: cheap meds\nbuy now\n")
    write(root / "ham" / "0010.2001-06-01.kaminski.ham.txt", b"Subject: lunch\nnoon ?\n")
    write(root / "ham" / "0001.2001-04-29.kaminski.ham.txt", b"Subject: hello\nfirst\n")
    write(root / "Summary.txt", b"not a message")
    return root


def test_enron_folder_in_arrival_order_with_dates(enron):
    with Corpus(enron) as c:
        msgs = list(c)
        assert c.format == "enron"
    assert [m.id.split("/")[-1][:4] for m in msgs] == ["0001", "0002", "0003", "0010"]
    assert [m.label for m in msgs] == ["ham", "spam", "ham", "ham"]
    assert all(m.kind == "enron" for m in msgs)
    assert str(msgs[1].date) == "2001-04-30"
    assert c.stats.per_class == Counter(ham=3, spam=1)


def _tar(src: Path, dest: Path, mode: str) -> Path:
    with tarfile.open(dest, mode) as tar:
        tar.add(src, arcname=src.name)
    return dest


@pytest.mark.parametrize("suffix, mode", [(".tar.gz", "w:gz"), (".tar.bz2", "w:bz2"), (".tar", "w"),
                                          (".tar.xz", "w:xz")])
def test_enron_inside_tar_archives_equals_folder(enron, tmp_path, suffix, mode):
    archive = _tar(enron, tmp_path / f"e{suffix}", mode)
    with Corpus(archive) as c:
        assert c.format == "enron" and c.container == suffix[1:]
        got = [(m.id, m.label, m.raw) for m in c]
    expected = [(f"enron1/{i}", label, raw) for i, label, raw, _ in read(Corpus(enron))]
    assert got == expected


def test_zip_archive(enron, tmp_path):
    archive = tmp_path / "e.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for p in sorted(enron.rglob("*")):
            if p.is_file():
                z.write(p, f"enron1/{p.relative_to(enron)}")
    with Corpus(archive) as c:
        assert (c.format, c.container) == ("enron", "zip")
        assert [m.label for m in c] == ["ham", "spam", "ham", "ham"]


def test_archive_named_wrongly_is_detected_by_content(enron, tmp_path):
    archive = _tar(enron, tmp_path / "corpus.dat", "w:gz")
    with Corpus(archive) as c:
        assert c.format == "enron"


@pytest.fixture
def trec(tmp_path) -> Path:
    root = tmp_path / "trec"
    for i in range(1, 6):
        write(root / "data" / f"inmail.{i}", mail(f"m{i}"))
    # index order is delivery order, deliberately not name order
    write(root / "full" / "index", b"spam ../data/inmail.3\nham ../data/inmail.1\n\nspam ../data/inmail.5\n"
          b"ham ../data/inmail.2\nspam ../data/inmail.4\n")
    return root


def test_trec_index_order_preserved(trec):
    for path in (trec, trec / "full", trec / "full" / "index"):
        with Corpus(path) as c:
            msgs = list(c)
            assert c.format == "trec"
        assert [m.id for m in msgs] == [f"data/inmail.{i}" for i in (3, 1, 5, 2, 4)]
        assert [m.label for m in msgs] == ["spam", "ham", "spam", "ham", "spam"]
        assert c.stats.skipped == Counter({"blank index line": 1})
        assert str(msgs[0].date) == "2007-04-02"


def test_trec_in_archive(trec, tmp_path):
    archive = _tar(trec, tmp_path / "trec.tgz", "w:gz")
    with Corpus(archive) as c:
        assert [m.id for m in c] == [f"trec/data/inmail.{i}" for i in (3, 1, 5, 2, 4)]


def test_trec_bad_line_and_missing_file(trec):
    index = trec / "full" / "index"
    index.write_bytes(b"spam ../data/inmail.1\nthis line is wrong here\n")
    with pytest.raises(CorpusError, match=r"index:2: expected '<spam\|ham> <path>'"):
        read(Corpus(trec))
    index.write_bytes(b"spam ../data/inmail.99\n")
    with pytest.raises(CorpusError, match=r"index:1: message file '../data/inmail.99' is missing"):
        read(Corpus(trec))


def test_spamassassin_layout(tmp_path):
    root = tmp_path / "sa"
    write(root / "easy_ham" / "00001.abc", mail("e1"))
    write(root / "easy_ham" / "cmds", b"mv 00001 00001.abc\n")
    write(root / "hard_ham" / "00002.def", mail("h1"))
    write(root / "spam_2" / "00003.fff", mail("s1"))
    with Corpus(root) as c:
        msgs = list(c)
        assert c.format == "spamassassin"
    assert [(m.id, m.label) for m in msgs] == [("easy_ham/00001.abc", "ham"), ("hard_ham/00002.def", "ham"),
                                                ("spam_2/00003.fff", "spam")]


def test_class_folders_any_names_and_natural_order(tmp_path):
    root = tmp_path / "news"
    for name in ("m10", "m2", "m1"):
        write(root / "sports" / name, b"goal scored in the final minute")
    write(root / "politics" / "a.eml", mail("vote"))
    write(root / "politics" / "deeper" / "b.eml", mail("poll"))
    write(root / "politics" / ".DS_Store", b"junk")
    with Corpus(root, classes=None) as c:
        msgs = list(c)
        assert c.format == "folders"
    assert [(m.id, m.label) for m in msgs] == [
        ("politics/a.eml", "politics"), ("politics/deeper/b.eml", "politics"),
        ("sports/m1", "sports"), ("sports/m2", "sports"), ("sports/m10", "sports")]
    assert msgs[-1].kind == "auto"


def test_class_folder_holding_maildir_and_mh(tmp_path):
    root = tmp_path / "c"
    root.mkdir()
    md = mailbox.Maildir(root / "ham", create=True)
    md.add(mail("one"))
    md.add(mail("two"))
    mh = mailbox.MH(root / "spam", create=True)
    mh.add(mail("three"))
    with Corpus(root) as c:
        labels = [m.label for m in c]
    assert sorted(labels) == ["ham", "ham", "spam"]


def test_tsv_sms_like(tmp_path):
    path = write(tmp_path / "SMS", "ham\tOk lar...\nspam\tFree entry £100\n\nham\tsee you\n".encode())
    with Corpus(path) as c:
        msgs = list(c)
        assert c.format == "tsv"
        assert c.stats.skipped == Counter({"blank line": 1})
    assert [(m.id, m.label, m.raw.decode(), m.kind) for m in msgs] == [
        ("SMS:1", "ham", "Ok lar...", "text"), ("SMS:2", "spam", "Free entry £100", "text"),
        ("SMS:4", "ham", "see you", "text")]


def test_tsv_non_utf8_line_kept_and_counted(tmp_path):
    path = write(tmp_path / "t.tsv", b"ham\tok\nspam\twin \xa3100\n")
    with Corpus(path) as c:
        msgs = list(c)
        assert msgs[1].raw.decode() == "win £100"
        assert sum(c.stats.skipped.values()) == 1


def test_tsv_unknown_label(tmp_path):
    path = write(tmp_path / "t.tsv", b"ham\tok\nspma\toops\n")
    with pytest.raises(CorpusError, match=r"t.tsv:2: unknown label 'spma'; expected one of ham, spam"):
        read(Corpus(path))
    assert [m[1] for m in read(Corpus(path, classes=None))] == ["ham", "spma"]


def test_csv_with_header_and_multiline_field(tmp_path):
    path = write(tmp_path / "spam.csv", b'v1,v2,,\nham,"Go until jurong point",,\nspam,"Free\nentry, win",,\n')
    with Corpus(path) as c:
        msgs = list(c)
        assert c.format == "csv"
    assert [(m.label, m.raw) for m in msgs] == [("ham", b"Go until jurong point"), ("spam", b"Free\nentry, win")]
    assert msgs[1].id == "spam.csv:4"          # the line where the record ends


def test_mbox_with_label(tmp_path):
    box = mailbox.mbox(tmp_path / "Junk.mbox")
    for s in ("a", "b", "c"):
        box.add(mail(s, body="From the start\nline"))
    box.flush()
    with Corpus(tmp_path / "Junk.mbox", label="spam") as c:
        msgs = list(c)
        assert c.format == "mbox"
    assert [m.id for m in msgs] == ["Junk.mbox#1", "Junk.mbox#2", "Junk.mbox#3"]
    assert all(m.label == "spam" and m.kind == "rfc822" for m in msgs)
    # the body line that started with "From " was quoted by the writer and stays in the message
    assert b">From the start" in msgs[0].raw
    assert msgs[0].raw.startswith(b"From: a@example.org")


def test_mbox_unlabelled(tmp_path):
    path = write(tmp_path / "inbox", b"From x@y Mon Apr  2 10:00:00 2007\nSubject: a\n\nbody\n")
    with Corpus(path) as c:
        msgs = list(c)
        assert not c.labelled
    assert msgs[0].label is None and msgs[0].raw == b"Subject: a\n\nbody\n"


def test_maildir_new_then_cur(tmp_path):
    md = mailbox.Maildir(tmp_path / "INBOX", create=True)
    md.add(mail("unread"))
    key = md.add(mail("read"))
    msg = md.get_message(key)
    msg.set_subdir("cur")
    md[key] = msg
    with Corpus(tmp_path / "INBOX", label="ham") as c:
        assert c.format == "maildir"
        subjects = [m.raw.split(b"Subject: ")[1].split(b"\n")[0] for m in c]
    assert sorted(subjects) == [b"read", b"unread"]


def test_mh_numeric_order(tmp_path):
    root = tmp_path / "mh"
    for n in (10, 2, 1):
        write(root / str(n), mail(f"n{n}"))
    write(root / ".mh_sequences", b"unseen: 1\n")
    with Corpus(root, label="ham") as c:
        assert c.format == "mh"
        assert [m.id for m in c] == ["1", "2", "10"]


def test_eml_folder_and_single_file(tmp_path):
    root = tmp_path / "eml"
    write(root / "b.eml", mail("b"))
    write(root / "a.eml", mail("a"))
    with Corpus(root, label="spam") as c:
        assert c.format == "eml"
        assert [m.id for m in c] == ["a.eml", "b.eml"]
    with Corpus(root / "a.eml") as c:
        assert c.format == "eml"
        assert [m.label for m in c] == [None]


def test_labelled_corpus_refuses_a_class(enron):
    with pytest.raises(CorpusError, match="carries its own labels"):
        Corpus(enron.parent / "enron1", format="enron", label="ham")


# ---------------------------------------------------------------- errors

def test_missing_path():
    with pytest.raises(CorpusError, match="no such file or folder"):
        Corpus("/no/such/corpus")


def test_unknown_format(tmp_path):
    with pytest.raises(CorpusError, match="unknown format 'outlook'"):
        Corpus(tmp_path, format="outlook")


def test_empty_corpus(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusError, match="empty folder"):
        Corpus(tmp_path / "empty")
    write(tmp_path / "e.tsv", b"\n\n")
    with pytest.raises(CorpusError, match="no messages found"):
        read(Corpus(tmp_path / "e.tsv", format="tsv"))


def test_damaged_archive(tmp_path, enron):
    archive = _tar(enron, tmp_path / "e.tar.gz", "w:gz")
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorpusError, match="damaged tar.gz archive"):
        Corpus(archive)


def test_unreadable_file(tmp_path):
    import os
    path = write(tmp_path / "x.tsv", b"ham\thi\n")
    path.chmod(0)
    if os.access(path, os.R_OK):               # running as root: permissions do not apply
        pytest.skip("root can read anything")
    with pytest.raises(CorpusError, match="permission denied"):
        Corpus(path)


def test_single_class_where_two_are_needed():
    with pytest.raises(CorpusError, match="needs at least 2 classes, found ham: 3"):
        require_classes(Counter(ham=3), "corpus")
    with pytest.raises(CorpusError, match="2 messages have no class"):
        require_classes(Counter({None: 2, "ham": 1}), "corpus")
    require_classes(Counter(ham=3, spam=1), "corpus")


def test_iter_corpora_prefixes_ids(tmp_path):
    a = write(tmp_path / "a.tsv", b"ham\tx\n")
    b = write(tmp_path / "b.tsv", b"spam\ty\n")
    ids = [m.id for m in iter_corpora([Corpus(a), Corpus(b)])]
    assert ids == ["a.tsv:a.tsv:1", "b.tsv:b.tsv:1"]


def test_reading_is_streaming(tmp_path):
    # A reader is a generator: taking one message does not read the others.
    root = tmp_path / "c"
    write(root / "ham" / "1", mail("x"))
    write(root / "spam" / "2", mail("y"))
    (root / "spam" / "3").mkdir(parents=True)          # unreadable as a message only if reached
    it = iter(Corpus(root))
    first = next(it)
    assert first.label == "ham"


def test_natural_key():
    assert sorted(["inmail.10", "inmail.9", "inmail.100"], key=natural_key) == ["inmail.9", "inmail.10", "inmail.100"]


def test_a_file_named_with_digits_int_does_not_read_is_still_listed(tmp_path):
    # "²" is str.isdigit() but not a decimal digit: the key once called int() on it and the
    # whole corpus failed to list
    write(tmp_path / "ham" / "²", mail("superscript"))
    write(tmp_path / "ham" / "m10", mail("ten"))
    write(tmp_path / "ham" / "m9", mail("nine"))
    with Corpus(tmp_path, classes=None) as c:
        assert [m.id for m in c] == ["ham/m9", "ham/m10", "ham/²"]


def _natural_key_definition(name: str) -> tuple:
    """The key's definition: the name as (0, value, digits) for each run of decimal digits and
    (1, 0, text) for the text between, empty text left out: digits before text at the same
    place, digit runs by value then as written."""
    return tuple([(0, int(part), part) if part.isdecimal() else (1, 0, part)
                  for part in re.split(r"(\d+)", name) if part])


@given(st.lists(st.text(alphabet=st.sampled_from("ab.-_0129\u00b2\u0663 "), max_size=12), max_size=8)
       | st.lists(st.text(max_size=12), max_size=8))
def test_natural_key_orders_digit_runs_by_value_and_never_raises(names):
    keys = [natural_key(n) for n in names]
    for name, key in zip(names, keys):
        assert "".join(p if isinstance(p, str) else p[1] for p in key) == name   # every character, in order
        for i, part in enumerate(key):
            if i % 2:
                assert part[1].isdecimal() and part[0] == int(part[1])
            else:
                assert not any(c.isdecimal() for c in part)
    # the compact key orders names exactly as the definition does (arabic-indic digits and "²" included)
    assert sorted(names, key=natural_key) == sorted(names, key=_natural_key_definition)
    for a, b in zip(names, names[1:]):
        assert (natural_key(a) < natural_key(b)) == (_natural_key_definition(a) < _natural_key_definition(b))
    assert sorted(["a10", "a9", "a09", "b", "a"], key=natural_key) == ["a", "a09", "a9", "a10", "b"]


def test_header_end_equals_the_regular_expression():
    # sniff_date finds the header block's end with two bytes.find calls; the definition is the
    # regular expression it replaced
    import re
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from spamkit.corpus.base import _header_end
    pattern = re.compile(rb"\r?\n\r?\n")

    @settings(max_examples=3000, deadline=None)
    @given(st.lists(st.sampled_from([b"\r", b"\n", b"a", b"Date: x"]), max_size=20).map(b"".join),
           st.integers(0, 30))
    def check(raw, limit):
        m = pattern.search(raw, 0, limit)
        assert _header_end(raw, limit) == (m.start() if m else limit)

    check()


def test_date_field_is_found_as_the_multiline_search_finds_it():
    # sniff_date finds the first line that starts with "date:" (any case) by bytes.find in a
    # lower-cased copy of the header block; the definition is the regular-expression search
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from spamkit.corpus.base import _DATE_LINE, _date_field, _header_end

    @settings(max_examples=3000, deadline=None)
    @given(st.lists(st.sampled_from([b"\r", b"\n", b"\n\n", b"a", b"Date:", b"DATE: ", b"dAtE:\t", b"date",
                                     b" ", b"\t", b"x-date: 1", b"1 Jan 2007", b"\xc4", b"D", b"ate:"]),
                    max_size=14).map(b"".join))
    def check(raw):
        end = _header_end(raw, 65536)
        expected = _DATE_LINE.search(raw, 0, end)
        got = _date_field(raw, end)
        assert (got and (got.span(), got.group(1))) == (expected and (expected.span(), expected.group(1)))

    check()


def test_common_dates_are_read_as_the_general_parser_reads_them():
    # sniff_date reads "Sun, 8 Apr 2007 13:07:21 +0200" itself; on every such shape, valid or
    # not, it must give what email.utils.parsedate_to_datetime gives (None where that raises)
    import email.utils
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from spamkit.corpus.base import sniff_date

    def general(value: str):
        try:
            return email.utils.parsedate_to_datetime(value).date()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None

    @settings(max_examples=3000, deadline=None)
    @given(st.sampled_from(["", "Sun, ", "Xyz,", "Mon,  "]), st.integers(0, 40),
           st.sampled_from(["Jan", "feb", "MAR", "Apr", "Xyz", "Dec"]), st.integers(0, 2100).map("{:04d}".format),
           st.integers(0, 30), st.integers(0, 70), st.sampled_from(["", ":00", ":59", ":60", ":07"]),
           st.sampled_from(["+0200", "-0000", "+2359", "+2400", "-0560", "+0099"]),
           st.sampled_from(["", " (PDT)", "  ", "\r"]))
    def check(dow, day, month, year, hour, minute, second, zone, tail):
        value = f"{dow}{day} {month} {year} {hour:02d}:{minute:02d}{second} {zone}{tail}"
        raw = f"From: a@b\nDate: {value}\nSubject: x\n\nbody".encode()
        assert sniff_date(raw) == general(value.rstrip("\r"))

    check()


def _tarfile_index(path: Path) -> list:
    """(name, is folder, size, bytes) of every file and folder, as the standard library reads them."""
    with tarfile.open(path) as tf:
        return [(m.name, m.isdir(), m.size if m.isfile() else 0, tf.extractfile(m).read() if m.isfile() else b"")
                for m in tf.getmembers() if m.isfile() or m.isdir()]


def _plain_index(path: Path) -> list | None:
    import gzip
    from spamkit.corpus.tarindex import plain_tar_index
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = io.BytesIO(f.read())
    index = plain_tar_index(data)
    if index is None:
        return None
    out = []
    for name, is_dir, size, offset in index:
        data.seek(offset)
        out.append((name, is_dir, size, data.read(size)))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("relative", ["trec07p-dev/trec07p-dev.tar.gz", "csdmc2010/csdmc2010.tar.gz",
                                      *[f"enron-spam/enron{i}.tar.gz" for i in range(1, 7)]])
def test_plain_tar_index_equals_tarfile_on_the_shared_archives(relative):
    """spamkit.corpus.tarindex.plain_tar_index reads the members' headers itself (a tenth of the cost of
    TarInfo objects): on every archive of the shared corpora the same names, kinds, sizes and bytes
    as tarfile."""
    from conftest import shared_corpus
    path = shared_corpus(relative)
    plain = _plain_index(path)
    assert plain is not None, "every shared archive is made of plain members"
    assert plain == _tarfile_index(path)


def test_plain_tar_index_reads_plain_members_and_leaves_the_rest_to_tarfile(tmp_path):
    from spamkit.corpus.tarindex import plain_tar_index
    def member(tf, name, data=b"", kind=tarfile.REGTYPE):
        info = tarfile.TarInfo(name)
        info.type, info.size = kind, len(data)
        tf.addfile(info, io.BytesIO(data) if data else None)

    plain = tmp_path / "plain.tar"
    with tarfile.open(plain, "w", format=tarfile.USTAR_FORMAT) as tf:
        member(tf, "top", kind=tarfile.DIRTYPE)
        member(tf, "top/a.eml", b"Subject: a\n\nbody a\n")
        member(tf, "top/" + "d" * 120 + "/b.eml", b"x" * 1025)          # a ustar prefix
        member(tf, "top/link", kind=tarfile.SYMTYPE)                    # skipped, as tarfile's isfile() is False
        member(tf, "top/empty.eml", b"")
    assert _plain_index(plain) == _tarfile_index(plain)
    assert [n for n, *_ in _plain_index(plain)] == ["top", "top/a.eml", "top/" + "d" * 120 + "/b.eml", "top/empty.eml"]
    for fmt, name in ((tarfile.GNU_FORMAT, "g" * 150 + ".eml"), (tarfile.PAX_FORMAT, "p" * 300 + ".eml")):
        other = tmp_path / f"other{fmt}.tar"
        with tarfile.open(other, "w", format=fmt) as tf:
            member(tf, name, b"long name")
        assert _plain_index(other) is None                              # a long name: tarfile's job
        with Corpus(other, format="eml") as corpus:                     # and the tree still reads it
            assert [m.raw for m in corpus] == [b"long name"]
    damaged = bytearray(plain.read_bytes())
    damaged[600] ^= 0xFF                                                # the second header's checksum fails
    (tmp_path / "bad.tar").write_bytes(bytes(damaged))
    assert _plain_index(tmp_path / "bad.tar") is None
    (tmp_path / "zeros.tar").write_bytes(bytes(10240))
    assert _plain_index(tmp_path / "zeros.tar") is None                # tarfile says "empty file"

    # the checksum is the exact byte sum, also above Adler-32's modulus (65,521), where one
    # adler32 of the whole header would be off by it: a header of 0xFF bytes in its name and
    # prefix sums to about 68,000
    high = tmp_path / "high.tar"
    with tarfile.open(high, "w", format=tarfile.USTAR_FORMAT, encoding="latin-1") as tf:
        member(tf, "\xff" * 150 + "/" + "\xff" * 99, b"high bytes")
    header = bytearray(high.read_bytes()[:512])
    true_sum = int(header[148:154], 8)
    assert true_sum > 65521
    plain_index = plain_tar_index(io.BytesIO(high.read_bytes()))
    assert plain_index is not None and plain_index[0][2] == len(b"high bytes")
    whole = bytearray(high.read_bytes())
    whole[148:156] = b"%06o\0 " % (true_sum - 65521)                   # off by the modulus: refused
    assert plain_tar_index(io.BytesIO(bytes(whole))) is None


def _index_both_ways(data: bytes):
    """plain_tar_index of ``data`` with the compiled header scan and with the Python loop alone."""
    from spamkit.corpus import tarindex
    compiled = tarindex.plain_tar_index(io.BytesIO(data))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tarindex, "_TAR_HEADERS", None)
        python = tarindex.plain_tar_index(io.BytesIO(data))
    return compiled, python


_NUMBER_FORMS = [b"%011o\0", b"%011o ", b" %010o\0", b"%o\0\0\0\0\0\0\0\0\0\0\0", b"+%010o\0", b"0o%09o\0",
                 b"%011o\n", b"\x80\0\0\0\0\0\0\0\0\0\0%c", b"", b"%011o\0\0\0\0"]
_CHECKSUM_FORMS = [b"%06o\0 ", b"%07o\0", b" %06o\0", b"%06o  ", b"%o\0", b"0%07o"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.just(b"0"), st.sampled_from([b"0", b"\0", b"7", b"5", b"1", b"2", b"3", b"4", b"6",
                                                                     b"L", b"x", b"g"])),
                          st.binary(min_size=1, max_size=12).filter(lambda b: b"\0" not in b),
                          st.booleans(), st.one_of(st.just(b""), st.binary(max_size=4).filter(lambda b: b"\0" not in b)),
                          st.integers(0, 1100),
                          st.one_of(st.just(0), st.just(0), st.sampled_from(range(len(_NUMBER_FORMS)))),
                          st.one_of(st.just(0), st.just(0), st.sampled_from(range(len(_CHECKSUM_FORMS)))),
                          st.sampled_from([False] * 6 + [True])), min_size=1, max_size=5),
       st.booleans())
def test_the_compiled_tar_header_scan_gives_what_the_python_loop_gives(members, end_marker):
    # speedups.tar_headers reads the canonical headers and leaves every other one to the Python
    # loop: on headers with every kind of type, name, ustar prefix, number and checksum spelling
    # (signs, "0o", base-256, a bad sum) the index is the same, None included
    out = bytearray()
    for kind, name, slash, prefix, size, size_form, sum_form, bad_sum in members:
        header = bytearray(512)
        header[:len(name) + slash] = name + (b"/" if slash else b"")
        header[100:108], header[108:116], header[116:124] = b"0000644\0", b"0000000\0", b"0000000\0"
        form = _NUMBER_FORMS[size_form]
        field = (form % size if b"%" in form.replace(b"%c", b"") else (form % (size & 0xFF) if b"%c" in form else form))
        header[124:136] = field[:12].ljust(12, b"\0")
        header[136:148] = b"00000000000\0"
        header[156:157] = kind
        header[257:265] = b"ustar\x0000"
        header[345:345 + len(prefix)] = prefix
        header[148:156] = b" " * 8
        total = sum(header) + (1 if bad_sum else 0)
        form = _CHECKSUM_FORMS[sum_form]
        header[148:156] = (form % total)[:8].ljust(8, b"\0")
        out += header + bytes((size + 511) // 512 * 512)
    if end_marker:
        out += bytes(1024)
    compiled, python = _index_both_ways(bytes(out))
    assert compiled == python


@pytest.mark.slow
@pytest.mark.parametrize("relative", ["trec07p-dev/trec07p-dev.tar.gz", "enron-spam/enron3.tar.gz"])
def test_the_compiled_tar_header_scan_on_shared_archives(relative):
    import gzip

    from conftest import compiled_expected, shared_corpus
    from spamkit.corpus import tarindex
    assert tarindex._TAR_HEADERS is not None or not compiled_expected(), "the compiled module is built in CI"
    with gzip.open(shared_corpus(relative), "rb") as f:
        data = f.read()
    compiled, python = _index_both_ways(data)
    assert compiled is not None and compiled == python


def _listing_by_definition(members):
    """An archive's folders as ArchiveTree._add defines them, member by member: each member's
    entry in its folder (the last one of a name wins) after asserting every parent folder."""
    dirs, files = {"": {}}, {}
    from spamkit.corpus.tree import Entry
    for name, is_dir, size in members:
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if not parts or ".." in parts:
            continue
        for depth in range(len(parts) - 1):
            dirs.setdefault("/".join(parts[:depth]), {})[parts[depth]] = Entry(parts[depth], True, 0)
            dirs.setdefault("/".join(parts[:depth + 1]), {})
        dirs.setdefault("/".join(parts[:-1]), {})[parts[-1]] = Entry(parts[-1], is_dir, size)
        if is_dir:
            dirs.setdefault("/".join(parts), {})
        else:
            files["/".join(parts)] = name
    return dirs, files


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(["a", "b", ".", "..", ""]), min_size=1, max_size=4).map("/".join),
                          st.booleans(), st.integers(0, 2)), max_size=15))
def test_an_archive_listing_lists_each_folders_parents_once_with_the_same_result(members):
    # ArchiveTree._add asserts a folder's parents the first time it sees the folder (and again
    # after a member replaced a listed folder's entry): the same listing as doing it every time
    from spamkit.corpus.tree import ArchiveTree
    tree = ArchiveTree.__new__(ArchiveTree)
    tree._dirs, tree._files, tree._listed = {"": {}}, {}, {""}
    for name, is_dir, size in members:
        tree._add(name, is_dir, size, name)
    assert (tree._dirs, tree._files) == _listing_by_definition(members)


@pytest.mark.parametrize("in_child", [True, False])
@pytest.mark.parametrize("with_isal", [True, False])
@pytest.mark.parametrize("suffix", ["tar.gz", "tar.bz2", "tar.xz", "tar"])
def test_a_compressed_archive_is_read_while_it_is_decompressed(suffix, with_isal, in_child, tmp_path, monkeypatch):
    # the archive is decompressed by a child process (where this process may fork) or a
    # background thread (several 1 MB blocks here) while its headers are indexed; every member
    # comes back as tarfile reads it, and a cut archive is "damaged" however far the index got
    import builtins
    import random
    from spamkit.corpus import archives
    from spamkit.corpus.tree import ArchiveTree
    monkeypatch.setattr(archives, "_may_fork", lambda: in_child)
    if not with_isal:
        real_import = builtins.__import__
        monkeypatch.setattr(builtins, "__import__", lambda name, *a, **k: (_ for _ in ()).throw(ImportError(name))
                            if name == "isal" else real_import(name, *a, **k))
    rng = random.Random(3)
    path = tmp_path / f"mail.{suffix}"
    with tarfile.open(path, "w:" + ("" if suffix == "tar" else suffix.split(".")[1])) as tf:
        for i in range(300):
            data = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 12000)))
            info = tarfile.TarInfo(f"box/ham/{i}.eml")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    expected = {name: data for name, is_dir, _, data in _tarfile_index(path) if not is_dir}
    archive = ArchiveTree(path)
    try:
        assert {f"box/ham/{e.name}": archive.read(f"box/ham/{e.name}") for e in archive.entries("box/ham")} == expected
        assert archive.read_span("box/ham/7.eml", 5, 40) == expected["box/ham/7.eml"][5:40]
        spool = archive._spool if suffix != "tar" else None
        assert spool is None or (spool._thread is None and spool._child is None)   # done, and reaped
    finally:
        archive.close()
    if suffix != "tar":
        whole = path.read_bytes()
        for cut in (len(whole) // 2, len(whole) - 20):
            path.write_bytes(whole[:cut])
            with pytest.raises(CorpusError, match=f"damaged ({suffix} archive|{suffix[4:]} file: its beginning)"):
                ArchiveTree(path)


def test_an_opened_archive_leaves_no_thread_running(tmp_path, enron, monkeypatch):
    # workers fork only from a process with one thread (spamkit.common.processes): the thread that
    # decompresses an archive has ended by the time the corpus is open, even one that lingers
    # after its last byte
    import threading
    import time
    from spamkit.corpus import tree as module
    real_fill = module.Spool._fill

    def lingering_fill(self, opener, path):
        real_fill(self, opener, path)
        time.sleep(0.2)

    monkeypatch.setattr(module.Spool, "_fill", lingering_fill)
    archive = _tar(enron, tmp_path / "e.tar.gz", "w:gz")
    before = threading.active_count()
    tree = module.ArchiveTree(archive)
    assert threading.active_count() == before
    tree.close()


def test_archives_decompressed_ahead_read_the_same_and_leave_nothing_behind(tmp_path, enron, monkeypatch):
    # decompressing_ahead starts every compressed archive's decompression before the corpora are
    # opened in turn: the same messages; an archive the block did not open is stopped and its
    # temporary file closed; no thread outlives the block; a damaged archive still says so
    import threading
    from spamkit.corpus import archives as module
    first = _tar(enron, tmp_path / "one.tar.gz", "w:gz")
    second = _tar(enron, tmp_path / "two.tar.bz2", "w:bz2")
    plain = _tar(enron, tmp_path / "three.tar", "w")
    expected = {p: [(m.id, m.label, m.raw) for m in Corpus(p)] for p in (first, second, plain)}
    spools = []
    real_spool = module.Spool
    monkeypatch.setattr(module, "Spool", lambda *a: spools.append(real_spool(*a)) or spools[-1])
    before = threading.active_count()
    with module.decompressing_ahead([first, second, plain, tmp_path / "missing.tar.gz", enron]):
        assert len(spools) == 3                         # each archive once, the plain .tar only opened
        assert {s.serial for s in spools} <= module.open_spools()
        with Corpus(first) as c:
            assert [(m.id, m.label, m.raw) for m in c] == expected[first]
            assert c.tree._spool is spools[0]           # the one started ahead
        with Corpus(plain) as c:
            assert [(m.id, m.label, m.raw) for m in c] == expected[plain]
            assert c.tree._spool is spools[2]
    assert threading.active_count() == before
    assert spools[1].file.closed                        # never opened: stopped and closed
    assert module._AHEAD == {} and module.open_spools().isdisjoint({s.serial for s in spools})
    with module.decompressing_ahead([second]):
        with Corpus(second) as c:
            assert [(m.id, m.label, m.raw) for m in c] == expected[second]
    whole = first.read_bytes()
    first.write_bytes(whole[: len(whole) // 2])
    with module.decompressing_ahead([first]):
        with pytest.raises(CorpusError, match="damaged tar.gz archive"):
            Corpus(first)
    assert module._AHEAD == {} and threading.active_count() == before


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from([b"\n", b"\r", b"\r\n", b"x", b"Date: 1 Jan 2020 00:00:00 +0000"]), max_size=30),
       st.integers(0, 200))
def test_the_header_block_ends_where_its_definition_says(pieces, limit):
    # _header_end: where \r?\n\r?\n first matches within raw[:limit] (else limit), by two finds
    import re
    from spamkit.corpus.base import _header_end
    raw = b"".join(pieces)
    match = re.search(rb"\r?\n\r?\n", raw[:limit])
    assert _header_end(raw, limit) == (match.start() if match else limit)


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_a_compressed_archive_with_long_names_is_read_by_tarfile_through_the_spool(fmt, tmp_path):
    # long names are tarfile's job; it reads the decompressed archive through the same spool
    path = tmp_path / "long.tar.gz"
    with tarfile.open(path, "w:gz", format=fmt) as tf:
        for i in range(50):
            data = (b"Subject: m%d\n\nbody " % i) * 200
            info = tarfile.TarInfo("d/" + "x" * 150 + f"{i:02d}.eml")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    with Corpus(path, format="eml") as corpus:
        raws = [m.raw for m in corpus]
    assert raws == [(b"Subject: m%d\n\nbody " % i) * 200 for i in range(50)]


@settings(max_examples=60, deadline=None)
@given(reads=st.lists(st.tuples(st.integers(0, 70_000), st.integers(0, 40_000)), min_size=1, max_size=40),
       kind=st.sampled_from(["plain", "gz"]))
def test_spool_reads_give_the_archive_bytes_at_any_offsets_in_any_order(reads, kind, tmp_path_factory):
    # whatever the order and sizes of the reads (past the end of the file too), while the
    # archive is still being decompressed or after, the bytes are the file's
    import gzip
    import os
    from spamkit.corpus import archives as module
    folder = tmp_path_factory.mktemp("spool")
    data = os.urandom(1000) * 60                                  # 60,000 bytes
    path = folder / ("a.tar" if kind == "plain" else "a.tar.gz")
    path.write_bytes(data if kind == "plain" else gzip.compress(data))
    spool = module.Spool(path, None if kind == "plain" else module.gzip_open)
    try:
        for offset, n in reads:
            assert spool.read_at(offset, n) == data[offset:offset + n]
    finally:
        spool.close()


def test_a_read_that_keeps_the_gil_is_os_pread(tmp_path):
    # Spool.read_at reads members through speedups.pread_held (no GIL hand-over): the same bytes
    # as os.pread, short at the end of the file, and the same errors
    import os
    from spamkit.common.compiled import speedups
    module = speedups()
    if module is None:
        pytest.skip("spamkit.common.speedups is not in use")
    path = tmp_path / "f"
    path.write_bytes(bytes(range(256)) * 40)
    fd = os.open(path, os.O_RDONLY)
    try:
        for offset, n in ((0, 0), (0, 10), (100, 5000), (10_000, 500), (10_240, 1), (20_000, 3)):
            assert module.pread_held(fd, n, offset) == os.pread(fd, n, offset)
        with pytest.raises(ValueError):
            module.pread_held(fd, -1, 0)
    finally:
        os.close(fd)
    with pytest.raises(OSError):
        module.pread_held(fd, 10, 0)                       # closed


def test_message_header_end_equals_the_regular_expression():
    # spamkit.parse.markup.header_end (tagging, learning, split_tags) finds the empty line with two
    # bytes.find calls; the definition is the regular expression it replaced: an empty line at the
    # very start, or a line end followed by an empty line (LF or CRLF), whichever comes first
    import re
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from spamkit.parse.markup import header_end
    pattern = re.compile(rb"(?:\A|(\n))\r?\n")

    @settings(max_examples=3000, deadline=None)
    @given(st.lists(st.sampled_from([b"\r", b"\n", b"a", b"A: b"]), max_size=20).map(b"".join))
    def check(raw):
        m = pattern.search(raw)
        assert header_end(raw) == (len(raw) if m is None else m.start() + 1 if m.group(1) else 0)

    check()
    assert header_end(b"A: 1\r\nB: 2\n\r\nbody\n\nmore") == 11          # the CRLF empty line comes first
    assert header_end(b"A: 1\n\nB\r\n\r\n") == 5


def test_a_gzip_archive_damaged_from_its_start_is_reported_as_damaged(tmp_path):
    """Deflate data damaged in the archive's first block: gzip's reader raises zlib.error (not an
    OSError) while the archive's kind is sniffed; the corpus reports a damaged archive, naming
    it, instead of a traceback."""
    import random
    from spamkit.corpus.archives import archive_kind
    from spamkit.corpus.tree import ArchiveTree
    rng = random.Random(7)
    (tmp_path / "src" / "ham").mkdir(parents=True)
    (tmp_path / "src" / "ham" / "1.eml").write_bytes(bytes(rng.getrandbits(8) for _ in range(20000)))
    archive = _tar(tmp_path / "src", tmp_path / "d.tar.gz", "w:gz")
    damaged = bytearray(archive.read_bytes())
    damaged[40] ^= 0xFF
    archive.write_bytes(bytes(damaged))
    assert archive_kind(archive) == "tar.gz"
    with pytest.raises(CorpusError, match="damaged tar.gz archive"):
        ArchiveTree(archive)
    with pytest.raises(CorpusError, match="d.tar.gz"):
        Corpus(archive)


def test_an_archive_decompressed_by_a_child_process_leaves_none_behind(tmp_path, monkeypatch):
    """Where the process may fork, a .tar.gz is decompressed by a child process (a thread would
    wait on the interpreter's lock while the command imports): read to its end, the child is
    reaped; closed before its end, the child is stopped and reaped; a cut archive's error comes
    back from the child as the reader raised it."""
    import gzip
    from conftest import shared_corpus
    from spamkit.corpus import archives
    from spamkit.corpus.archives import Spool, gzip_open
    monkeypatch.setattr(archives, "_may_fork", lambda: True)
    path = shared_corpus("trec07p-dev/trec07p-dev.tar.gz")
    whole = Spool(path, gzip_open)
    child = whole._child
    assert child is not None
    whole.finish()
    with gzip.open(path) as fh:
        assert whole.read_at(0, whole._ready) == fh.read()
    whole.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(child, os.WNOHANG)                       # reaped
    early = Spool(path, gzip_open)
    child = early._child
    assert len(early.read_at(0, 1000)) == 1000
    early.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(child, os.WNOHANG)
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(path.read_bytes()[:1_000_000])
    spool = Spool(cut, gzip_open)
    with pytest.raises(EOFError, match="end-of-stream"):
        spool.finish()
    spool.close()

    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(archives.os, "fork", no_fork)       # no process to spare: the thread does it
    spool = Spool(path, gzip_open)
    assert spool._child is None and spool._thread is not None
    spool.finish()
    assert spool._ready == whole._ready
    spool.close()


def test_located_lists_members_a_forked_process_reads_and_reads_the_rest(tmp_path):
    """Corpus.located: a member of an archive whose spool is complete comes as an Unread with
    where it lies (its bytes the same when read), every other message as usual -- a folder's
    files, an mbox -- and nothing changes outside the block."""
    from spamkit.corpus import Unread
    from spamkit.corpus.archives import read_where
    sample = Path(__file__).resolve().parents[1] / "corpora" / "sample"
    archive = tmp_path / "sample.tar.gz"
    with tarfile.open(archive, "w:gz", format=tarfile.USTAR_FORMAT) as tf:
        tf.add(sample, arcname="sample")
    with Corpus(archive) as corpus:
        plain = list(corpus)
        with corpus.located() as located:
            listed = list(corpus)
        after = list(corpus)
        assert [read_where(m.where[1:]) for m in listed] == [m.raw for m in plain]
        assert [m.raw.read() for m in listed] == [m.raw for m in plain]
    assert located and len(listed) == len(plain) == 240
    assert all(isinstance(m.raw, Unread) and m.where is not None for m in listed)
    assert [(m.id, m.label) for m in listed] == [(m.id, m.label) for m in plain]
    assert not any(isinstance(m.raw, Unread) for m in after)
    with Corpus(sample) as folder, folder.located() as located:           # files of a folder: read here
        read = list(folder)
    assert located and not any(isinstance(m.raw, Unread) for m in read) and [m.raw for m in read] == [m.raw for m in plain]
    box = tmp_path / "box.mbox"
    box.write_bytes(b"From a@b Mon Jan  1 00:00:00 2024\nSubject: x\n\nhello\n")
    with Corpus(box, label="ham") as mbox:
        as_usual = [m.raw for m in mbox]
        with mbox.located() as located:
            assert not located and [m.raw for m in mbox] == as_usual == [b"Subject: x\n\nhello\n"]
