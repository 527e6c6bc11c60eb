/* spamkit.common.speedups, a vocabulary's BLAKE2b keys and its sorted order (spamkit.filterfile.persist, spamkit.features.vectorizer).
 *
 * One source of the extension spamkit.common.speedups (spamkit/common/speedups.c assembles it); what each
 * function computes and the Python definition it is tested against are said above it. */
#include "speedups.h"

/* ------------------------------------------------------------------ BLAKE2b term keys */

/* BLAKE2b as RFC 7693 specifies it (section 3: the G mixing function, the compression function
   F with 12 rounds over the message schedule SIGMA, the parameter block folded into h[0];
   the IV is SHA-512's), unkeyed, with an 8-byte digest: the key spamkit.lean.term_hash gives a
   term (hashlib.blake2b(term.encode("utf-8"), digest_size=8), read little-endian), which is
   the first word of the final state. tests/test_persist.py compares it with hashlib. */
static const uint64_t blake2b_iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};

static const unsigned char blake2b_sigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

static inline uint64_t rotr64(uint64_t x, unsigned n) { return (x >> n) | (x << (64 - n)); }

#define BLAKE2B_G(a, b, c, d, x, y)                  \
    do {                                             \
        v[a] = v[a] + v[b] + (x);                    \
        v[d] = rotr64(v[d] ^ v[a], 32);              \
        v[c] = v[c] + v[d];                          \
        v[b] = rotr64(v[b] ^ v[c], 24);              \
        v[a] = v[a] + v[b] + (y);                    \
        v[d] = rotr64(v[d] ^ v[a], 16);              \
        v[c] = v[c] + v[d];                          \
        v[b] = rotr64(v[b] ^ v[c], 63);              \
    } while (0)

/* F: one 128-byte block into the state h; t the bytes hashed so far (with this block), last
   whether it is the final block */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3")))
#endif
static void blake2b_compress(uint64_t h[8], const unsigned char block[128], uint64_t t, int last)
{
    uint64_t v[16], m[16];
    for (int i = 0; i < 16; i++) {
        uint64_t w = 0;
        for (int k = 7; k >= 0; k--)
            w = (w << 8) | block[8 * i + k];            /* little-endian words */
        m[i] = w;
    }
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = blake2b_iv[i];
    }
    v[12] ^= t;                                         /* the high word of the 128-bit counter stays 0 */
    if (last)
        v[14] = ~v[14];
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 12
#endif
    for (int r = 0; r < 12; r++) {
        const unsigned char *s = blake2b_sigma[r];
        BLAKE2B_G(0, 4, 8, 12, m[s[0]], m[s[1]]);
        BLAKE2B_G(1, 5, 9, 13, m[s[2]], m[s[3]]);
        BLAKE2B_G(2, 6, 10, 14, m[s[4]], m[s[5]]);
        BLAKE2B_G(3, 7, 11, 15, m[s[6]], m[s[7]]);
        BLAKE2B_G(0, 5, 10, 15, m[s[8]], m[s[9]]);
        BLAKE2B_G(1, 6, 11, 12, m[s[10]], m[s[11]]);
        BLAKE2B_G(2, 7, 8, 13, m[s[12]], m[s[13]]);
        BLAKE2B_G(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++)
        h[i] ^= v[i] ^ v[i + 8];
}

/* the first 8 bytes of BLAKE2b-64 of data, as a little-endian number */
static uint64_t blake2b_64(const unsigned char *data, Py_ssize_t len)
{
    uint64_t h[8];
    unsigned char block[128];
    memcpy(h, blake2b_iv, sizeof h);
    h[0] ^= 0x01010000ULL ^ 8ULL;                       /* depth 1, fanout 1, no key, 8-byte digest */
    uint64_t t = 0;
    while (len > 128) {                                 /* every block but the last */
        t += 128;
        blake2b_compress(h, data, t, 0);
        data += 128;
        len -= 128;
    }
    memset(block, 0, sizeof block);
    if (len)
        memcpy(block, data, (size_t)len);
    t += (uint64_t)len;
    blake2b_compress(h, block, t, 1);
    return h[0];
}

/* term_keys(terms) -> bytes of uint64, or None: BLAKE2b-64 of each term's UTF-8 bytes
   (spamkit.filterfile.termindex.term_hash_index's keys); None when an item is not a str or has no UTF-8
   form, for the caller's Python path to report as it does. */
static PyObject *term_keys(PyObject *self, PyObject *args)
{
    PyObject *terms;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &terms))
        return NULL;
    /* the terms' UTF-8 bytes gathered with the GIL (a copy of the list keeps every term alive),
       then hashed without it: a thread can hash a vocabulary while another fits a model */
    PyObject *held = PyList_GetSlice(terms, 0, PyList_GET_SIZE(terms));
    if (held == NULL)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(held);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * 8);
    const char **starts = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(const char *));
    Py_ssize_t *lengths = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t));
    if (out == NULL || starts == NULL || lengths == NULL) {
        Py_XDECREF(out);
        PyMem_Free(starts);
        PyMem_Free(lengths);
        Py_DECREF(held);
        return out == NULL ? NULL : PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
#if defined(__GNUC__)
        if (i + 16 < n)                               /* the terms lie all over the heap: ask ahead */
            __builtin_prefetch(PyList_GET_ITEM(held, i + 16));
#endif
        starts[i] = sk_utf8_of(PyList_GET_ITEM(held, i), &lengths[i]);
        if (starts[i] == NULL) {
            Py_DECREF(out);
            PyMem_Free(starts);
            PyMem_Free(lengths);
            Py_DECREF(held);
            Py_RETURN_NONE;
        }
    }
    unsigned char *keys = (unsigned char *)PyBytes_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t key = blake2b_64((const unsigned char *)starts[i], lengths[i]);
        for (int k = 0; k < 8; k++)
            keys[8 * i + k] = (unsigned char)(key >> (8 * k));
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(starts);
    PyMem_Free(lengths);
    Py_DECREF(held);
    return out;
}

/* key_order(keys) -> bytes of int64: the positions of a buffer of uint64 keys in ascending
   order, equal keys in their order (np.argsort(keys, kind="stable"), tests/test_persist.py):
   an LSD radix sort, 11 bits a pass (six passes; a pass whose digit is the same in every key
   is skipped), without the GIL. The hash index of a vocabulary sorts its BLAKE2b keys with it
   (spamkit.filterfile.termindex.term_hash_index): 178,480 keys in ~3 ms where NumPy's stable argsort took 12. */
static PyObject *key_order(PyObject *self, PyObject *args)
{
    PyObject *o_keys;
    if (!PyArg_ParseTuple(args, "O:key_order", &o_keys))
        return NULL;
    Py_buffer kb = {0};
    if (sk_get_buffer(o_keys, &kb, "Q", 8, 0, "keys") < 0)
        return NULL;
    Py_ssize_t n = kb.shape[0];
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    uint64_t *k1 = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(uint64_t)), *k2 = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(uint64_t));
    int64_t *p2 = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    size_t *count = PyMem_Calloc(6 * 2048, sizeof(size_t));
    if (out == NULL || k1 == NULL || k2 == NULL || p2 == NULL || count == NULL) {
        Py_XDECREF(out);
        PyMem_Free(k1); PyMem_Free(k2); PyMem_Free(p2); PyMem_Free(count);
        PyBuffer_Release(&kb);
        return out == NULL ? NULL : PyErr_NoMemory();
    }
    int64_t *p1 = (int64_t *)PyBytes_AS_STRING(out);
    const uint64_t *keys = kb.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t key = keys[i];
        k1[i] = key;
        p1[i] = (int64_t)i;
        for (int d = 0; d < 6; d++)
            count[d * 2048 + ((key >> (11 * d)) & 2047)]++;
    }
    uint64_t *ks = k1, *kd = k2;
    int64_t *ps = p1, *pd = p2;
    for (int d = 0; d < 6; d++) {
        size_t *c = count + d * 2048, total = 0;
        if (n && c[(ks[0] >> (11 * d)) & 2047] == (size_t)n)
            continue;                                 /* one digit in every key: nothing moves */
        for (int b = 0; b < 2048; b++) {
            size_t here = c[b];
            c[b] = total;
            total += here;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            size_t at = c[(ks[i] >> (11 * d)) & 2047]++;
            kd[at] = ks[i];
            pd[at] = ps[i];
        }
        uint64_t *tk = ks; ks = kd; kd = tk;
        int64_t *tp = ps; ps = pd; pd = tp;
    }
    if (ps != p1)
        memcpy(p1, ps, (size_t)n * sizeof(int64_t));
    Py_END_ALLOW_THREADS
    PyMem_Free(k1); PyMem_Free(k2); PyMem_Free(p2); PyMem_Free(count);
    PyBuffer_Release(&kb);
    return out;
}

/* ------------------------------------------------------------------ sorting terms */

typedef struct {
    uint64_t head;              /* the first 8 bytes, big-endian, zero-padded: most comparisons end here */
    const char *bytes;
    Py_ssize_t len;
    Py_ssize_t pos;
} Term;

/* code point order: the UTF-8 bytes compared as unsigned bytes, a prefix first (UTF-8 keeps
   the order of code points); equal terms by position, so the sort is stable. The heads
   decide unless they are equal (zero padding sorts a shorter term first only when it is a
   prefix; equal heads of terms shorter than 8 bytes go on to the full comparison). */
/* The 8 bytes of a term from byte `depth`, big-endian, zero-padded past its end. */
static uint64_t term_key_at(const Term *t, Py_ssize_t depth)
{
    uint64_t key = 0;
    for (Py_ssize_t k = depth; k < depth + 8; k++)
        key = (key << 8) | (k < t->len ? (unsigned char)t->bytes[k] : 0u);
    return key;
}

/* Terms equal in their first `depth` bytes, compared from there on (then by position). */
static int term_order_from(const Term *x, const Term *y, Py_ssize_t depth)
{
    Py_ssize_t n = (x->len < y->len ? x->len : y->len) - depth;
    int c = n > 0 ? memcmp(x->bytes + depth, y->bytes + depth, (size_t)n) : 0;
    if (c != 0)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

static void sort_terms_from(Term *a, Py_ssize_t n, Py_ssize_t depth);

/* x before y, for terms equal in their first `depth` bytes whose heads hold the next 8 */
static int term_before(const Term *x, const Term *y, Py_ssize_t depth)
{
    if (x->head != y->head)
        return x->head < y->head;
    return term_order_from(x, y, depth) < 0;
}

/* Moves a[root] down the heap a[0 .. end-1] (ordered by term_before) to where it belongs. */
static void sift_down_terms(Term *a, Py_ssize_t root, Py_ssize_t end, Py_ssize_t depth)
{
    for (;;) {
        Py_ssize_t child = 2 * root + 1;
        if (child >= end)
            return;
        if (child + 1 < end && term_before(&a[child], &a[child + 1], depth))
            child++;
        if (!term_before(&a[root], &a[child], depth))
            return;
        Term t = a[root]; a[root] = a[child]; a[child] = t;
        root = child;
    }
}

/* Heapsort by term_before: what sort_terms_by_head falls back to when its partitions keep
   coming out lopsided (introsort, Musser 1997), so that no order of the terms makes the sort
   quadratic. */
static void heap_sort_terms(Term *a, Py_ssize_t n, Py_ssize_t depth)
{
    for (Py_ssize_t start = n / 2; start-- > 0;)
        sift_down_terms(a, start, n, depth);
    for (Py_ssize_t end = n - 1; end > 0; end--) {
        Term t = a[0]; a[0] = a[end]; a[end] = t;
        sift_down_terms(a, 0, end, depth);
    }
}

/* the partitions sort_terms_by_head makes before it heapsorts: -1, 2 log2 n + 2; tests set
   another (sort_terms' third argument) to take the heapsort's path. Read-only while a sort runs. */
static int partition_budget = -1;

/* the next of a xorshift64 sequence (Marsaglia 2003): where pivots are sampled from */
static inline uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

static inline uint64_t median3(uint64_t x, uint64_t y, uint64_t z)
{
    return x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
}

/* A pivot head for a[0 .. n-1]: the median of three heads at sampled places, or for larger
   n the median of three such medians (Tukey's ninther). Fixed places (first, middle, last)
   made a sorted vocabulary ten times slower to sort than a shuffled one: the partitions
   left organ-pipe orders behind, on which such a median is a bad pivot. */
static uint64_t pivot_head(const Term *a, Py_ssize_t n, uint64_t *rng)
{
#define AT() (a[(Py_ssize_t)(next_random(rng) % (uint64_t)n)].head)
    if (n < 64) {
        uint64_t x = AT(), y = AT(), z = AT();
        return median3(x, y, z);
    }
    uint64_t m[3];
    for (int k = 0; k < 3; k++) {
        uint64_t x = AT(), y = AT(), z = AT();
        m[k] = median3(x, y, z);
    }
#undef AT
    return median3(m[0], m[1], m[2]);
}

/* Sorts a[0 .. n-1], terms equal in their first `depth` bytes whose `head` holds their 8 bytes
   from there: a three-way quicksort on the heads (Bentley & Sedgewick's multikey quicksort,
   "Fast algorithms for sorting and searching strings", SODA 1997, 8 bytes a step), the
   terms of equal head sorted again from 8 bytes further. A vocabulary's terms share long
   prefixes (41,181 of trec07p-dev's 178,480 begin with "received"): comparing whole terms,
   each comparison of two of them walked those prefixes again (qsort: 62 ms for that
   vocabulary; this: about 20). Pivots are sampled (pivot_head) and, after more lopsided
   partitions than 2 log2 n, the rest is heapsorted: O(n log n) comparisons of heads
   whatever the order of the terms. */
static void sort_terms_by_head(Term *a, Py_ssize_t n, Py_ssize_t depth)
{
    uint64_t rng = 0x9E3779B97F4A7C15ull ^ ((uint64_t)n * 0xBF58476D1CE4E5B9ull) ^ (uint64_t)depth;
    int budget = 2;
    for (Py_ssize_t m = n; m > 1; m >>= 1)
        budget += 2;
    if (partition_budget >= 0)
        budget = partition_budget;
    while (n > 1) {
        if (n < 12) {                                   /* insertion sort */
            for (Py_ssize_t i = 1; i < n; i++) {
                Term t = a[i];
                Py_ssize_t j = i;
                while (j > 0 && (a[j - 1].head > t.head ||
                                 (a[j - 1].head == t.head && term_order_from(&a[j - 1], &t, depth) > 0))) {
                    a[j] = a[j - 1];
                    j--;
                }
                a[j] = t;
            }
            return;
        }
        if (budget-- <= 0) {
            heap_sort_terms(a, n, depth);
            return;
        }
        uint64_t pivot = pivot_head(a, n, &rng);
        /* Dijkstra's three-way partition: [0, lt) < pivot, [lt, i) == pivot, (gt, n) > pivot */
        Py_ssize_t lt = 0, i = 0, gt = n - 1;
        while (i <= gt) {
            if (a[i].head < pivot) {
                Term t = a[lt]; a[lt] = a[i]; a[i] = t;
                lt++; i++;
            } else if (a[i].head > pivot) {
                Term t = a[gt]; a[gt] = a[i]; a[i] = t;
                gt--;
            } else {
                i++;
            }
        }
        /* the equal part: terms that end within these 8 bytes come first (each is a prefix of
           the longer ones), by length then position; the rest go on from 8 bytes further */
        Term *eq = a + lt;
        Py_ssize_t m = gt + 1 - lt, done = 0;
        for (Py_ssize_t k = 0; k < m; k++) {
            if (eq[k].len <= depth + 8) {
                Term t = eq[done]; eq[done] = eq[k]; eq[k] = t;
                done++;
            }
        }
        for (Py_ssize_t k = 1; k < done; k++) {         /* few: insertion sort by (len, pos) */
            Term t = eq[k];
            Py_ssize_t j = k;
            while (j > 0 && term_order_from(&eq[j - 1], &t, depth) > 0) {
                eq[j] = eq[j - 1];
                j--;
            }
            eq[j] = t;
        }
        sort_terms_from(eq + done, m - done, depth + 8);
        /* the smaller side by recursion, the larger by the loop: stack depth O(log n) a level */
        Py_ssize_t left = lt, right = n - gt - 1;
        if (left < right) {
            sort_terms_by_head(a, left, depth);
            a += gt + 1;
            n = right;
        } else {
            sort_terms_by_head(a + gt + 1, right, depth);
            n = left;
        }
    }
}

/* Sorts terms equal in their first `depth` bytes, from there on. */
static void sort_terms_from(Term *a, Py_ssize_t n, Py_ssize_t depth)
{
    if (n < 2)
        return;
    for (Py_ssize_t i = 0; i < n; i++)
        a[i].head = term_key_at(&a[i], depth);
    sort_terms_by_head(a, n, depth);
}

/* the terms a part of sort_terms is given at least */
#define SORT_PART_TERMS 20000

typedef struct {
    Term *start[MAX_PARTS];
    Py_ssize_t len[MAX_PARTS];
} SortJob;

static void sort_part(void *arg, int part, int parts)
{
    SortJob *J = arg;
    (void)parts;
    sort_terms_by_head(J->start[part], J->len[part], 0);
}

/* sort_terms_by_head(a, n, 0) in parts (sk_run_parts): the terms cut at splitters taken from a
   sample of them (whole terms: trec07p-dev's vocabulary has 41,181 terms of one head,
   "received"), every term of a part before every term of the next, each part then sorted on
   its own. The same order as one sort. */
static void sort_terms_in_parts(Term *a, Py_ssize_t n)
{
    int parts = sk_parts_for(n, SORT_PART_TERMS);
    if (parts < 2) {
        sort_terms_by_head(a, n, 0);
        return;
    }
    Term sample[64 * MAX_PARTS];
    uint64_t rng = 0xD1B54A32D192ED03ull ^ (uint64_t)n;
    int m = 64 * parts;
    for (int k = 0; k < m; k++) {
        Term t = a[(Py_ssize_t)(next_random(&rng) % (uint64_t)n)];
        int j = k;
        while (j > 0 && term_before(&t, &sample[j - 1], 0)) {   /* insertion sort: a few hundred */
            sample[j] = sample[j - 1];
            j--;
        }
        sample[j] = t;
    }
    SortJob job;
    int count = 0;
    Py_ssize_t lo = 0;
    for (int k = 1; k < parts; k++) {
        const Term *cut = &sample[k * m / parts];
        if (k > 1 && cut->pos == sample[(k - 1) * m / parts].pos)
            continue;                                 /* the same term drawn twice: no part between */
        Py_ssize_t i = lo;                            /* the terms before `cut` to the front of a[lo .. n) */
        for (Py_ssize_t j = lo; j < n; j++)
            if (term_before(&a[j], cut, 0)) {
                Term t = a[i]; a[i] = a[j]; a[j] = t;
                i++;
            }
        job.start[count] = a + lo;
        job.len[count] = i - lo;
        count++;
        lo = i;
    }
    job.start[count] = a + lo;
    job.len[count] = n - lo;
    count++;
    sk_run_parts(sort_part, &job, count);
}

/* The terms of the list, sorted (sort_terms_by_head) into a new array of n items; NULL with
   *none set when an item is not a str or has no UTF-8 form, NULL with an exception otherwise. */
static Term *sorted_term_array(PyObject *terms, Py_ssize_t n, int *none)
{
    *none = 0;
    Term *items = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Term));
    if (items == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t len;
#if defined(__GNUC__)
        if (i + 16 < n)                               /* the terms lie all over the heap: ask ahead */
            __builtin_prefetch(PyList_GET_ITEM(terms, i + 16));
#endif
        const char *bytes = sk_utf8_of(PyList_GET_ITEM(terms, i), &len);
        if (bytes == NULL) {
            PyMem_Free(items);
            *none = 1;
            return NULL;
        }
        uint64_t head = 0;
        for (Py_ssize_t k = 0; k < 8; k++)
            head = (head << 8) | (k < len ? (unsigned char)bytes[k] : 0u);
        items[i].head = head;
        items[i].bytes = bytes;
        items[i].len = len;
        items[i].pos = i;
    }
    if (PyList_GET_SIZE(terms) != n) {          /* the UTF-8 forms cannot run code, but be sure */
        PyMem_Free(items);
        PyErr_SetString(PyExc_RuntimeError, "sort_terms: the list changed while it was read");
        return NULL;
    }
    sort_terms_in_parts(items, n);                   /* heads from byte 0: made above */
    return items;
}

/* The positions of sorted items as bytes of int64. */
static PyObject *term_order_bytes(const Term *items, Py_ssize_t n)
{
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (out != NULL) {
        int64_t *order = (int64_t *)PyBytes_AS_STRING(out);
        for (Py_ssize_t i = 0; i < n; i++)
            order[i] = (int64_t)items[i].pos;
    }
    return out;
}

/* sort_terms(terms, with_terms=False, budget=-1) -> bytes of int64 or None: the positions of the list's str
   items in the order sorted() puts them (Python compares str by code point; equal items keep
   their order), i.e. sorted(range(len(terms)), key=terms.__getitem__). None when an item is not
   a str or has no UTF-8 form (a lone surrogate): the caller sorts in Python then. Vocabularies
   of a few hundred thousand terms sort about four times faster than with the key function.
   with_terms: (positions, the terms in that order) -- [terms[i] for i in order], the definition
   (tests/test_features.py) -- the list made here from the sorted array in one pass: taking the
   terms by their positions in Python, one str at a time in sorted order, was a third of
   renumbering trec07p-dev's 178,480 terms. budget: for tests, the partitions made before the
   heapsort takes over (-1: 2 log2 n + 2). */
static PyObject *sort_terms(PyObject *self, PyObject *args)
{
    PyObject *terms;
    int none, with_terms = 0, budget = -1;
    if (!PyArg_ParseTuple(args, "O!|pi", &PyList_Type, &terms, &with_terms, &budget))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(terms);
    partition_budget = budget < 0 ? -1 : budget;
    Term *items = sorted_term_array(terms, n, &none);
    partition_budget = -1;
    if (items == NULL) {
        if (none)
            Py_RETURN_NONE;
        return NULL;
    }
    PyObject *order = term_order_bytes(items, n);
    if (!with_terms || order == NULL) {
        PyMem_Free(items);
        return order;
    }
    PyObject *list = PyList_New(n);
    if (list != NULL) {
        /* the list was not changed since sorted_term_array checked it: nothing ran since */
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *term = PyList_GET_ITEM(terms, items[i].pos);
            Py_INCREF(term);
            PyList_SET_ITEM(list, i, term);
        }
    }
    PyMem_Free(items);
    if (list == NULL) {
        Py_DECREF(order);
        return NULL;
    }
    PyObject *out = PyTuple_Pack(2, order, list);
    Py_DECREF(order);
    Py_DECREF(list);
    return out;
}


SK_HIDDEN PyMethodDef sk_features_terms_methods[] = {
    {"term_keys", term_keys, METH_VARARGS,
     "term_keys(terms) -> bytes of uint64 (little-endian), or None\n\n"
     "BLAKE2b with an 8-byte digest of each term's UTF-8 bytes (spamkit.lean.term_hash), in C."},
    {"sort_terms", sort_terms, METH_VARARGS,
     "sort_terms(terms, with_terms=False, budget=-1) -> bytes of int64 (with_terms: and the terms in that order), "
     "or None\n\n"
     "The positions of a list of str in sorted order (stable), as sorted(range(len(terms)), key=terms.__getitem__)."},
    {"key_order", key_order, METH_VARARGS,
     "key_order(keys) -> bytes of int64\n\n"
     "np.argsort(keys, kind='stable') of a buffer of uint64 keys, by radix sort."},
    {NULL, NULL, 0, NULL}
};
