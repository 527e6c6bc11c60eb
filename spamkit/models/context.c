/* spamkit.common.speedups, the byte context models' tables (spamkit.features.bytekeys, spamkit.models.context).
 *
 * One source of the extension spamkit.common.speedups (spamkit/common/speedups.c assembles it); what each
 * function computes and the Python definition it is tested against are said above it. */
#include "speedups.h"

/* ---- byte context models (spamkit.bytekeys, spamkit.models.context) ----
   The slots of the strings of 1..order+1 symbols ending with each symbol of a text, by the
   arithmetic of spamkit.bytekeys.context_keys (tests/test_context.py compares), computed as the
   text is read instead of stored: symbol i of a text of n bytes is byte i, the end (256) at i = n,
   a pad (257) before the start. */
#define CTX_END 256u
#define CTX_PAD 257u
#define CTX_MAX_ORDER 16
static const uint64_t CTX_MIX = 0x9E3779B97F4A7C15ull, CTX_STEP = 0x100000001B3ull;

static inline uint64_t ctx_symbol(const unsigned char *b, Py_ssize_t n, Py_ssize_t i)
{
    return i < 0 ? CTX_PAD : (i < n ? (uint64_t)b[i] : CTX_END);
}

static inline void ctx_slots(const unsigned char *b, Py_ssize_t n, Py_ssize_t i, int order, int bits, int64_t *out)
{
    uint64_t h = ctx_symbol(b, n, i) + 1;
    for (int k = 0; k <= order; k++) {
        if (k)
            h = (h * CTX_STEP) ^ (ctx_symbol(b, n, i - k) + 1);
        out[k] = (int64_t)(((((h + (uint64_t)(k + 1) * CTX_MIX) * CTX_STEP) ^ (uint64_t)k) * CTX_MIX) >> (64 - bits));
    }
}

/* The slots of symbol i (if the text has it: i <= n) into out, their counts prefetched. The
   table is slot-major: the two classes' counts of slot s are table[2 s] and table[2 s + 1], one
   8-byte pair, so one cache line holds what scoring reads of a slot for both classes. The loops
   below call it two symbols ahead, so that the lookups of a symbol (random reads in a table much
   larger than the cache) overlap the work on the two before it. */
static inline void ctx_ahead(const unsigned char *b, Py_ssize_t n, Py_ssize_t i, int order, int bits, int64_t *out,
                             const uint32_t *table)
{
    if (i > n)
        return;
    ctx_slots(b, n, i, order, bits, out);
    for (int k = 0; k <= order; k++)
        PREFETCH(&table[2 * out[k]]);
}

/* The texts of a sequence as (pointer, length) pairs, each cut at max_bytes; owner holds them
   (a tuple) until ctx_texts_release. Only bytes are accepted. */
typedef struct {
    PyObject *owner;
    const unsigned char **ptrs;
    Py_ssize_t *lens;
    Py_ssize_t n;
} CtxTexts;

static void ctx_texts_release(CtxTexts *T)
{
    PyMem_Free(T->ptrs); PyMem_Free(T->lens); Py_CLEAR(T->owner);
    T->ptrs = NULL; T->lens = NULL;
}

static int ctx_texts(PyObject *seq, Py_ssize_t max_bytes, CtxTexts *T)
{
    T->ptrs = NULL; T->lens = NULL;
    T->owner = PySequence_Tuple(seq);
    if (T->owner == NULL)
        return -1;
    T->n = PyTuple_GET_SIZE(T->owner);
    T->ptrs = PyMem_Malloc(sizeof(*T->ptrs) * (T->n ? T->n : 1));
    T->lens = PyMem_Malloc(sizeof(*T->lens) * (T->n ? T->n : 1));
    if (T->ptrs == NULL || T->lens == NULL) {
        ctx_texts_release(T);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t t = 0; t < T->n; t++) {
        PyObject *item = PyTuple_GET_ITEM(T->owner, t);
        if (!PyBytes_Check(item)) {
            PyErr_Format(PyExc_TypeError, "context texts must be bytes, got %.80s", Py_TYPE(item)->tp_name);
            ctx_texts_release(T);
            return -1;
        }
        T->ptrs[t] = (const unsigned char *)PyBytes_AS_STRING(item);
        Py_ssize_t len = PyBytes_GET_SIZE(item);
        T->lens[t] = len < max_bytes ? len : max_bytes;
    }
    return 0;
}

/* What context_learn, context_ratios and context_gather do first: order (0 to CTX_MAX_ORDER),
   bits (min_bits to 30) and max_bytes (>= 1) checked, and `bad_arg` (the name of the caller's
   own argument when it is out of range, else NULL), a ValueError naming fn otherwise; then the n
   buffers of views (all or none: sk_get_views) and the texts into T. 0, or -1 with the error
   set and nothing held; ctx_end releases what it took. */
static int ctx_begin(const char *fn, int order, int bits, int min_bits, Py_ssize_t max_bytes, const char *bad_arg,
                     PyObject *o_texts, CtxTexts *T, const SkView *views, int n)
{
    if (order < 0 || order > CTX_MAX_ORDER || bits < min_bits || bits > 30 || max_bytes < 1 || bad_arg != NULL) {
        PyErr_Format(PyExc_ValueError, "%s: %s out of range", fn, bad_arg != NULL ? bad_arg : "order, bits or max_bytes");
        return -1;
    }
    if (sk_get_views(views, n) < 0)
        return -1;
    if (ctx_texts(o_texts, max_bytes, T) < 0) {
        for (int i = 0; i < n; i++)
            PyBuffer_Release(views[i].view);
        return -1;
    }
    return 0;
}

static void ctx_end(CtxTexts *T, const SkView *views, int n)
{
    for (int i = 0; i < n; i++)
        PyBuffer_Release(views[i].view);
    ctx_texts_release(T);
}

/* Counts every slot of every symbol of each text once more in its class's column of the
   slot-major table (a count at UINT32_MAX stays there: saturated), or with unlearn once less:
   a saturated count stays, and a count at zero stops the pass. Returns the number of updates
   made before it stopped (-1: all of them). Learning the first `limit` updates (limit >= 0)
   replays that many and no more: what puts a stopped unlearning back. */
static Py_ssize_t ctx_apply(const unsigned char **ptrs, const Py_ssize_t *lens, const long long *code,
                            Py_ssize_t n_texts, int order, int bits, uint32_t *table, int unlearn, Py_ssize_t limit)
{
    int64_t ring[3][CTX_MAX_ORDER + 1];
    Py_ssize_t done = 0;
    for (Py_ssize_t t = 0; t < n_texts; t++) {
        uint32_t *column = table + code[t];
        Py_ssize_t n = lens[t];
        ctx_ahead(ptrs[t], n, 0, order, bits, ring[0], table);
        ctx_ahead(ptrs[t], n, 1, order, bits, ring[1], table);
        for (Py_ssize_t i = 0; i <= n; i++) {
            ctx_ahead(ptrs[t], n, i + 2, order, bits, ring[(i + 2) % 3], table);
            const int64_t *slot = ring[i % 3];
            for (int k = 0; k <= order; k++, done++) {
                if (limit >= 0 && done >= limit)
                    return -1;
                uint32_t *count = &column[2 * slot[k]];
                if (*count == UINT32_MAX)
                    continue;
                if (!unlearn)
                    (*count)++;
                else if (*count == 0)
                    return done;
                else
                    (*count)--;
            }
        }
    }
    return -1;
}

/* context_learn(texts, codes, order, bits, max_bytes, table, sign=1) -> bool: every slot of every
   symbol of text t counted once more (sign 1) or once less (sign -1) in column codes[t] of the
   slot-major uint32 table (2 * 2**bits counts, slot s of class c at 2 s + c). Unlearning that
   would take a count below zero changes nothing and returns False. */
static PyObject *context_learn(PyObject *self, PyObject *args)
{
    PyObject *o_texts, *o_codes, *o_table;
    int order, bits, sign = 1;
    Py_ssize_t max_bytes;
    if (!PyArg_ParseTuple(args, "OOiinO|i:context_learn", &o_texts, &o_codes, &order, &bits, &max_bytes, &o_table,
                          &sign))
        return NULL;
    Py_buffer codes = {0}, tab = {0};
    const SkView views[] = {{o_codes, &codes, "q", 8, 0, "codes"}, {o_table, &tab, "I", 4, 1, "table"}};
    CtxTexts T;
    if (ctx_begin("context_learn", order, bits, 8, max_bytes, sign == 1 || sign == -1 ? NULL : "sign", o_texts, &T,
                  views, 2) < 0)
        return NULL;
    Py_ssize_t n_texts = T.n, size = (Py_ssize_t)1 << bits;
    const long long *code = codes.buf;
    int bad = codes.shape[0] != n_texts || tab.shape[0] != 2 * size, done = 1;
    for (Py_ssize_t t = 0; !bad && t < n_texts; t++)
        bad = code[t] != 0 && code[t] != 1;
    if (!bad) {
        uint32_t *table = tab.buf;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t stopped = ctx_apply(T.ptrs, T.lens, code, n_texts, order, bits, table, sign < 0, -1);
        if (stopped >= 0) {                  /* put back what the stopped unlearning took */
            ctx_apply(T.ptrs, T.lens, code, n_texts, order, bits, table, 0, stopped);
            done = 0;
        }
        Py_END_ALLOW_THREADS
    }
    ctx_end(&T, views, 2);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "context_learn: the texts, codes and table do not fit together");
        return NULL;
    }
    return PyBool_FromLong(done);
}

/* context_ratios(texts, order, bits, max_bytes, table, texts0, texts1, symbols0, symbols1, beta, out,
   lengths) -> None: per text, the sum over its symbols of log p_1 - log p_0 of the blended model
   (spamkit.models.context.ByteContextModel.symbol_log_probs, in the same order) into out, and its
   number of symbols into lengths; table: slot-major uint32 counts, as context_learn's. */
static PyObject *context_ratios(PyObject *self, PyObject *args)
{
    PyObject *o_texts, *o_table, *o_out, *o_len;
    int order, bits;
    Py_ssize_t max_bytes;
    double texts0, texts1, symbols0, symbols1, beta;
    if (!PyArg_ParseTuple(args, "OiinOdddddOO:context_ratios", &o_texts, &order, &bits, &max_bytes, &o_table,
                          &texts0, &texts1, &symbols0, &symbols1, &beta, &o_out, &o_len))
        return NULL;
    Py_buffer tab = {0}, out = {0}, len = {0};
    const SkView views[] = {{o_table, &tab, "I", 4, 0, "table"}, {o_out, &out, "d", 8, 1, "out"},
                            {o_len, &len, "q", 8, 1, "lengths"}};
    CtxTexts T;
    if (ctx_begin("context_ratios", order, bits, 8, max_bytes, beta > 0 ? NULL : "beta", o_texts, &T, views, 3) < 0)
        return NULL;
    Py_ssize_t n_texts = T.n, size = (Py_ssize_t)1 << bits;
    int bad = tab.shape[0] != 2 * size || out.shape[0] != n_texts || len.shape[0] != n_texts;
    if (!bad) {
        const uint32_t *table = tab.buf;
        const double n_texts_of[2] = {texts0, texts1}, n_symbols_of[2] = {symbols0, symbols1};
        double *o = out.buf;
        long long *olen = len.buf;
        Py_BEGIN_ALLOW_THREADS
        /* A context's count is the count its string had as the previous symbol's pair (kept,
           not read again). */
        int64_t ring[3][CTX_MAX_ORDER + 1];
        double pair_before[2][CTX_MAX_ORDER + 1];
        for (Py_ssize_t t = 0; t < n_texts; t++) {
            double sum = 0.0;
            Py_ssize_t n = T.lens[t];
            ctx_ahead(T.ptrs[t], n, 0, order, bits, ring[0], table);
            ctx_ahead(T.ptrs[t], n, 1, order, bits, ring[1], table);
            for (Py_ssize_t i = 0; i <= n; i++) {
                ctx_ahead(T.ptrs[t], n, i + 2, order, bits, ring[(i + 2) % 3], table);
                const int64_t *slot = ring[i % 3];
                double lp[2];
                for (int c = 0; c < 2; c++) {
                    double p = 1.0 / 257.0, pair[CTX_MAX_ORDER + 1];
                    for (int k = 0; k <= order; k++) {
                        double n_context = k == 0 ? n_symbols_of[c] : (i == 0 ? n_texts_of[c] : pair_before[c][k - 1]);
                        double n_pair = (double)table[2 * slot[k] + c];
                        pair[k] = n_pair;
                        if (n_pair > n_context)
                            n_pair = n_context;
                        p = (n_pair + beta * p) / (n_context + beta);
                    }
                    memcpy(pair_before[c], pair, sizeof(double) * (size_t)(order + 1));
                    lp[c] = log(p);
                }
                sum += lp[1] - lp[0];
            }
            o[t] = sum;
            olen[t] = n + 1;
        }
        Py_END_ALLOW_THREADS
    }
    ctx_end(&T, views, 3);
    return sk_none_unless(bad, "context_ratios: the texts, table and outputs do not fit together");
}

/* context_unpack(data, table) -> int: a context table packed by spamkit.models.context.pack_table
   (LEB128 varints: the table's bits, then per slot with a count, in slot order, the gap since the
   previous such slot and its two classes' counts) written out whole into table (uint32, two per
   slot; the slots between are set to zero). Returns the number of slots with a count. Hostile
   input is refused with ValueError: a table of another size, a varint cut short or longer than 5
   bytes, a number past 2**32 - 1, a slot past the table, a slot stored with no count. */
static int ctx_varint(const unsigned char *p, Py_ssize_t n, Py_ssize_t *at, uint64_t *value)
{
    uint64_t v = 0;
    for (int k = 0; k < 5; k++) {
        if (*at >= n)
            return -1;
        unsigned char b = p[(*at)++];
        v |= (uint64_t)(b & 0x7f) << (7 * k);
        if (!(b & 0x80)) {
            *value = v;
            return v > 0xffffffffu ? -1 : 0;
        }
    }
    return -1;
}

/* The header of a packed table: its bits, which must make a table of `slots` slots. NULL, or why not. */
static const char *ctx_packed_header(const unsigned char *p, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t slots)
{
    uint64_t bits;
    if (ctx_varint(p, n, at, &bits) < 0 || bits > 30 || ((Py_ssize_t)1 << bits) != slots)
        return "it is a table of another size than the model's settings say";
    return NULL;
}

/* The next stored slot of a packed table, read at *at, checked: its slot (the first not before
   *next, which then moves past it) and its two counts. NULL, or why the data is not a table. */
static const char *ctx_packed_entry(const unsigned char *p, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t slots,
                                    Py_ssize_t *next, Py_ssize_t *slot, uint64_t *c0, uint64_t *c1)
{
    uint64_t gap;
    if (ctx_varint(p, n, at, &gap) < 0 || ctx_varint(p, n, at, c0) < 0 || ctx_varint(p, n, at, c1) < 0)
        return "a number is cut short, too long or past 2**32 - 1";
    if (gap >= (uint64_t)(slots - *next))
        return "a slot lies past the table";
    if (*c0 == 0 && *c1 == 0)
        return "a slot is stored with no count";
    *slot = *next + (Py_ssize_t)gap;
    *next = *slot + 1;
    return NULL;
}

static PyObject *context_unpack(PyObject *self, PyObject *args)
{
    PyObject *o_data, *o_table;
    if (!PyArg_ParseTuple(args, "OO:context_unpack", &o_data, &o_table))
        return NULL;
    Py_buffer data = {0}, tab = {0};
    if (sk_get_buffer(o_data, &data, "B", 1, 0, "data") < 0)
        return NULL;
    if (sk_get_buffer(o_table, &tab, "I", 4, 1, "table") < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    const unsigned char *p = data.buf;
    uint32_t *table = tab.buf;
    Py_ssize_t n = data.shape[0], slots = tab.shape[0] / 2, at = 0, next = 0, stored = 0;
    const char *why = tab.shape[0] % 2 ? "the table is not two counts a slot" : NULL;
    if (!why)
        why = ctx_packed_header(p, n, &at, slots);
    Py_BEGIN_ALLOW_THREADS
    while (!why && at < n) {
        Py_ssize_t before = next, slot;
        uint64_t c0, c1;
        if ((why = ctx_packed_entry(p, n, &at, slots, &next, &slot, &c0, &c1)) != NULL)
            break;
        memset(table + 2 * before, 0, sizeof(uint32_t) * 2 * (size_t)(slot - before));
        table[2 * slot] = (uint32_t)c0;
        table[2 * slot + 1] = (uint32_t)c1;
        stored++;
    }
    if (!why)
        memset(table + 2 * next, 0, sizeof(uint32_t) * 2 * (size_t)(slots - next));
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    PyBuffer_Release(&tab);
    if (why) {
        PyErr_Format(PyExc_ValueError, "packed context table: %s", why);
        return NULL;
    }
    return PyLong_FromSsize_t(stored);
}

/* context_index(data, bits) -> bytes: a packed context table (as context_unpack reads it) checked
   whole, with the same refusals, and indexed for context_gather: for each block of 64 slots, the
   byte offset of its first stored slot in data and the slot stored before it (-1: none), two
   int64 a block. Pipe mode scores one message from the packed table through it: a few thousand
   slots looked up instead of 2**bits written out. */
#define CTX_BLOCK_BITS 6
static PyObject *context_index(PyObject *self, PyObject *args)
{
    PyObject *o_data;
    int bits;
    if (!PyArg_ParseTuple(args, "Oi:context_index", &o_data, &bits))
        return NULL;
    if (bits < CTX_BLOCK_BITS || bits > 30) {
        PyErr_SetString(PyExc_ValueError, "context_index: bits out of range");
        return NULL;
    }
    Py_buffer data = {0};
    if (sk_get_buffer(o_data, &data, "B", 1, 0, "data") < 0)
        return NULL;
    Py_ssize_t blocks = (Py_ssize_t)1 << (bits - CTX_BLOCK_BITS), slots = (Py_ssize_t)1 << bits;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int64_t) * 2 * blocks);
    if (out == NULL) {
        PyBuffer_Release(&data);
        return NULL;
    }
    int64_t *index = (int64_t *)PyBytes_AS_STRING(out);
    const unsigned char *p = data.buf;
    Py_ssize_t n = data.shape[0], at = 0, next = 0, block = 0;
    int64_t previous = -1;
    const char *why;
    Py_BEGIN_ALLOW_THREADS
    why = ctx_packed_header(p, n, &at, slots);
    while (!why && at < n) {
        Py_ssize_t entry = at, slot;
        uint64_t c0, c1;
        if ((why = ctx_packed_entry(p, n, &at, slots, &next, &slot, &c0, &c1)) != NULL)
            break;
        for (; block <= (slot >> CTX_BLOCK_BITS); block++) {      /* blocks up to this slot's start here */
            index[2 * block] = entry;
            index[2 * block + 1] = previous;
        }
        previous = slot;
    }
    for (; !why && block < blocks; block++) {                    /* blocks after the last stored slot */
        index[2 * block] = n;
        index[2 * block + 1] = previous;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    if (why) {
        Py_DECREF(out);
        PyErr_Format(PyExc_ValueError, "packed context table: %s", why);
        return NULL;
    }
    return out;
}

/* The counts of one slot from a packed table checked and indexed by context_index. */
static inline void ctx_lookup(const unsigned char *p, Py_ssize_t n, const int64_t *index, int64_t slot,
                              uint32_t *pair)
{
    int64_t block = slot >> CTX_BLOCK_BITS, previous = index[2 * block + 1];
    Py_ssize_t at = (Py_ssize_t)index[2 * block];
    pair[0] = pair[1] = 0;
    if (at < 0 || at > n)                              /* not an index context_index made: nothing read */
        return;
    while (at < n) {
        uint64_t gap = 0, c0 = 0, c1 = 0;
        if (ctx_varint(p, n, &at, &gap) < 0 || ctx_varint(p, n, &at, &c0) < 0 || ctx_varint(p, n, &at, &c1) < 0)
            return;                                    /* (checked whole by context_index: not met) */
        int64_t here = previous + 1 + (int64_t)gap;
        if (here >= slot) {
            if (here == slot) {
                pair[0] = (uint32_t)c0;
                pair[1] = (uint32_t)c1;
            }
            return;
        }
        previous = here;
    }
}

/* context_gather(texts, order, bits, max_bytes, data, index, table) -> None: the counts of every
   slot the texts' symbols read (what context_ratios reads of them) copied from a packed table
   (data, indexed by context_index) into table, which then scores those texts as the whole table
   would. The other slots of table are not written. */
static PyObject *context_gather(PyObject *self, PyObject *args)
{
    PyObject *o_texts, *o_data, *o_index, *o_table;
    int order, bits;
    Py_ssize_t max_bytes;
    if (!PyArg_ParseTuple(args, "OiinOOO:context_gather", &o_texts, &order, &bits, &max_bytes, &o_data, &o_index,
                          &o_table))
        return NULL;
    Py_buffer data = {0}, index = {0}, tab = {0};
    const SkView views[] = {{o_data, &data, "B", 1, 0, "data"}, {o_index, &index, "B", 1, 0, "index"},
                            {o_table, &tab, "I", 4, 1, "table"}};
    CtxTexts T;
    if (ctx_begin("context_gather", order, bits, CTX_BLOCK_BITS, max_bytes, NULL, o_texts, &T, views, 3) < 0)
        return NULL;
    Py_ssize_t size = (Py_ssize_t)1 << bits;
    int bad = tab.shape[0] != 2 * size
              || index.shape[0] != (Py_ssize_t)sizeof(int64_t) * 2 * (size >> CTX_BLOCK_BITS);
    if (!bad) {
        const unsigned char *p = data.buf;
        const int64_t *ix = (const int64_t *)index.buf;
        uint32_t *table = tab.buf;
        Py_ssize_t n_data = data.shape[0], n_texts = T.n;
        Py_BEGIN_ALLOW_THREADS
        int64_t slot[CTX_MAX_ORDER + 1];
        for (Py_ssize_t t = 0; t < n_texts; t++)
            for (Py_ssize_t i = 0; i <= T.lens[t]; i++) {
                ctx_slots(T.ptrs[t], T.lens[t], i, order, bits, slot);
                for (int k = 0; k <= order; k++)
                    ctx_lookup(p, n_data, ix, slot[k], &table[2 * slot[k]]);
            }
        Py_END_ALLOW_THREADS
    }
    ctx_end(&T, views, 3);
    return sk_none_unless(bad, "context_gather: the index and table do not fit the bits");
}


SK_HIDDEN PyMethodDef sk_models_context_methods[] = {
    {"context_learn", context_learn, METH_VARARGS,
     "context_learn(texts, codes, order, bits, max_bytes, table, sign=1) -> bool\n\n"
     "Count (or with sign -1 uncount) the context slots of every symbol of each text in its class's column "
     "(spamkit.models.context); False: unlearning would go below zero, nothing changed."},
    {"context_unpack", context_unpack, METH_VARARGS,
     "context_unpack(data, table) -> int\n\nA packed context table (spamkit.models.context.pack_table) written out "
     "whole into table; the number of slots with a count."},
    {"context_index", context_index, METH_VARARGS,
     "context_index(data, bits) -> bytes\n\nA packed context table checked whole and indexed by blocks of 64 "
     "slots, for context_gather."},
    {"context_gather", context_gather, METH_VARARGS,
     "context_gather(texts, order, bits, max_bytes, data, index, table) -> None\n\nThe counts of the slots the "
     "texts read, from a packed table, written into table."},
    {"context_ratios", context_ratios, METH_VARARGS,
     "context_ratios(texts, order, bits, max_bytes, table, texts0, texts1, symbols0, symbols1, beta, out, "
     "lengths) -> None\n\nPer text, the blended context models' log-likelihood ratio and its number of symbols."},
    {NULL, NULL, 0, NULL}
};
