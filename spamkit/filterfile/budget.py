"""What loading a filter file may cost: each member's largest size from the manifest's own
shapes and counts, the memory the members and what the loader makes of them hold, and the
cap on it all, checked before a byte of any member is decompressed.

Takes a manifest checked by :func:`spamkit.filterfile.manifest.check_manifest` (and the
zip's directory) and gives the limits each member is read under, or a
:class:`~spamkit.common.errors.ModelFormatError` naming the file and what it would cost. The
standard library only, like the manifest's reader: pipe mode's loader
(:mod:`spamkit.mail.lean`) and the full one (:mod:`spamkit.filterfile.persist`) both check
a file here.
"""

from __future__ import annotations

from .manifest import MAX_LINE_BYTES, NPY_HEADER_MAX, dtype_of, format_error, max_filter_bytes, text_members

TYPE_CHECKING = False                  # typing is not imported at run time (pipe mode's start-up)
if TYPE_CHECKING:
    from pathlib import Path

    from .zipread import Archive


#: memory a line of a text member takes once read, beyond its bytes: a ``str`` (49 bytes for
#: an ASCII one, 73-80 for others, CPython 3.11) and its slot in the list, rounded
LINE_OBJECT_BYTES = 64


def member_limits(manifest: dict) -> dict[str, int]:
    """Largest uncompressed size of each member that the manifest's own shapes and counts allow:
    an array's items times its item size (and its ``.npy`` header), a text member's lines at
    :data:`MAX_LINE_BYTES` each and their line feeds."""
    limits = {}
    for meta in manifest["arrays"].values():
        n = 1
        for dim in meta["shape"]:
            n *= dim
        kind = dtype_of(meta["dtype"])
        assert kind is not None                       # _check_structure allowed only known dtypes
        limits[meta["file"]] = n * kind[1] + NPY_HEADER_MAX
    for meta in text_members(manifest).values():
        limits[meta["file"]] = max(meta["count"], 1) * (MAX_LINE_BYTES + 1)
    return limits


def data_bytes(manifest: dict, limits: dict[str, int], sizes: dict[str, int]) -> int:
    """What loading a filter file holds in memory, in bytes: each member's size as stored (``sizes``:
    the zip directory's, which the reader never reads past, or the bytes a writer is about to
    store), at most its limit, and :data:`LINE_OBJECT_BYTES` for each line of a text member.

    Bounding what is there, not what the counts would allow at the longest line: 859,280
    terms may take 3.5 GB at 4,096 bytes each, but trec06p's took 8.6 MB as written.

    >>> m = {"arrays": {"a": {"file": "a.npy", "dtype": "float64", "shape": [2, 3]}},
    ...      "model": {"texts": {}}, "terms": {"file": "terms.txt", "count": 3}}
    >>> limits = member_limits(m)
    >>> data_bytes(m, limits, {"a.npy": 176, "terms.txt": 11}), data_bytes(m, limits, {"a.npy": 10**9})
    (379, 4336)
    """
    total = sum(min(limit, sizes.get(name, 0)) for name, limit in limits.items())
    return (total + sum(meta["count"] * LINE_OBJECT_BYTES for meta in text_members(manifest).values())
            + made_bytes(manifest))


def made_bytes(manifest: dict) -> int:
    """Memory a loaded filter makes that its members do not hold: a context model's table of
    2**bits slots of two 4-byte counts, unpacked whole by the full route (a file of 5.3 MB that
    declared ``bits: 30`` took ``classify`` to 8.3 GB). The bits are checked by
    :func:`check_manifest` (``check_context``) before this is asked.

    >>> made_bytes({"extra": {"context": {"bits": 24}}}), made_bytes({"extra": {}})
    (134217728, 0)
    """
    context = manifest.get("extra", {}).get("context")
    return 8 << context["bits"] if isinstance(context, dict) else 0


def over_budget(total: int) -> str | None:
    """Why ``total`` bytes of data (:func:`data_bytes`) are too many for a filter file, or None."""
    cap = max_filter_bytes()
    if total <= cap:
        return None
    return (f"{total} bytes of data once loaded, more than the {cap} a filter file may hold "
            "(MAX_FILTER_BYTES; set SPAMKIT_MAX_FILTER_BYTES to allow a bigger filter you trust)")


def expected_sizes(manifest: dict, path: Path, z: Archive) -> dict[str, int]:
    """Largest uncompressed size of each member (:func:`member_limits`), after checking the file
    as stored against the cap (:func:`data_bytes`, :func:`over_budget`): before a byte of any
    member is decompressed."""
    limits = member_limits(manifest)
    declared = {}
    for name in limits:
        try:
            declared[name] = z.getinfo(name).file_size
        except KeyError:
            declared[name] = 0                      # member_chunks reports it missing
    for array, meta in manifest["arrays"].items():  # an array's data is all there: its shape is no promise
        need = limits[meta["file"]] - NPY_HEADER_MAX
        if meta["file"] in z.namelist() and declared[meta["file"]] < need:
            format_error(path, f"array {array} has a shape of {need} bytes, more than the {declared[meta['file']]} "
                         "its member holds; the file is damaged")
    problem = over_budget(data_bytes(manifest, limits, declared))
    if problem is not None:
        table = made_bytes(manifest)
        format_error(path, f"the file holds {problem}" + (f"; its context table alone takes {table} bytes"
                                                          if table else ""))
    return limits
