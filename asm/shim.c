/* shim.c -- the CPython extension mnemo._kernels: converts Python objects to pointers,
 * picks the kernel backend once from the CPU and releases the GIL around long scans.  No
 * algorithm lives here: the kernels do the work (asm/*.asm, or their C twins in
 * kernels_portable.c).  Splitting one scan across threads is the caller's business (the
 * GIL is released, so Python threads can scan parts in parallel: bench/pytest/bench_kernels.py). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "kernels.h"

/* ---- backends ------------------------------------------------------------------------ */

typedef struct {
    const char *name;
    mnemo_pairscan_fn pairscan;
    mnemo_memeq_fn memeq;
    mnemo_classmask_fn classmask;
} backend_t;

static const backend_t BACKEND_C = {"c", mnemo_pairscan_c, mnemo_memeq_c, mnemo_classmask_c};
#ifdef MNEMO_HAVE_ASM
static const backend_t BACKEND_AVX2 = {"avx2", mnemo_pairscan_avx2, mnemo_memeq_avx2,
                                       mnemo_classmask_avx2};
#endif

static const backend_t *active = &BACKEND_C;
static int cpu_has_avx2 = 0;

#if defined(__x86_64__)
#include <cpuid.h>
/* AVX2 needs three things: the CPU has it (CPUID.7.0:EBX bit 5), the kernels' BMI1
 * instructions tzcnt and blsr (EBX bit 3), and the OS saves the YMM registers (OSXSAVE set
 * and XCR0 bits 1 and 2 on, read with xgetbv). */
static int detect_avx2(void) {
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    if (!(c & (1u << 27)) || !(c & (1u << 28))) return 0; /* OSXSAVE, AVX */
    unsigned int xlo, xhi;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    if ((xlo & 6u) != 6u) return 0;                       /* XMM and YMM state */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (b & (1u << 5)) && (b & (1u << 3));             /* AVX2, BMI1 */
}
#else
static int detect_avx2(void) { return 0; }
#endif

static PyObject *backend(PyObject *self, PyObject *unused) {
    return PyUnicode_FromString(active->name);
}

static PyObject *backends(PyObject *self, PyObject *unused) {
#ifdef MNEMO_HAVE_ASM
    if (cpu_has_avx2) return Py_BuildValue("(ss)", "avx2", "c");
#endif
    return Py_BuildValue("(s)", "c");
}

static PyObject *asm_built(PyObject *self, PyObject *unused) {
#ifdef MNEMO_HAVE_ASM
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

static PyObject *set_backend(PyObject *self, PyObject *arg) {
    if (!PyUnicode_Check(arg))
        return PyErr_Format(PyExc_TypeError, "set_backend(): name must be a str, got %s",
                            Py_TYPE(arg)->tp_name);
    Py_ssize_t size;
    const char *name = PyUnicode_AsUTF8AndSize(arg, &size);
    if (name == NULL) return NULL;
    /* strcmp stops at a NUL: "c\0x" must not pass for "c" */
    if ((size_t)size != strlen(name)) size = -1;
    if (size >= 0 && strcmp(name, "c") == 0) {
        active = &BACKEND_C;
        Py_RETURN_NONE;
    }
#ifdef MNEMO_HAVE_ASM
    if (size >= 0 && strcmp(name, "avx2") == 0 && cpu_has_avx2) {
        active = &BACKEND_AVX2;
        Py_RETURN_NONE;
    }
#endif
    PyObject *avail = backends(self, NULL);
    if (avail == NULL) return NULL;
    PyErr_Format(PyExc_ValueError, "kernel backend %R is not available here; available: %R",
                 arg, avail);
    Py_DECREF(avail);
    return NULL;
}

/* ---- buffers ------------------------------------------------------------------------- */

static int format_is(const Py_buffer *v, const char *allowed) {
    const char *f = v->format ? v->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    return f[0] != '\0' && f[1] == '\0' && strchr(allowed, f[0]) != NULL;
}

/* PyObject_GetBuffer's own errors ("a bytes-like object is required") do not say which
 * argument was wrong: say it, and keep the reason. */
static int get_buffer(PyObject *obj, Py_buffer *v, int flags, const char *fname,
                      const char *what, const char *need) {
    if (PyObject_GetBuffer(obj, v, flags) == 0) return 0;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyErr_Format(PyExc_TypeError, "%s(): %s must be %s, got %s (%S)", fname, what, need,
                 Py_TYPE(obj)->tp_name, value ? value : Py_None);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return -1;
}

static int get_tokens(PyObject *obj, const char *fname, Py_buffer *v) {
    if (get_buffer(obj, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT, fname, "tokens",
                   "a contiguous buffer of 16-bit integers") < 0)
        return -1;
    if (v->itemsize != 2 || !format_is(v, "hH")) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): tokens must be a contiguous buffer of 16-bit integers (format 'H' or "
                     "'h'), got format %s with item size %zd",
                     fname, v->format ? v->format : "B", v->itemsize);
        PyBuffer_Release(v);
        return -1;
    }
    return 0;
}

/* An integer argument as a C long long.  Not an int: TypeError naming the argument.  Outside
 * the 64-bit range: ValueError naming it (every such offset or id is out of bounds anyway;
 * Python's OverflowError would not say which argument) -- except for the limit `cap`
 * (saturate = 1), where any huge value means "no limit" and becomes LLONG_MAX. */
static int get_i64_sat(PyObject *obj, const char *fname, const char *what, long long *out,
                       int saturate) {
    PyObject *index = PyNumber_Index(obj);
    if (index == NULL) {
        PyErr_Format(PyExc_TypeError, "%s(): %s must be an int, got %s", fname, what,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    int overflow = 0;
    *out = PyLong_AsLongLongAndOverflow(index, &overflow);
    if (*out == -1 && PyErr_Occurred()) {
        Py_DECREF(index);
        return -1;
    }
    if (overflow > 0 && saturate) *out = LLONG_MAX;
    else if (overflow) {
        PyErr_Format(PyExc_ValueError, "%s(): %s=%S is out of range", fname, what, index);
        Py_DECREF(index);
        return -1;
    }
    Py_DECREF(index);
    return 0;
}

static int get_i64(PyObject *obj, const char *fname, const char *what, long long *out) {
    return get_i64_sat(obj, fname, what, out, 0);
}

/* The range [off, off + n) lies inside a buffer of len bytes.  Written so that nothing can
 * overflow for any 64-bit off and n: `off + n > len` wrapped around for off = 2**63 - 1 and let
 * memeq read far outside its buffers (a segfault; test_every_argument_at_its_extremes). */
static int range_ok(long long off, long long n, Py_ssize_t len) {
    return off >= 0 && n >= 0 && off <= (long long)len && n <= (long long)len - off;
}

/* ---- pair scan ----------------------------------------------------------------------- */

/* Below this many tokens a scan is shorter than releasing and re-taking the GIL. */
#define GIL_RELEASE_MIN 16384
/* Scan pair starts i in [start, stop - 1) of tok; write at most cap positions (absolute
 * indices into tok) to out.  Returns the count. */
static size_t scan(const uint16_t *tok, size_t start, size_t stop, uint32_t a, uint32_t b,
                   int64_t *out, size_t cap) {
    if (stop < start + 2 || cap == 0) return 0;
    size_t n = stop - start, hits;
    mnemo_pairscan_fn fn = active->pairscan;
    if (n >= GIL_RELEASE_MIN) {
        Py_BEGIN_ALLOW_THREADS
        hits = fn(tok + start, n, a, b, out, cap);
        Py_END_ALLOW_THREADS
    } else {
        hits = fn(tok + start, n, a, b, out, cap);
    }
    for (size_t k = 0; k < hits; k++) out[k] += (int64_t)start;
    return hits;
}

/* The one negative stop that means "to the end of tokens", for a caller that does not know
 * the length.  Any other negative stop is an error (it used to
 * mean the end too, which hid arithmetic mistakes in callers). */
#define STOP_AT_END (-1LL)

/* Parse (tokens, a, b, <out or cap>, [start, [stop]]) shared by both entry points. */
static int parse_scan_args(PyObject *const *args, Py_ssize_t nargs, const char *fname,
                           Py_buffer *tv, uint32_t *a, uint32_t *b, size_t *start,
                           size_t *stop) {
    if (nargs < 4 || nargs > 6) {
        PyErr_Format(PyExc_TypeError, "%s() takes 4 to 6 positional arguments, got %zd",
                     fname, nargs);
        return -1;
    }
    long long va, vb, vstart = 0, vstop = STOP_AT_END;
    if (get_i64(args[1], fname, "a", &va) < 0 || get_i64(args[2], fname, "b", &vb) < 0) return -1;
    if (va < 0 || va > 0xffff || vb < 0 || vb > 0xffff) {
        PyErr_Format(PyExc_ValueError, "%s(): token ids must be in 0..65535, got a=%lld b=%lld",
                     fname, va, vb);
        return -1;
    }
    if (nargs > 4 && get_i64(args[4], fname, "start", &vstart) < 0) return -1;
    if (nargs > 5 && get_i64(args[5], fname, "stop", &vstop) < 0) return -1;
    if (vstop < 0 && vstop != STOP_AT_END) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): stop=%lld is negative; give 0 <= stop <= len(tokens), or -1 for the "
                     "end", fname, vstop);
        return -1;
    }
    if (get_tokens(args[0], fname, tv) < 0) return -1;
    long long len = (long long)(tv->len / 2);
    if (vstop == STOP_AT_END) vstop = len;
    if (vstart < 0 || vstart > vstop || vstop > len) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): need 0 <= start <= stop <= len(tokens), got start=%lld stop=%lld "
                     "len=%lld", fname, vstart, vstop, len);
        PyBuffer_Release(tv);
        return -1;
    }
    *a = (uint32_t)va;
    *b = (uint32_t)vb;
    *start = (size_t)vstart;
    *stop = (size_t)vstop;
    return 0;
}

static PyObject *pair_scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer tv, ov;
    uint32_t a, b;
    size_t start, stop;
    if (parse_scan_args(args, nargs, "pair_scan", &tv, &a, &b, &start, &stop) < 0)
        return NULL;
    if (get_buffer(args[3], &ov, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT, "pair_scan",
                   "out", "a writable contiguous buffer of 64-bit integers") < 0) {
        PyBuffer_Release(&tv);
        return NULL;
    }
    if (ov.itemsize != 8 || !format_is(&ov, "qlQL")) {
        PyErr_Format(PyExc_TypeError,
                     "pair_scan(): out must be a writable contiguous buffer of 64-bit integers, "
                     "got format %s with item size %zd", ov.format ? ov.format : "B", ov.itemsize);
        PyBuffer_Release(&ov);
        PyBuffer_Release(&tv);
        return NULL;
    }
    size_t hits = scan((const uint16_t *)tv.buf, start, stop, a, b, (int64_t *)ov.buf,
                       (size_t)(ov.len / 8));
    PyBuffer_Release(&ov);
    PyBuffer_Release(&tv);
    return PyLong_FromSize_t(hits);
}

static PyObject *pair_positions(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer tv;
    uint32_t a, b;
    size_t start, stop;
    if (parse_scan_args(args, nargs, "pair_positions", &tv, &a, &b, &start, &stop) < 0)
        return NULL;
    long long vcap;
    if (get_i64_sat(args[3], "pair_positions", "cap", &vcap, 1) < 0) {
        PyBuffer_Release(&tv);
        return NULL;
    }
    if (vcap < 0) {
        PyBuffer_Release(&tv);
        return PyErr_Format(PyExc_ValueError, "pair_positions(): cap=%lld must be >= 0", vcap);
    }
    size_t cap = (size_t)vcap, most = stop > start ? stop - start - 1 : 0;
    if (cap > most) cap = most;
    if (cap > (size_t)PY_SSIZE_T_MAX / 8) cap = (size_t)PY_SSIZE_T_MAX / 8; /* cap * 8 below */
    PyObject *res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(cap * 8));
    if (res == NULL) {
        PyBuffer_Release(&tv);
        return NULL;
    }
    size_t hits = scan((const uint16_t *)tv.buf, start, stop, a, b,
                       (int64_t *)PyBytes_AS_STRING(res), cap);
    PyBuffer_Release(&tv);
    if (hits != cap && _PyBytes_Resize(&res, (Py_ssize_t)(hits * 8)) < 0) return NULL;
    return res;
}

/* ---- memeq --------------------------------------------------------------------------- */

static PyObject *memeq(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5)
        return PyErr_Format(PyExc_TypeError, "memeq() takes 5 positional arguments, got %zd",
                            nargs);
    long long aoff, boff, n;
    if (get_i64(args[1], "memeq", "a_off", &aoff) < 0 ||
        get_i64(args[3], "memeq", "b_off", &boff) < 0 || get_i64(args[4], "memeq", "n", &n) < 0)
        return NULL;
    Py_buffer av, bv;
    if (get_buffer(args[0], &av, PyBUF_C_CONTIGUOUS, "memeq", "a", "a contiguous buffer") < 0)
        return NULL;
    if (get_buffer(args[2], &bv, PyBUF_C_CONTIGUOUS, "memeq", "b", "a contiguous buffer") < 0) {
        PyBuffer_Release(&av);
        return NULL;
    }
    PyObject *res = NULL;
    if (!range_ok(aoff, n, av.len) || !range_ok(boff, n, bv.len)) {
        /* no `aoff + n` here either: it is the overflow this check exists for */
        PyErr_Format(PyExc_ValueError,
                     "memeq(): ranges out of bounds: a_off=%lld b_off=%lld n=%lld with len(a)=%zd "
                     "len(b)=%zd; need 0 <= a_off, b_off, n and a_off + n <= len(a), "
                     "b_off + n <= len(b)", aoff, boff, n, av.len, bv.len);
    } else {
        size_t room = (size_t)(aoff < boff ? aoff : boff);
        int eq = active->memeq((const uint8_t *)av.buf + aoff, (const uint8_t *)bv.buf + boff,
                               (size_t)n, room);
        res = PyBool_FromLong(eq);
    }
    PyBuffer_Release(&bv);
    PyBuffer_Release(&av);
    return res;
}

/* ---- class masks -------------------------------------------------------------------- */

/* Below this many bytes classifying is shorter than releasing and re-taking the GIL. */
#define CLASSMASK_GIL_MIN 65536

/* class_masks(data, table[, start, stop]) -> bytes: the masks of data[start:stop] (default the
 * whole buffer), without the slice a caller would otherwise copy (a piece of a long text). */
static PyObject *class_masks(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 && nargs != 4)
        return PyErr_Format(PyExc_TypeError,
                            "class_masks() takes 2 or 4 positional arguments, got %zd", nargs);
    long long start = 0, stop = -1;
    if (nargs == 4 && (get_i64(args[2], "class_masks", "start", &start) < 0 ||
                       get_i64(args[3], "class_masks", "stop", &stop) < 0))
        return NULL;
    Py_buffer dv, tv;
    if (get_buffer(args[0], &dv, PyBUF_C_CONTIGUOUS, "class_masks", "data",
                   "a contiguous buffer") < 0)
        return NULL;
    if (get_buffer(args[1], &tv, PyBUF_C_CONTIGUOUS, "class_masks", "table",
                   "a contiguous buffer of 256 bytes") < 0) {
        PyBuffer_Release(&dv);
        return NULL;
    }
    PyObject *res = NULL;
    if (nargs == 2) stop = (long long)dv.len;
    if (tv.len != 256) {
        PyErr_Format(PyExc_ValueError,
                     "class_masks(): table must hold 256 bytes (the properties of each byte "
                     "value), got %zd", tv.len);
    } else if (start > stop || !range_ok(start, stop - start, dv.len)) {
        PyErr_Format(PyExc_ValueError,
                     "class_masks(): start %lld and stop %lld must satisfy 0 <= start <= stop <= "
                     "len(data) = %zd", start, stop, dv.len);
    } else {
        size_t n = (size_t)(stop - start), blocks = (n + 63) / 64;
        res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(blocks * 64));
        if (res != NULL) {
            mnemo_classmask_fn fn = active->classmask;
            const uint8_t *text = (const uint8_t *)dv.buf + start, *table = (const uint8_t *)tv.buf;
            uint64_t *out = (uint64_t *)PyBytes_AS_STRING(res);
            if (n >= CLASSMASK_GIL_MIN) {
                Py_BEGIN_ALLOW_THREADS
                fn(text, n, table, out);
                Py_END_ALLOW_THREADS
            } else {
                fn(text, n, table, out);
            }
        }
    }
    PyBuffer_Release(&tv);
    PyBuffer_Release(&dv);
    return res;
}

/* ---- huge pages --------------------------------------------------------------------- */

/* The encoder's tables (several MB, read at random: one lookup a chunk) and the int objects its
 * lists are made of sit on 4 KB pages, so nearly every lookup also misses the TLB, and in a
 * virtual machine a TLB miss walks two page tables.  MADV_COLLAPSE (Linux 6.1) moves the
 * pages of each 2 MB-aligned region into one huge page, now, whatever the system's THP
 * setting ("madvise" on this project's machines, where memory nobody advised never gets
 * one).  A region the memory only partly covers is taken whole: it is collapsed only when it
 * lies inside one mapping, and a mapping that holds both ends of it holds memory of the same
 * kind (anonymous, private: the malloc heap's), whose pages gain a huge page too, and up to
 * 2 MB of zeros where nothing was mapped yet.  Nothing is read or written: it is a hint, and
 * a failed one changes nothing. */
#define HUGE_SPAN ((uintptr_t)1 << 21)
#if defined(__linux__)
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
static Py_ssize_t collapse(uintptr_t lo, uintptr_t hi) {
    if (hi <= lo) return 0;
    lo &= ~(HUGE_SPAN - 1);
    hi = (hi + HUGE_SPAN - 1) & ~(HUGE_SPAN - 1);
    return madvise((void *)lo, (size_t)(hi - lo), MADV_COLLAPSE) == 0 ? (Py_ssize_t)(hi - lo) : 0;
}
#else
static Py_ssize_t collapse(uintptr_t lo, uintptr_t hi) {
    (void)lo;
    (void)hi;
    return 0;
}
#endif

static PyObject *huge_pages(PyObject *self, PyObject *arg) {
    Py_buffer v;
    if (get_buffer(arg, &v, PyBUF_SIMPLE, "huge_pages", "memory", "a buffer") < 0) return NULL;
    uintptr_t lo = (uintptr_t)v.buf;
    Py_ssize_t done = collapse(lo, lo + (uintptr_t)v.len);
    PyBuffer_Release(&v);
    return PyLong_FromSsize_t(done);
}

static PyObject *huge_pages_of(PyObject *self, PyObject *arg) {
    if (!PyList_Check(arg))
        return PyErr_Format(PyExc_TypeError, "huge_pages_of(): objects must be a list, got %s",
                            Py_TYPE(arg)->tp_name);
    Py_ssize_t n = PyList_GET_SIZE(arg);
    if (n == 0) return PyLong_FromLong(0);
    /* the list's array of references, then the span of the objects themselves */
    uintptr_t at = (uintptr_t)((PyListObject *)arg)->ob_item;
    Py_ssize_t done = collapse(at, at + (uintptr_t)n * sizeof(PyObject *));
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyList_GET_ITEM(arg, i);
        uintptr_t a = (uintptr_t)o, b = a + (uintptr_t)Py_TYPE(o)->tp_basicsize;
        if (a < lo) lo = a;
        if (b > hi) hi = b;
    }
    /* objects scattered over more than 64 MB: not what this is for */
    if (hi - lo <= ((uintptr_t)64 << 20)) done += collapse(lo, hi);
    return PyLong_FromSsize_t(done);
}

static PyObject *align_offset(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2)
        return PyErr_Format(PyExc_TypeError, "align_offset() takes 2 positional arguments, got %zd",
                            nargs);
    long long align;
    if (get_i64(args[1], "align_offset", "alignment", &align) < 0) return NULL;
    if (align <= 0 || (align & (align - 1)) != 0)
        return PyErr_Format(PyExc_ValueError,
                            "align_offset(): alignment must be a power of two, got %lld", align);
    Py_buffer v;
    if (get_buffer(args[0], &v, PyBUF_SIMPLE, "align_offset", "memory", "a buffer") < 0)
        return NULL;
    uintptr_t a = (uintptr_t)v.buf;
    PyBuffer_Release(&v);
    return PyLong_FromUnsignedLongLong((unsigned long long)((-a) & ((uintptr_t)align - 1)));
}

/* ---- id lists ----------------------------------------------------------------------- */

/* How far ahead id_list touches: the reference array's slot IDS_SLOT_AHEAD ids ahead, the
 * object IDS_OBJECT_AHEAD ids ahead (its slot was fetched a few ids before). */
#define IDS_SLOT_AHEAD 24
#define IDS_OBJECT_AHEAD 12
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p, w) __builtin_prefetch((p), (w))
#else
#define PREFETCH(p, w) ((void)(p))
#endif

static inline uint32_t id_at(const uint8_t *p, Py_ssize_t i, int wide) {
    if (wide) {
        const uint8_t *q = p + 4 * i;
        return (uint32_t)q[0] | ((uint32_t)q[1] << 8) | ((uint32_t)q[2] << 16) | ((uint32_t)q[3] << 24);
    }
    const uint8_t *q = p + 2 * i;
    return (uint32_t)q[0] | ((uint32_t)q[1] << 8);
}

/* The packed ids in a librt.strings BytesWriter (the buffer the compiled encoder writes to),
 * read where they are: getvalue() would copy them into a new bytes object first (4 bytes an
 * id of fresh memory, on top of the list's 8).  The layout read here is librt.strings' ABI 1
 * (its librt_strings_common.h), which mypyc-compiled code already inlines; librt's capsule
 * says which ABI is loaded, and any other gives writer_data() nothing, so the caller takes the
 * copy. */
typedef struct {
    PyObject_HEAD
    char *buf;
    Py_ssize_t len;
    Py_ssize_t capacity;
} librt_bytes_writer_abi1;

static PyTypeObject *writer_type = NULL; /* the BytesWriter type, once librt's ABI is known */
static int writer_known = 0;            /* 1 once looked up (found or not) */

static void find_writer_type(void) {
    writer_known = 1;
    void **api = (void **)PyCapsule_Import("librt.strings._C_API", 0);
    if (api == NULL) {
        PyErr_Clear();
        return;
    }
    int (*abi)(void) = (int (*)(void))api[0];
    int (*api_version)(void) = (int (*)(void))api[1];
    PyTypeObject *(*type_of)(void) = (PyTypeObject * (*)(void)) api[6];
    /* API 4 is the one read here; later ones keep its functions where they are */
    if (abi() == 1 && api_version() >= 4) writer_type = type_of();
}

static PyObject *writer_in_place(PyObject *self, PyObject *unused) {
    if (!writer_known) find_writer_type();
    return PyBool_FromLong(writer_type != NULL);
}

/* 1 with the writer's bytes in *data, *len when `obj` is a BytesWriter of a known layout;
 * 0 otherwise (not an error). */
static int writer_data(PyObject *obj, const uint8_t **data, Py_ssize_t *len) {
    if (!writer_known) find_writer_type();
    if (writer_type == NULL || Py_TYPE(obj) != writer_type) return 0;
    const librt_bytes_writer_abi1 *w = (const librt_bytes_writer_abi1 *)obj;
    *data = (const uint8_t *)w->buf;
    *len = w->len;
    return 1;
}

/* The list of a text's ids, made of pre-made int objects: every id's object is a reference
 * count to raise in ~3 MB of objects (cl100k) read in no order, and the compiled loop waited
 * for each miss in turn (Encoder.ids_list, its twin).  Here each object, and its slot in the
 * reference array, is fetched some ids before its count is raised, so the misses overlap. */
/* items[0..n) = the objects of the n ids at p (a new int for an id past the objects), each
 * object and its slot fetched ahead.  -1 with an exception set (items from the failure on are
 * left NULL, which list_dealloc skips). */
/* items[i] = a new int for id x, past the objects (off the hot loop). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline, cold))
#endif
static int new_id(PyObject **items, Py_ssize_t i, uint32_t x) {
    PyObject *o = PyLong_FromUnsignedLong(x);
    if (o == NULL) return -1;
    items[i] = o;
    return 0;
}

static inline int put_id(PyObject **items, Py_ssize_t i, uint32_t x, PyObject **objs,
                         uint32_t n_objs) {
    if (x >= n_objs) return new_id(items, i, x);
    PyObject *o = objs[x];
    Py_INCREF(o);
    items[i] = o;
    return 0;
}

/* fill_ids for one width: the ids that have IDS_SLOT_AHEAD more after them in one loop
 * without bounds tests, then the last few.  Each width gets a loop of its own, short: with the
 * width tested inside, and the bounds, the loop spanned three 64-byte lines of code, and
 * moving it by 48 bytes (a function added before it in this file) made a list of 125,000 ids
 * 17-37 % slower to fill. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
static inline int fill_width(PyObject **items, const uint8_t *p, Py_ssize_t n, PyObject **objs,
                             uint32_t n_objs, const int wide) {
    Py_ssize_t i = 0;
    for (; i < n - IDS_SLOT_AHEAD; i++) {
        uint32_t y = id_at(p, i + IDS_SLOT_AHEAD, wide);
        if (y < n_objs) PREFETCH(&objs[y], 0);
        uint32_t z = id_at(p, i + IDS_OBJECT_AHEAD, wide);
        if (z < n_objs) PREFETCH(objs[z], 1);
        if (put_id(items, i, id_at(p, i, wide), objs, n_objs) < 0) return -1;
    }
    for (; i < n; i++) {
        if (i + IDS_OBJECT_AHEAD < n) {
            uint32_t z = id_at(p, i + IDS_OBJECT_AHEAD, wide);
            if (z < n_objs) PREFETCH(objs[z], 1);
        }
        if (put_id(items, i, id_at(p, i, wide), objs, n_objs) < 0) return -1;
    }
    return 0;
}

static int fill_ids(PyObject **items, const uint8_t *p, Py_ssize_t n, PyObject **objs,
                    uint32_t n_objs, int wide) {
    return wide ? fill_width(items, p, n, objs, n_objs, 1) : fill_width(items, p, n, objs, n_objs, 0);
}

static uint32_t objects_count(PyObject *objects) {
    Py_ssize_t n = PyList_GET_SIZE(objects);
    return (uint32_t)(n < (Py_ssize_t)UINT32_MAX ? n : (Py_ssize_t)UINT32_MAX);
}

/* The packed ids of `arg` (a buffer, or a BytesWriter read in place) and their count; -1 with
 * an exception when they are not a whole number of ids.  *v is to be released when v->obj. */
static Py_ssize_t packed_ids(PyObject *arg, int wide, const char *fname, Py_buffer *v,
                             const uint8_t **p) {
    Py_ssize_t size;
    v->obj = NULL;
    if (!writer_data(arg, p, &size)) {
        if (get_buffer(arg, v, PyBUF_C_CONTIGUOUS, fname, "packed",
                       "a contiguous buffer or a BytesWriter (see writer_in_place)") < 0)
            return -1;
        *p = (const uint8_t *)v->buf;
        size = v->len;
    }
    Py_ssize_t step = wide ? 4 : 2;
    if (size % step != 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): packed holds %zd bytes, not a whole number of %zd-byte ids", fname,
                     size, step);
        if (v->obj) PyBuffer_Release(v);
        return -1;
    }
    return size / step;
}

/* A large list's array of references, not written yet: its pages fault in 2 MB at a time
 * (MADV_HUGEPAGE on the 2 MB-aligned span inside it).  glibc maps such an array afresh for a
 * call of a few MB once its heap was trimmed, and on this project's VMs a 4 KB fault costs
 * about 1.5 us: 2,500 of them for a 10 MB list. */
#define FRESH_HUGE_MIN ((size_t)4 << 20)
static void fresh_huge(void *at, size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size < FRESH_HUGE_MIN) return;
    uintptr_t lo = ((uintptr_t)at + HUGE_SPAN - 1) & ~(HUGE_SPAN - 1);
    uintptr_t hi = ((uintptr_t)at + size) & ~(HUGE_SPAN - 1);
    if (hi > lo) (void)madvise((void *)lo, (size_t)(hi - lo), MADV_HUGEPAGE);
#else
    (void)at;
    (void)size;
#endif
}

/* The arguments id_list and id_lists share: (packed, objects, wide, ...), `want` of them.
 * Sets *wide; 0, or -1 with a TypeError. */
static int id_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *fname,
                   int *wide) {
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd positional arguments, got %zd", fname, want,
                     nargs);
        return -1;
    }
    if (!PyList_Check(args[1])) {
        PyErr_Format(PyExc_TypeError, "%s(): objects must be a list, got %s", fname,
                     Py_TYPE(args[1])->tp_name);
        return -1;
    }
    *wide = PyObject_IsTrue(args[2]);
    return *wide < 0 ? -1 : 0;
}

static PyObject *id_list(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int wide;
    if (id_args(args, nargs, 3, "id_list", &wide) < 0) return NULL;
    PyObject *objects = args[1];
    Py_buffer v;
    const uint8_t *p;
    Py_ssize_t n = packed_ids(args[0], wide, "id_list", &v, &p);
    if (n < 0) return NULL;
    PyObject *out = PyList_New(n);
    if (out != NULL) fresh_huge(((PyListObject *)out)->ob_item, (size_t)n * sizeof(PyObject *));
    if (out != NULL &&
        fill_ids(((PyListObject *)out)->ob_item, p, n, ((PyListObject *)objects)->ob_item,
                 objects_count(objects), wide) < 0)
        Py_CLEAR(out);
    if (v.obj) PyBuffer_Release(&v);
    return out;
}

/* One list per text of a batch, made as id_list makes one: `lengths` holds each text's id
 * count (int64, native order) and `packed` all their ids back to back (encode_batch's
 * unpacking, where the compiled encode_chunk.lists_of, its twin, waited for each object's
 * miss in turn). */
static PyObject *id_lists(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int wide;
    if (id_args(args, nargs, 4, "id_lists", &wide) < 0) return NULL;
    PyObject *objects = args[1];
    Py_buffer lv;
    if (get_buffer(args[3], &lv, PyBUF_C_CONTIGUOUS, "id_lists", "lengths",
                   "a contiguous buffer of int64") < 0)
        return NULL;
    if (lv.len % 8 != 0) {
        PyErr_Format(PyExc_ValueError,
                     "id_lists(): lengths holds %zd bytes, not a whole number of int64", lv.len);
        PyBuffer_Release(&lv);
        return NULL;
    }
    Py_buffer v;
    const uint8_t *p;
    Py_ssize_t n = packed_ids(args[0], wide, "id_lists", &v, &p);
    if (n < 0) {
        PyBuffer_Release(&lv);
        return NULL;
    }
    Py_ssize_t texts = lv.len / 8;
    const uint8_t *lp = (const uint8_t *)lv.buf;
    PyObject **objs = ((PyListObject *)objects)->ob_item;
    uint32_t n_objs = objects_count(objects);
    PyObject *out = PyList_New(texts);
    Py_ssize_t pos = 0;
    for (Py_ssize_t k = 0; out != NULL && k < texts; k++) {
        int64_t m;
        memcpy(&m, lp + 8 * k, 8);
        if (m < 0 || m > n - pos) {
            PyErr_Format(PyExc_ValueError,
                         "id_lists(): text %zd's length of %lld ids is more than the packed ids "
                         "hold (%zd left)",
                         k, (long long)m, n - pos);
            Py_CLEAR(out);
            break;
        }
        PyObject *lst = PyList_New((Py_ssize_t)m);
        if (lst == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, k, lst);
        if (fill_ids(((PyListObject *)lst)->ob_item, p + pos * (wide ? 4 : 2), (Py_ssize_t)m,
                     objs, n_objs, wide) < 0) {
            Py_CLEAR(out);
            break;
        }
        pos += (Py_ssize_t)m;
    }
    if (v.obj) PyBuffer_Release(&v);
    PyBuffer_Release(&lv);
    return out;
}

/* The public ids of packed internal ids, as a new bytearray of native uint16 or uint32 items:
 * table[x] for each id x when `table` is a buffer of 16- or 32-bit items (an imported
 * vocabulary's id map, the Tokenizer's _public_array), else x itself as uint32.  The numpy
 * arrays of encode_to_numpy and of the flat batch are made from it with np.frombuffer (a
 * bytearray: the array is writable, as np.array's is).  Before, numpy's take did the gather:
 * it first copied the packed ids out of the encoder's buffer (getvalue), then cast them to an
 * intp index array (8 bytes an id of fresh memory), then gathered. */
static PyObject *id_array(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "id_array() takes 3 positional arguments, got %zd", nargs);
        return NULL;
    }
    int wide = PyObject_IsTrue(args[1]);
    if (wide < 0) return NULL;
    Py_buffer tv;
    tv.obj = NULL;
    Py_ssize_t width = 4, n_table = 0;
    if (args[2] != Py_None) {
        if (get_buffer(args[2], &tv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT, "id_array", "table",
                       "None or a contiguous buffer of 16- or 32-bit unsigned integers") < 0)
            return NULL;
        if (!((tv.itemsize == 2 && format_is(&tv, "H")) ||
              (tv.itemsize == 4 && format_is(&tv, "IL")))) {
            PyErr_Format(PyExc_TypeError,
                         "id_array(): table must be a contiguous buffer of 16- or 32-bit "
                         "unsigned integers (format 'H' or 'I'), got format %s with item size %zd",
                         tv.format ? tv.format : "B", tv.itemsize);
            PyBuffer_Release(&tv);
            return NULL;
        }
        width = tv.itemsize;
        n_table = tv.len / tv.itemsize;
    }
    Py_buffer v;
    const uint8_t *p;
    Py_ssize_t n = packed_ids(args[0], wide, "id_array", &v, &p);
    PyObject *out = NULL;
    if (n >= 0) out = PyByteArray_FromStringAndSize(NULL, n * width);
    if (out != NULL) {
        uint8_t *o = (uint8_t *)PyByteArray_AS_STRING(out);
        if (tv.obj == NULL) {
            uint32_t *o32 = (uint32_t *)o;
            for (Py_ssize_t i = 0; i < n; i++) o32[i] = id_at(p, i, wide);
        } else {
            for (Py_ssize_t i = 0; i < n; i++) {
                uint32_t x = id_at(p, i, wide);
                if ((Py_ssize_t)x >= n_table) {
                    PyErr_Format(PyExc_ValueError,
                                 "id_array(): id %u at %zd is past the table's %zd entries", x,
                                 i, n_table);
                    Py_CLEAR(out);
                    break;
                }
                if (width == 4) ((uint32_t *)o)[i] = ((const uint32_t *)tv.buf)[x];
                else ((uint16_t *)o)[i] = ((const uint16_t *)tv.buf)[x];
            }
        }
    }
    if (n >= 0 && v.obj) PyBuffer_Release(&v);
    if (tv.obj) PyBuffer_Release(&tv);
    return out;
}

/* ---- lists the cyclic GC need not walk ------------------------------------------------ */

/* Whether o can be in no reference cycle: an object of a type the GC does not know (int,
 * bytes, str, float, None ...) or one it does not track. */
static inline int gc_atom(PyObject *o) { return !PyObject_IS_GC(o) || !PyObject_GC_IsTracked(o); }

/* Whether o is a tuple of atoms (CPython's own collections untrack such a tuple the first
 * time they see it: _PyTuple_MaybeUntrack). */
static int atom_tuple(PyObject *o) {
    if (!PyTuple_CheckExact(o)) return 0;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(o); j++)
        if (!gc_atom(PyTuple_GET_ITEM(o, j))) return 0;
    return 1;
}

/* untrack_atoms(objects): when every item of the list is an atom or a tuple of atoms,
 * untrack those tuples and the list and return True; else change nothing and return False.
 * A vocabulary's lists of 128,000-200,000 ints, bytes and pairs were walked item by item by
 * every full collection of the process (an item's type read for each: 7-14 ms a collection).
 * Appending to such a list later does not track it again: it is for lists that stay atoms.
 * A list that is not tracked is left as it is (True): only this module untracks lists. */
static PyObject *untrack_atoms(PyObject *self, PyObject *arg) {
    if (!PyList_CheckExact(arg)) {
        PyErr_Format(PyExc_TypeError, "untrack_atoms(): objects must be a list, got %s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    if (!PyObject_GC_IsTracked(arg)) Py_RETURN_TRUE; /* this function's, or pair_list's */
    Py_ssize_t n = PyList_GET_SIZE(arg);
    PyObject **items = ((PyListObject *)arg)->ob_item;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!gc_atom(items[i]) && !atom_tuple(items[i])) Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!gc_atom(items[i])) PyObject_GC_UnTrack(items[i]);
    PyObject_GC_UnTrack(arg);
    Py_RETURN_TRUE;
}

/* The int object of x: objects[x] (a new reference) when x indexes the list `objects` (may be
 * NULL), else a new int. */
static inline PyObject *int_of(int32_t x, PyObject **objs, Py_ssize_t n_objs) {
    if (x >= 0 && (Py_ssize_t)x < n_objs) {
        Py_INCREF(objs[x]);
        return objs[x];
    }
    return PyLong_FromLong(x);
}

/* pair_list(packed, objects) -> [(a, b), ...] of the int32 pairs in `packed` (native order; a
 * buffer, or a BytesWriter read in place), the tuples and the list untracked as untrack_atoms
 * leaves them: a vocabulary's merges (ranks.rank_vocab), whose 128,000-200,000 tuples each
 * young collection walked and untracked in turn while they were made.  A value that indexes
 * the list `objects` (or None) is that item (the vocabulary's int objects, shared: two new ints
 * a merge were 8 MB of o200k's fresh memory), any other a new int. */
static PyObject *pair_list(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "pair_list() takes 2 positional arguments, got %zd", nargs);
        return NULL;
    }
    PyObject **objs = NULL;
    Py_ssize_t n_objs = 0;
    if (args[1] != Py_None) {
        if (!PyList_Check(args[1])) {
            PyErr_Format(PyExc_TypeError, "pair_list(): objects must be a list or None, got %s",
                         Py_TYPE(args[1])->tp_name);
            return NULL;
        }
        objs = ((PyListObject *)args[1])->ob_item;
        n_objs = PyList_GET_SIZE(args[1]);
    }
    Py_buffer v;
    const uint8_t *p;
    Py_ssize_t n = packed_ids(args[0], 1, "pair_list", &v, &p);
    if (n < 0) return NULL;
    PyObject *out = NULL;
    if (n % 2 != 0) {
        PyErr_Format(PyExc_ValueError, "pair_list(): packed holds %zd int32, not whole pairs", n);
        goto done;
    }
    out = PyList_New(n / 2);
    if (out == NULL) goto done;
    PyObject_GC_UnTrack(out);
    /* No collection while the loop runs: each 700 tuples made would start one (and each tenth
     * of those a collection of the middle generation, then a full one), and none could find
     * anything in what it makes: untracked tuples of ints.  (Nothing in the loop runs Python
     * code, so `objects` cannot change under it.) */
    int was_enabled = PyGC_Disable();
    for (Py_ssize_t k = 0; k < n / 2; k++) {
        int32_t ab[2];
        memcpy(ab, p + 8 * k, 8);
        PyObject *a = int_of(ab[0], objs, n_objs);
        PyObject *b = a ? int_of(ab[1], objs, n_objs) : NULL;
        PyObject *t = b ? PyTuple_New(2) : NULL;
        if (t == NULL) {
            Py_XDECREF(a);
            Py_XDECREF(b);
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(t, 0, a);
        PyTuple_SET_ITEM(t, 1, b);
        PyObject_GC_UnTrack(t);
        PyList_SET_ITEM(out, k, t);
    }
    if (was_enabled) PyGC_Enable();
done:
    if (v.obj) PyBuffer_Release(&v);
    return out;
}

/* ---- reading a file ------------------------------------------------------------------ */

/* read_fd(fd, size) -> bytes: up to `size` bytes of the open file `fd` from where it stands, read
 * into the bytes object itself (fewer at the end of the file), with the GIL released.  A buffer
 * of 4 MB or more faults in 2 MB at a time (fresh_huge, before any byte is written): a 17.6 MB
 * tokenizer.json took 4,300 faults and 10 ms to read, and 1.4 ms to give back, against 5 ms and
 * 0.3 ms so (docs/speed.md, "A load without the collapse").  An error of read(2) is an OSError
 * (EINTR: the signal handlers run, then the read goes on). */
static PyObject *read_fd(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "read_fd() takes 2 positional arguments, got %zd", nargs);
        return NULL;
    }
    long long fd, want;
    if (get_i64(args[0], "read_fd", "fd", &fd) < 0 || get_i64(args[1], "read_fd", "size", &want) < 0)
        return NULL;
    if (fd < 0 || fd > INT_MAX || want < 0 || want > PY_SSIZE_T_MAX) {
        PyErr_Format(PyExc_ValueError, "read_fd(): fd=%lld and size=%lld must be >= 0", fd, want);
        return NULL;
    }
    Py_ssize_t size = (Py_ssize_t)want;
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (out == NULL) return NULL;
    char *buf = PyBytes_AS_STRING(out);
    fresh_huge(buf, (size_t)size);
    Py_ssize_t got = 0;
    while (got < size) {
        ssize_t r;
        Py_BEGIN_ALLOW_THREADS
        r = read((int)fd, buf + got, (size_t)(size - got));
        Py_END_ALLOW_THREADS
        if (r == 0) break;
        if (r < 0) {
            if (errno == EINTR) {
                if (PyErr_CheckSignals() < 0) goto fail;
                continue;
            }
            PyErr_SetFromErrno(PyExc_OSError);
            goto fail;
        }
        got += r;
    }
    if (got < size && _PyBytes_Resize(&out, got) < 0) return NULL;
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* utf8_of(text) -> bytes: text.encode("utf-8") for a str of ASCII characters, copied into a
 * bytes object whose pages fault in 2 MB at a time when it is 4 MB or more (fresh_huge, as
 * read_fd).  Any other str is CPython's own encoding (PyUnicode_AsUTF8String, which raises
 * UnicodeEncodeError on a lone surrogate).  Encoding 10 MB of text took 2,400 page faults of
 * fresh memory a call, which glibc gives back to the kernel when the call frees its buffers
 * (docs/speed.md, "Fresh memory of a long text"). */
static PyObject *utf8_of(PyObject *self, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "utf8_of(): text must be a str, got %s",
                     Py_TYPE(text)->tp_name);
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) return NULL;
#endif
    if (!PyUnicode_IS_ASCII(text)) return PyUnicode_AsUTF8String(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n);
    if (out == NULL) return NULL;
    char *buf = PyBytes_AS_STRING(out);
    fresh_huge(buf, (size_t)n);
    memcpy(buf, PyUnicode_DATA(text), (size_t)n);
    return out;
}

/* ---- module -------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"backend", backend, METH_NOARGS, "The name of the kernel backend in use."},
    {"backends", backends, METH_NOARGS, "The backends this build can run on this CPU."},
    {"asm_built", asm_built, METH_NOARGS, "Whether the NASM kernels were linked in."},
    {"set_backend", set_backend, METH_O, "Use the named backend (for tests and benchmarks)."},
    {"pair_scan", (PyCFunction)(void (*)(void))pair_scan, METH_FASTCALL,
     "pair_scan(tokens, a, b, out, start=0, stop=-1) -> int"},
    {"pair_positions", (PyCFunction)(void (*)(void))pair_positions, METH_FASTCALL,
     "pair_positions(tokens, a, b, cap, start=0, stop=-1) -> bytes"},
    {"memeq", (PyCFunction)(void (*)(void))memeq, METH_FASTCALL,
     "memeq(a, a_off, b, b_off, n) -> bool"},
    {"class_masks", (PyCFunction)(void (*)(void))class_masks, METH_FASTCALL,
     "class_masks(data, table) -> bytes"},
    {"huge_pages", huge_pages, METH_O, "huge_pages(memory) -> int"},
    {"id_lists", (PyCFunction)(void (*)(void))id_lists, METH_FASTCALL,
     "id_lists(packed, objects, wide, lengths) -> list of lists"},
    {"writer_in_place", writer_in_place, METH_NOARGS,
     "writer_in_place() -> bool: whether id_list reads a BytesWriter where it is"},
    {"align_offset", (PyCFunction)(void (*)(void))align_offset, METH_FASTCALL,
     "align_offset(memory, alignment) -> int"},
    {"id_array", (PyCFunction)(void (*)(void))id_array, METH_FASTCALL,
     "id_array(packed, wide, table) -> bytearray"},
    {"id_list", (PyCFunction)(void (*)(void))id_list, METH_FASTCALL,
     "id_list(packed, objects, wide) -> list"},
    {"huge_pages_of", huge_pages_of, METH_O, "huge_pages_of(objects) -> int"},
    {"untrack_atoms", untrack_atoms, METH_O, "untrack_atoms(objects) -> bool"},
    {"pair_list", (PyCFunction)(void (*)(void))pair_list, METH_FASTCALL,
     "pair_list(packed, objects) -> list of (int, int)"},
    {"read_fd", (PyCFunction)(void (*)(void))read_fd, METH_FASTCALL,
     "read_fd(fd, size) -> bytes"},
    {"utf8_of", utf8_of, METH_O, "utf8_of(text) -> bytes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "mnemo._kernels",
                                    "mnemo's native kernels (NASM with portable C twins).",
                                    -1, methods};

PyMODINIT_FUNC PyInit__kernels(void) {
    cpu_has_avx2 = detect_avx2();
#ifdef MNEMO_HAVE_ASM
    if (cpu_has_avx2) active = &BACKEND_AVX2;
#endif
    return PyModule_Create(&module);
}
