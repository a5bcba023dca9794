/* npy.c - NumPy .npy reading and writing, generated data sources, and
 * printing arrays as NumPy 1.24 prints them.  See npy.h for the contract.
 *
 * The .npy format: the magic "\x93NUMPY", a major and minor version byte, the
 * header length (2 bytes little-endian in 1.0, 4 in 2.0 and 3.0), then a
 * Python dict literal {'descr': '<f8', 'fortran_order': False, 'shape': (3,
 * 4), } padded with spaces and a newline, then the raw data.  Nothing in a
 * file is trusted: the header is parsed by a small strict parser, every size
 * product is checked for overflow and the data length against the file size
 * before anything is allocated.
 *
 * Printing mirrors numpy/core/arrayprint.py (_formatArray, IntegerFormat,
 * BoolFormat, FloatingFormat) with the default options; the comments there
 * name the Python function each piece follows.
 */
#include <assert.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "npy.h"
#include "../runtime/half.h"

static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

static bool host_is_little_endian(void)
{
    const uint16_t probe = 1;
    unsigned char first;
    memcpy(&first, &probe, 1);
    return first == 1;
}

static bool multiply_checked(int64_t a, int64_t b, int64_t *out)
{
    if (a != 0 && b > INT64_MAX / a)
        return false;
    *out = a * b;
    return true;
}

bcg_status npy_size(const npy_array *a, int64_t *elements, size_t *bytes, bcg_error *err)
{
    int64_t count = 1;
    for (int k = 0; k < a->shape.rank; k++) {
        if (a->shape.dims[k] < 0)
            return fail(err, BCG_ERR_SHAPE, "dimension %d has negative size %" PRId64, k,
                        a->shape.dims[k]);
        if (!multiply_checked(count, a->shape.dims[k], &count))
            return fail(err, BCG_ERR_LIMIT, "the array has more than 2^63 elements");
    }
    int64_t size = (int64_t)bcg_dtype_size(a->dtype), total;
    if (!multiply_checked(count, size, &total) || total > NPY_MAX_BYTES)
        return fail(err, BCG_ERR_LIMIT,
                    "the array needs more than NPY_MAX_BYTES (2^40) bytes (%" PRId64
                    " elements of %s)", count, bcg_dtype_name(a->dtype));
    *elements = count;
    *bytes = (size_t)total;
    return BCG_OK;
}

void npy_free(npy_array *a)
{
    if (!a)
        return;
    mem_free(a->data);
    a->data = NULL;
}

/* ---- descr ---------------------------------------------------------------- */

/* What a descr's kind letter is, for the "unsupported dtype" message. */
static const char *kind_description(char kind)
{
    switch (kind) {
    case 'c': return "complex";
    case 'S': case 'a': return "byte string";
    case 'U': return "unicode string";
    case 'O': return "Python object";
    case 'V': return "void/raw bytes";
    case 'M': return "datetime";
    case 'm': return "timedelta";
    default: return "unknown kind";
    }
}

/* Maps a descr such as "<f8" to a dtype and whether its data is big-endian. */
static bcg_status parse_descr(const char *path, const char *descr, bcg_dtype *dtype,
                              bool *big_endian, bcg_error *err)
{
    const char *p = descr;
    char order = '=';
    if (*p == '<' || *p == '>' || *p == '|' || *p == '=')
        order = *p++;
    char kind = *p ? *p++ : 0;
    int size = 0;
    bool digits = *p != 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || size > 1000) {
            digits = false;
            break;
        }
        size = size * 10 + (*p - '0');
    }
    bool known = false;
    if (digits) {
        switch (kind) {
        case 'b':
            known = size == 1;
            *dtype = BCG_BOOL;
            break;
        case 'i':
        case 'u': {
            static const bcg_dtype signed_types[] = {BCG_I8, BCG_I16, 0, BCG_I32, 0, 0, 0, BCG_I64};
            static const bcg_dtype unsigned_types[] = {BCG_U8, BCG_U16, 0, BCG_U32, 0, 0, 0, BCG_U64};
            known = size == 1 || size == 2 || size == 4 || size == 8;
            if (known)
                *dtype = kind == 'i' ? signed_types[size - 1] : unsigned_types[size - 1];
            break;
        }
        case 'f':
            known = size == 2 || size == 4 || size == 8;
            if (known)
                *dtype = size == 2 ? BCG_F16 : size == 4 ? BCG_F32 : BCG_F64;
            else
                return fail(err, BCG_ERR_IO,
                            "%s: unsupported dtype '%s' (float%d; bcgen has float16, float32 "
                            "and float64)",
                            path, descr, size * 8);
            break;
        case 'V':
            /* 2-byte raw records: bfloat16 bit patterns, which is what
             * np.save writes for ml_dtypes' bfloat16 (NumPy has no
             * bfloat16; np.load gives them back as 'V2', to be viewed as
             * ml_dtypes.bfloat16).  Little-endian, as ml_dtypes writes. */
            known = size == 2;
            if (known) {
                *dtype = BCG_BF16;
                *big_endian = false;
                return BCG_OK;
            }
            break;
        default:
            break;
        }
    }
    if (!known)
        return fail(err, BCG_ERR_IO,
                    "%s: unsupported dtype '%s' (%s; bcgen reads bool, int8..int64, "
                    "uint8..uint64, float16, float32, float64, and V2 as bfloat16)",
                    path, descr,
                    kind == 'b' || kind == 'i' || kind == 'u' ? "unsupported size"
                                                              : kind_description(kind));
    if (order == '=')
        *big_endian = !host_is_little_endian();
    else
        *big_endian = order == '>';
    return BCG_OK;
}

static const char *descr_of(bcg_dtype t)
{
    static const char *const names[BCG_DTYPE_COUNT] = {
        "|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f4", "<f8",
        "<f2", "|V2", /* bf16: raw 2-byte records, as np.save writes ml_dtypes' bfloat16 */
    };
    return names[t];
}

/* ---- header parser ---------------------------------------------------------- */

/* A cursor over the header dict literal.  Errors name the file and say what
 * was expected where. */
typedef struct header_parser {
    const char *path;
    const char *text, *at, *end;
    bcg_error *err;
} header_parser;

/* The header text for messages: one line, non-printable bytes escaped,
 * trailing padding dropped, at most about 200 bytes. */
static void header_excerpt(const header_parser *h, char *buf, size_t cap)
{
    const char *end = h->end;
    while (end > h->text && (end[-1] == ' ' || end[-1] == '\n'))
        end--;
    size_t n = 0;
    for (const char *p = h->text; p < end && n + 8 < cap; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c < 0x7f)
            buf[n++] = (char)c;
        else
            n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", c);
        if (n > 200 && p + 1 < end) {
            memcpy(buf + n, "...", 3);
            n += 3;
            break;
        }
    }
    buf[n] = 0;
}

static bcg_status header_error(header_parser *h, const char *what)
{
    char excerpt[256];
    header_excerpt(h, excerpt, sizeof excerpt);
    return fail(h->err, BCG_ERR_IO, "%s: malformed .npy header: %s at offset %ld of \"%s\"",
                h->path, what, (long)(h->at - h->text), excerpt);
}

static void skip_space(header_parser *h)
{
    while (h->at < h->end && (*h->at == ' ' || *h->at == '\t' || *h->at == '\n' || *h->at == '\r'))
        h->at++;
}

static bool accept(header_parser *h, char c)
{
    skip_space(h);
    if (h->at < h->end && *h->at == c) {
        h->at++;
        return true;
    }
    return false;
}

static bool accept_word(header_parser *h, const char *word)
{
    skip_space(h);
    size_t n = strlen(word);
    if ((size_t)(h->end - h->at) >= n && memcmp(h->at, word, n) == 0) {
        h->at += n;
        return true;
    }
    return false;
}

/* A quoted string without escapes, into buf. */
static bcg_status parse_string(header_parser *h, char *buf, size_t cap)
{
    skip_space(h);
    if (h->at >= h->end || (*h->at != '\'' && *h->at != '"'))
        return header_error(h, "expected a quoted string");
    char quote = *h->at++;
    size_t n = 0;
    while (h->at < h->end && *h->at != quote) {
        if (*h->at == '\\' || n + 1 >= cap)
            return header_error(h, "unsupported or too long string");
        buf[n++] = *h->at++;
    }
    if (h->at >= h->end)
        return header_error(h, "unterminated string");
    h->at++;
    buf[n] = 0;
    return BCG_OK;
}

static bcg_status parse_shape(header_parser *h, shape *out)
{
    if (!accept(h, '('))
        return header_error(h, "expected '(' to start the shape");
    out->rank = 0;
    bool comma = false;
    for (;;) {
        skip_space(h);
        if (accept(h, ')'))
            break;
        if (h->at < h->end && *h->at == '-')
            return header_error(h, "negative dimension in shape");
        if (h->at >= h->end || *h->at < '0' || *h->at > '9')
            return header_error(h, "expected a dimension (a non-negative integer) in shape");
        int64_t value = 0;
        while (h->at < h->end && *h->at >= '0' && *h->at <= '9') {
            int digit = *h->at++ - '0';
            if (value > (INT64_MAX - digit) / 10)
                return fail(h->err, BCG_ERR_LIMIT, "%s: a dimension in the .npy shape exceeds 2^63-1",
                            h->path);
            value = value * 10 + digit;
        }
        if (h->at < h->end && (*h->at == 'L' || *h->at == 'l'))
            h->at++;   /* Python 2 long suffix, written by old NumPy */
        if (out->rank >= BCG_MAX_RANK)
            return fail(h->err, BCG_ERR_LIMIT,
                        "%s: the array has more than BCG_MAX_RANK (%d) dimensions", h->path,
                        BCG_MAX_RANK);
        out->dims[out->rank++] = value;
        if (accept(h, ')'))
            break;
        if (!accept(h, ','))
            return header_error(h, "expected ',' or ')' in shape");
        comma = true;
    }
    /* "(3)" is an int in parentheses, not a tuple: NumPy rejects it too */
    if (out->rank == 1 && !comma)
        return header_error(h, "the shape is not a tuple (a one-element tuple needs a comma)");
    return BCG_OK;
}

typedef struct npy_header {
    char descr[64];
    bool fortran_order;
    shape shape;
} npy_header;

static bcg_status parse_header(header_parser *h, npy_header *out)
{
    bool have_descr = false, have_order = false, have_shape = false;
    if (!accept(h, '{'))
        return header_error(h, "expected '{'");
    while (!accept(h, '}')) {
        char key[32];
        bcg_status status = parse_string(h, key, sizeof key);
        if (status != BCG_OK)
            return status;
        if (!accept(h, ':'))
            return header_error(h, "expected ':' after a key");
        if (strcmp(key, "descr") == 0 && !have_descr) {
            have_descr = true;
            skip_space(h);
            if (h->at < h->end && *h->at == '[')
                return fail(h->err, BCG_ERR_IO,
                            "%s: unsupported dtype: structured arrays (a list descr) are not supported",
                            h->path);
            status = parse_string(h, out->descr, sizeof out->descr);
        } else if (strcmp(key, "fortran_order") == 0 && !have_order) {
            have_order = true;
            if (accept_word(h, "True"))
                out->fortran_order = true;
            else if (accept_word(h, "False"))
                out->fortran_order = false;
            else
                status = header_error(h, "fortran_order must be True or False");
        } else if (strcmp(key, "shape") == 0 && !have_shape) {
            have_shape = true;
            status = parse_shape(h, &out->shape);
        } else {
            return fail(h->err, BCG_ERR_IO, "%s: malformed .npy header: %s key '%s'", h->path,
                        strcmp(key, "descr") == 0 || strcmp(key, "fortran_order") == 0 ||
                                strcmp(key, "shape") == 0
                            ? "repeated"
                            : "unexpected",
                        key);
        }
        if (status != BCG_OK)
            return status;
        if (accept(h, '}'))
            break;
        if (!accept(h, ','))
            return header_error(h, "expected ',' or '}' after a value");
    }
    skip_space(h);
    if (h->at != h->end)
        return header_error(h, "unexpected text after the dict");
    if (!have_descr || !have_order || !have_shape)
        return fail(h->err, BCG_ERR_IO, "%s: malformed .npy header: missing key '%s'", h->path,
                    !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    return BCG_OK;
}

/* ---- reading ---------------------------------------------------------------- */

static void swap_bytes(unsigned char *data, size_t count, size_t size)
{
    for (size_t i = 0; i < count; i++, data += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = data[a];
            data[a] = data[b];
            data[b] = t;
        }
}

/* Copies Fortran-ordered SRC into C-ordered DST: walks DST in C order and
 * keeps the matching Fortran offset (first index fastest) alongside. */
static void fortran_to_c(unsigned char *dst, const unsigned char *src, const shape *s,
                         int64_t count, size_t size)
{
    int64_t index[BCG_MAX_RANK] = {0}, fortran_stride[BCG_MAX_RANK];
    int64_t stride = 1;
    for (int k = 0; k < s->rank; k++) {
        fortran_stride[k] = stride;
        stride *= s->dims[k];
    }
    int64_t offset = 0;
    for (int64_t i = 0; i < count; i++) {
        memcpy(dst + (size_t)i * size, src + (size_t)offset * size, size);
        for (int k = s->rank - 1; k >= 0; k--) {
            offset += fortran_stride[k];
            if (++index[k] < s->dims[k])
                break;
            offset -= fortran_stride[k] * s->dims[k];
            index[k] = 0;
        }
    }
}

static bcg_status read_exact(FILE *f, void *buf, size_t n, const char *path, const char *what,
                             bcg_error *err)
{
    size_t got = fread(buf, 1, n, f);
    if (got != n) {
        if (ferror(f))
            return fail(err, BCG_ERR_IO, "%s: read error in %s: %s", path, what, strerror(errno));
        return fail(err, BCG_ERR_IO, "%s: truncated .npy file: %s needs %zu bytes, only %zu present",
                    path, what, n, got);
    }
    return BCG_OK;
}

static bcg_status read_file(FILE *f, const char *path, npy_array *out, bcg_error *err)
{
    unsigned char prefix[12];
    bcg_status status = read_exact(f, prefix, 8, path, "the magic string and version", err);
    if (status != BCG_OK)
        return status;
    if (memcmp(prefix, magic, sizeof magic) != 0)
        return fail(err, BCG_ERR_IO, "%s: not a .npy file (the magic string \\x93NUMPY is missing)",
                    path);
    int major = prefix[6], minor = prefix[7];
    if ((major != 1 && major != 2 && major != 3) || minor != 0)
        return fail(err, BCG_ERR_IO, "%s: unsupported .npy format version %d.%d (1.0, 2.0 and 3.0 are read)",
                    path, major, minor);
    size_t length_size = major == 1 ? 2 : 4;
    status = read_exact(f, prefix + 8, length_size, path, "the header length", err);
    if (status != BCG_OK)
        return status;
    uint32_t header_length = (uint32_t)prefix[8] | (uint32_t)prefix[9] << 8;
    if (length_size == 4)
        header_length |= (uint32_t)prefix[10] << 16 | (uint32_t)prefix[11] << 24;
    size_t data_start = 8 + length_size + header_length;

    struct stat st;
    bool size_known = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
    if (size_known && (uint64_t)st.st_size < data_start)
        return fail(err, BCG_ERR_IO, "%s: truncated .npy file: the header length %" PRIu32
                    " runs past the end of the file (%lld bytes)",
                    path, header_length, (long long)st.st_size);
    if (header_length > NPY_MAX_HEADER)
        return fail(err, BCG_ERR_LIMIT, "%s: the .npy header is %" PRIu32
                    " bytes, over NPY_MAX_HEADER (%d)", path, header_length, NPY_MAX_HEADER);

    char *text = mem_alloc(header_length + 1);
    if (!text)
        return fail(err, BCG_ERR_NOMEM, "out of memory reading %s", path);
    status = read_exact(f, text, header_length, path, "the header", err);
    npy_header header;
    memset(&header, 0, sizeof header);
    if (status == BCG_OK) {
        text[header_length] = 0;
        if (memchr(text, 0, header_length))
            status = fail(err, BCG_ERR_IO, "%s: malformed .npy header: it contains a NUL byte", path);
    }
    if (status == BCG_OK) {
        header_parser h = {path, text, text, text + header_length, err};
        status = parse_header(&h, &header);
    }
    mem_free(text);
    if (status != BCG_OK)
        return status;

    bool big_endian = false;
    status = parse_descr(path, header.descr, &out->dtype, &big_endian, err);
    if (status != BCG_OK)
        return status;
    out->shape = header.shape;
    int64_t count;
    size_t bytes;
    bcg_error size_err;
    error_clear(&size_err);
    status = npy_size(out, &count, &bytes, &size_err);
    if (status != BCG_OK)
        return fail(err, status, "%s: %s", path, size_err.message);
    if (size_known && (uint64_t)st.st_size - data_start < bytes)
        return fail(err, BCG_ERR_IO, "%s: truncated .npy file: shape and dtype need %zu data bytes, "
                    "the file holds %llu", path, bytes,
                    (unsigned long long)((uint64_t)st.st_size - data_start));

    unsigned char *data = mem_alloc(bytes);
    if (!data)
        return fail(err, BCG_ERR_NOMEM, "out of memory: %zu bytes for %s", bytes, path);
    status = read_exact(f, data, bytes, path, "the data", err);
    if (status != BCG_OK) {
        mem_free(data);
        return status;
    }
    size_t size = bcg_dtype_size(out->dtype);
    if (size > 1 && big_endian == host_is_little_endian())
        swap_bytes(data, (size_t)count, size);
    if (out->dtype == BCG_BOOL)
        for (size_t i = 0; i < bytes; i++)
            data[i] = data[i] != 0;
    if (header.fortran_order && out->shape.rank > 1 && count > 1) {
        unsigned char *c_order = mem_alloc(bytes);
        if (!c_order) {
            mem_free(data);
            return fail(err, BCG_ERR_NOMEM, "out of memory: %zu bytes for %s", bytes, path);
        }
        fortran_to_c(c_order, data, &out->shape, count, size);
        mem_free(data);
        data = c_order;
    }
    out->data = data;
    return BCG_OK;
}

bcg_status npy_read(const char *path, npy_array *out, bcg_error *err)
{
    out->data = NULL;
    out->shape.rank = 0;
    out->dtype = BCG_F64;
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(err, BCG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    bcg_status status = read_file(f, path, out, err);
    fclose(f);
    return status;
}

/* ---- writing ---------------------------------------------------------------- */

bcg_status npy_write(const char *path, const npy_array *a, bcg_error *err)
{
    int64_t count;
    size_t bytes;
    if ((unsigned)a->dtype >= BCG_DTYPE_COUNT)
        return fail(err, BCG_ERR_USAGE, "npy_write: invalid dtype %d", (int)a->dtype);
    bcg_status status = npy_size(a, &count, &bytes, err);
    if (status != BCG_OK)
        return status;
    if (bytes > 0 && !a->data)
        return fail(err, BCG_ERR_USAGE, "npy_write: the array has no data");

    /* numpy/lib/format.py _write_array_header: sorted keys, repr'd values,
     * spare spaces so the first axis can grow in place, then spaces and a
     * newline up to a multiple of 64 bytes. */
    strbuf header;
    sb_init(&header);
    sb_printf(&header, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr_of(a->dtype));
    for (int k = 0; k < a->shape.rank; k++)
        sb_printf(&header, k ? ", %" PRId64 : "%" PRId64, a->shape.dims[k]);
    sb_puts(&header, a->shape.rank == 1 ? ",), }" : "), }");
    if (a->shape.rank > 0) {
        char first[24];
        int digits = snprintf(first, sizeof first, "%" PRId64, a->shape.dims[0]);
        for (int i = digits; i < 21; i++)
            sb_putc(&header, ' ');
    }
    size_t total = 10 + header.len + 1;
    size_t padding = 64 - total % 64;
    for (size_t i = 0; i < padding; i++)
        sb_putc(&header, ' ');
    sb_putc(&header, '\n');
    if (header.failed) {
        sb_free(&header);
        return fail(err, BCG_ERR_NOMEM, "out of memory writing %s", path);
    }
    assert(header.len <= 65535);   /* at most BCG_MAX_RANK dims of 19 digits */

    FILE *f = fopen(path, "wb");
    if (!f) {
        sb_free(&header);
        return fail(err, BCG_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    }
    unsigned char prefix[10];
    memcpy(prefix, magic, 6);
    prefix[6] = 1;
    prefix[7] = 0;
    prefix[8] = (unsigned char)(header.len & 0xff);
    prefix[9] = (unsigned char)(header.len >> 8);
    bool ok = fwrite(prefix, 1, 10, f) == 10 && fwrite(header.data, 1, header.len, f) == header.len;
    sb_free(&header);

    size_t size = bcg_dtype_size(a->dtype);
    if (ok && size > 1 && !host_is_little_endian()) {
        /* swap through a small buffer so the caller's array stays untouched */
        unsigned char chunk[4096];
        const unsigned char *src = a->data;
        for (size_t done = 0; ok && done < bytes; done += sizeof chunk) {
            size_t n = bytes - done < sizeof chunk ? bytes - done : sizeof chunk;
            memcpy(chunk, src + done, n);
            swap_bytes(chunk, n / size, size);
            ok = fwrite(chunk, 1, n, f) == n;
        }
    } else if (ok && bytes > 0) {
        ok = fwrite(a->data, 1, bytes, f) == bytes;
    }
    int saved_errno = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        saved_errno = errno;
    }
    if (!ok)
        return fail(err, BCG_ERR_IO, "%s: write error: %s", path, strerror(saved_errno));
    return BCG_OK;
}

/* ---- generated data ----------------------------------------------------------- */

/* splitmix64 (Steele, Lea, Flood 2014): tiny, fast, passes BigCrush, and
 * fully defined by 64-bit unsigned arithmetic, so every platform agrees. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Stores the low bits of V as an element of type T (two's complement wrap). */
static void store_bits(void *p, bcg_dtype t, uint64_t v)
{
    switch (bcg_dtype_size(t)) {
    case 1: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

static void store_float(void *p, bcg_dtype t, double v)
{
    if (t == BCG_F16 || t == BCG_BF16) {
        uint16_t bits = t == BCG_F16 ? half_from_double(v) : bfloat_from_float((float)v);
        memcpy(p, &bits, sizeof bits);
    } else if (t == BCG_F32) {
        float x = (float)v;
        memcpy(p, &x, sizeof x);
    } else {
        memcpy(p, &v, sizeof v);
    }
}

typedef enum { SOURCE_RANGE, SOURCE_ONES, SOURCE_ZEROS, SOURCE_RANDOM } source_kind;

/* Uniform in [0, n) from the top 32 bits (bias below 2^-24 for n <= 201). */
static uint64_t below(uint64_t draw, uint64_t n) { return ((draw >> 32) * n) >> 32; }

static void fill_element(unsigned char *p, bcg_dtype t, source_kind source, uint64_t index,
                         uint64_t *state)
{
    dtype_kind kind = dtype_kind_of(t);
    switch (source) {
    case SOURCE_ZEROS:
    case SOURCE_ONES: {
        int one = source == SOURCE_ONES;
        if (kind == KIND_FLOAT)
            store_float(p, t, one);
        else
            store_bits(p, t, (uint64_t)one);
        return;
    }
    case SOURCE_RANGE:
        if (kind == KIND_FLOAT)
            store_float(p, t, t != BCG_F64 ? (double)(float)index : (double)index);
        else
            store_bits(p, t, kind == KIND_BOOL ? index % 2 : index);
        return;
    case SOURCE_RANDOM: {
        uint64_t draw = splitmix64(state);
        if (kind == KIND_BOOL) {
            store_bits(p, t, draw >> 63);
        } else if (kind == KIND_INT) {
            store_bits(p, t, (uint64_t)((int64_t)below(draw, 201) - 100));
        } else if (kind == KIND_UINT) {
            store_bits(p, t, below(draw, 201));
        } else if (t != BCG_F64) { /* f16 and bf16: the f32 draw, rounded */
            float v = (float)((double)(draw >> 40) * 0x1p-24 * 20.0 - 10.0);
            if (v >= 10.0f)
                v = nextafterf(10.0f, 0.0f);
            if (t == BCG_F32) {
                memcpy(p, &v, sizeof v);
            } else { /* rounding may reach 10: the value below it then */
                uint16_t bits = t == BCG_F16 ? half_from_float(v) : bfloat_from_float(v);
                if ((t == BCG_F16 ? half_to_float(bits) : bfloat_to_float(bits)) >= 10.0f)
                    bits--;
                memcpy(p, &bits, sizeof bits);
            }
        } else {
            double v = (double)(draw >> 11) * 0x1p-53 * 20.0 - 10.0;
            if (v >= 10.0)   /* 20 * (1 - 2^-53) rounds up to 20 */
                v = nextafter(10.0, 0.0);
            memcpy(p, &v, sizeof v);
        }
        return;
    }
    }
}

static bool parse_seed(const char *text, uint64_t *seed)
{
    if (*text < '0' || *text > '9')
        return false;
    uint64_t value = 0;
    for (; *text; text++) {
        if (*text < '0' || *text > '9')
            return false;
        unsigned digit = (unsigned)(*text - '0');
        if (value > (UINT64_MAX - digit) / 10)
            return false;
        value = value * 10 + digit;
    }
    *seed = value;
    return true;
}

bcg_status npy_fill(npy_array *a, const char *source, bcg_error *err)
{
    a->data = NULL;
    if ((unsigned)a->dtype >= BCG_DTYPE_COUNT)
        return fail(err, BCG_ERR_USAGE, "npy_fill: invalid dtype %d", (int)a->dtype);
    source_kind kind;
    uint64_t state = 0;
    if (!source)
        source = "";
    if (strcmp(source, "range") == 0) {
        kind = SOURCE_RANGE;
    } else if (strcmp(source, "ones") == 0) {
        kind = SOURCE_ONES;
    } else if (strcmp(source, "zeros") == 0) {
        kind = SOURCE_ZEROS;
    } else if (strncmp(source, "random:", 7) == 0) {
        kind = SOURCE_RANDOM;
        if (!parse_seed(source + 7, &state))
            return fail(err, BCG_ERR_USAGE,
                        "bad seed in data source '%s': expected random:SEED with SEED a decimal "
                        "integer in [0, 2^64)", source);
    } else {
        return fail(err, BCG_ERR_USAGE,
                    "unknown data source '%s': expected range, ones, zeros, random:SEED or a .npy file",
                    source);
    }
    int64_t count;
    size_t bytes;
    bcg_status status = npy_size(a, &count, &bytes, err);
    if (status != BCG_OK)
        return status;
    unsigned char *data = mem_alloc(bytes);
    if (!data)
        return fail(err, BCG_ERR_NOMEM, "out of memory: %zu bytes of %s data", bytes, source);
    size_t size = bcg_dtype_size(a->dtype);
    for (int64_t i = 0; i < count; i++)
        fill_element(data + (size_t)i * size, a->dtype, kind, (uint64_t)i, &state);
    a->data = data;
    return BCG_OK;
}

/* ---- float digits --------------------------------------------------------------- */

/* A finite value as decimal digits: value = +-d.ddd x 10^exponent. */
typedef struct decimal {
    bool negative;
    int count;
    int exponent;
    char digits[40];
} decimal;

/* Reads printf's "%.Ne" output: "-1.2345e-07". */
static void decimal_from_e(const char *s, decimal *d)
{
    d->negative = *s == '-';
    if (*s == '-' || *s == '+')
        s++;
    d->count = 0;
    for (; *s && *s != 'e'; s++)
        if (*s != '.')
            d->digits[d->count++] = *s;
    d->digits[d->count] = 0;
    d->exponent = *s == 'e' ? atoi(s + 1) : 0;
}

static void decimal_to_e(const decimal *d, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%c.%se%d", d->negative ? "-" : "", d->digits[0],
             d->count > 1 ? d->digits + 1 : "0", d->exponent);
}

static void strip_zeros(decimal *d)
{
    while (d->count > 1 && d->digits[d->count - 1] == '0')
        d->digits[--d->count] = 0;
}

static bool round_trips(const char *text, double x, bcg_dtype type)
{
    if (type == BCG_F32)
        return strtof(text, NULL) == (float)x;
    if (type == BCG_F16 || type == BCG_BF16)
        return dtype_round_float(type, strtod(text, NULL)) == dtype_round_float(type, x);
    return strtod(text, NULL) == x;
}

/* The last digit one unit up, carrying (9.99 -> 10.0, exponent + 1). */
static void decimal_increment(decimal *d)
{
    int i = d->count - 1;
    while (i >= 0 && d->digits[i] == '9')
        d->digits[i--] = '0';
    if (i >= 0) {
        d->digits[i]++;
    } else {
        memmove(d->digits + 1, d->digits, (size_t)d->count + 1);
        d->digits[0] = '1';
        d->exponent++;
        d->digits[d->count] = 0;   /* keep the digit count: 99 -> 10 */
    }
}

/* The shortest digits that read back as X in its own type (float when
 * SINGLE), the closest such when several have that length: what Dragon4's
 * "unique" mode produces.  printf rounds correctly, so the closest candidate
 * of each length is tried; at a power of two the gap below is half the gap
 * above and the candidate one unit up can round-trip when the closest (below)
 * does not, so that one is tried too. */
static void decimal_shortest(double x, bcg_dtype single, decimal *d)
{
    char buf[64];
    int max_precision = single == BCG_F32 ? 8 : single == BCG_F16 ? 5 : single == BCG_BF16 ? 4 : 16;
    for (int p = 0; p <= max_precision; p++) {
        snprintf(buf, sizeof buf, "%.*e", p, x);
        if (round_trips(buf, x, single)) {
            decimal_from_e(buf, d);
            strip_zeros(d);
            return;
        }
        decimal_from_e(buf, d);
        if (fabs(strtod(buf, NULL)) < fabs(x)) {
            decimal_increment(d);
            char up[64];
            decimal_to_e(d, up, sizeof up);
            if (round_trips(up, x, single)) {
                strip_zeros(d);
                return;
            }
        }
    }
    snprintf(buf, sizeof buf, "%.*e", max_precision, x);
    decimal_from_e(buf, d);
    strip_zeros(d);
}

/* Digits of X, shortest but with at most FRACTION digits after the first
 * (Dragon4 unique mode with a total-length cutoff), trailing zeros removed. */
static void decimal_scientific(double x, bcg_dtype single, int fraction, decimal *d)
{
    decimal_shortest(x, single, d);
    if (fraction >= 0 && d->count - 1 > fraction) {
        char buf[64];
        snprintf(buf, sizeof buf, "%.*e", fraction, x);
        decimal_from_e(buf, d);
        strip_zeros(d);
    }
}

/* A number split for alignment: sign and whole digits, fraction digits, and
 * the exponent in scientific form. */
typedef struct float_parts {
    char whole[48];
    char fraction[48];
    int exponent;
} float_parts;

/* Positional digits: shortest, at most FRACTION (>= 0, or -1 for no limit)
 * digits after the point, the exact value rounded there when the shortest
 * is longer.  EXACT_WHOLE: when no fraction digits remain, print the whole
 * part exactly (Dragon4 with min_digits=0 keeps generating digits down to
 * the units: float32 99999992 prints as 99999992, not the shortest 99999990). */
static void positional_parts(double x, bcg_dtype single, int fraction, bool exact_whole,
                             float_parts *out)
{
    decimal d;
    decimal_shortest(x, single, &d);
    int fraction_count = d.count - 1 - d.exponent;
    if (fraction_count < 0)
        fraction_count = 0;
    if (fraction >= 0 && fraction_count > fraction) {
        char buf[400];
        snprintf(buf, sizeof buf, "%.*f", fraction, x);
        char *point = strchr(buf, '.');
        const char *fraction_text = "";
        if (point) {
            *point = 0;
            fraction_text = point + 1;
        }
        assert(strlen(buf) < sizeof out->whole && strlen(fraction_text) < sizeof out->fraction);
        strcpy(out->whole, buf);
        strcpy(out->fraction, fraction_text);
        size_t n = strlen(out->fraction);
        while (n > 0 && out->fraction[n - 1] == '0')
            out->fraction[--n] = 0;
    } else {
        char *w = out->whole, *f = out->fraction;
        if (d.negative)
            *w++ = '-';
        if (d.exponent >= 0) {
            assert(d.exponent + 3 < (int)sizeof out->whole);
            for (int i = 0; i <= d.exponent; i++)
                *w++ = i < d.count ? d.digits[i] : '0';
            for (int i = d.exponent + 1; i < d.count; i++)
                *f++ = d.digits[i];
        } else {
            assert(d.count - d.exponent < (int)sizeof out->fraction);
            *w++ = '0';
            for (int i = 0; i < -d.exponent - 1; i++)
                *f++ = '0';
            for (int i = 0; i < d.count; i++)
                *f++ = d.digits[i];
        }
        *w = 0;
        *f = 0;
    }
    if (exact_whole && out->fraction[0] == 0)
        snprintf(out->whole, sizeof out->whole, "%.0f", x);
    out->exponent = 0;
}

static void scientific_parts(const decimal *d, float_parts *out)
{
    snprintf(out->whole, sizeof out->whole, "%s%c", d->negative ? "-" : "", d->digits[0]);
    snprintf(out->fraction, sizeof out->fraction, "%s", d->digits + 1);
    out->exponent = d->exponent;
}

/* Digits of an exponent as Dragon4 writes them: at least two. */
static int exponent_digits(int exponent)
{
    int n = 1;
    for (int e = exponent < 0 ? -exponent : exponent; e >= 10; e /= 10)
        n++;
    return n < 2 ? 2 : n;
}

/* str() of a NumPy float scalar (scalartypes.c format_float): positional
 * with at least one fraction digit for 1e-4 <= |x| < 1e16 and zero,
 * otherwise scientific without a bare point ("1e+16", "1.5e-05"). */
static void format_float_scalar(strbuf *sb, double x, bcg_dtype single)
{
    if (isnan(x)) {
        sb_puts(sb, "nan");
        return;
    }
    if (isinf(x)) {
        sb_puts(sb, x < 0 ? "-inf" : "inf");
        return;
    }
    double magnitude = fabs(x);
    if (magnitude == 0 || (magnitude < 1e16 && magnitude >= 1e-4)) {
        float_parts parts;
        positional_parts(x, single, -1, false, &parts);
        sb_printf(sb, "%s.%s", parts.whole, parts.fraction[0] ? parts.fraction : "0");
        return;
    }
    decimal d;
    float_parts parts;
    decimal_shortest(x, single, &d);
    scientific_parts(&d, &parts);
    sb_printf(sb, "%s%s%se%c%02d", parts.whole, parts.fraction[0] ? "." : "", parts.fraction,
              parts.exponent < 0 ? '-' : '+', abs(parts.exponent));
}

/* ---- elements --------------------------------------------------------------------- */

static double load_float(bcg_dtype t, const unsigned char *p)
{
    if (t == BCG_F16 || t == BCG_BF16) {
        uint16_t bits;
        memcpy(&bits, p, sizeof bits);
        return t == BCG_F16 ? half_to_float(bits) : bfloat_to_float(bits);
    }
    if (t == BCG_F32) {
        float v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    double v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Integer elements as text, sign included. */
static int format_integer(char *buf, size_t cap, bcg_dtype t, const unsigned char *p)
{
    switch (t) {
    case BCG_I8: { int8_t v; memcpy(&v, p, 1); return snprintf(buf, cap, "%d", v); }
    case BCG_I16: { int16_t v; memcpy(&v, p, 2); return snprintf(buf, cap, "%d", v); }
    case BCG_I32: { int32_t v; memcpy(&v, p, 4); return snprintf(buf, cap, "%" PRId32, v); }
    case BCG_I64: { int64_t v; memcpy(&v, p, 8); return snprintf(buf, cap, "%" PRId64, v); }
    case BCG_U8: { uint8_t v; memcpy(&v, p, 1); return snprintf(buf, cap, "%u", v); }
    case BCG_U16: { uint16_t v; memcpy(&v, p, 2); return snprintf(buf, cap, "%u", v); }
    case BCG_U32: { uint32_t v; memcpy(&v, p, 4); return snprintf(buf, cap, "%" PRIu32, v); }
    default: { uint64_t v; memcpy(&v, p, 8); return snprintf(buf, cap, "%" PRIu64, v); }
    }
}

void npy_format_value(strbuf *sb, bcg_dtype dtype, const void *element)
{
    const unsigned char *p = element;
    char buf[32];
    switch (dtype_kind_of(dtype)) {
    case KIND_BOOL:
        sb_puts(sb, *p ? "True" : "False");
        break;
    case KIND_FLOAT:
        format_float_scalar(sb, load_float(dtype, p), dtype);
        break;
    default:
        format_integer(buf, sizeof buf, dtype, p);
        sb_puts(sb, buf);
        break;
    }
}

/* ---- arrays ------------------------------------------------------------------------ */

/* FloatingFormat's state after fillFormat, for the default options. */
typedef struct float_format {
    bool exp_format;
    int pad_left, pad_right;
    int precision;   /* exp_format: fraction digits every element gets */
    int exp_size;    /* exp_format: exponent digits */
} float_format;

typedef struct printer {
    const npy_array *array;
    strbuf *sb;
    bool summarise;                 /* size > threshold: 3 items at each edge */
    int64_t strides[BCG_MAX_RANK];  /* elements, C order */
    size_t size;                    /* bytes per element */
    dtype_kind kind;
    int int_width;                  /* IntegerFormat: the widest visible value */
    float_format floats;
    /* statistics of the visible floats, gathered before float_format */
    bool any_finite, any_nonzero, any_nonfinite, negative_inf;
    double max_abs, min_abs;
} printer;

enum { THRESHOLD = 1000, EDGE_ITEMS = 3, LINE_WIDTH = 75 };

/* Calls VISIT on every element print shows (numpy's _leading_trailing: along
 * an axis longer than 2 * EDGE_ITEMS only the first and last EDGE_ITEMS). */
static void visit_visible(printer *p, int axis, int64_t offset,
                          void (*visit)(printer *, const unsigned char *))
{
    if (axis == p->array->shape.rank) {
        visit(p, (const unsigned char *)p->array->data + (size_t)offset * p->size);
        return;
    }
    int64_t n = p->array->shape.dims[axis];
    bool cut = p->summarise && n > 2 * EDGE_ITEMS;
    for (int64_t i = 0; i < n; i++) {
        if (cut && i == EDGE_ITEMS)
            i = n - EDGE_ITEMS;
        visit_visible(p, axis + 1, offset + i * p->strides[axis], visit);
    }
}

static void measure_integer(printer *p, const unsigned char *element)
{
    char buf[32];
    int n = format_integer(buf, sizeof buf, p->array->dtype, element);
    if (n > p->int_width)
        p->int_width = n;
}

static void gather_float_statistics(printer *p, const unsigned char *element)
{
    double x = load_float(p->array->dtype, element);
    if (!isfinite(x)) {
        p->any_nonfinite = true;
        if (isinf(x) && x < 0)
            p->negative_inf = true;
        return;
    }
    p->any_finite = true;
    if (x == 0)
        return;
    double magnitude = fabs(x);
    if (!p->any_nonzero || magnitude > p->max_abs)
        p->max_abs = magnitude;
    if (!p->any_nonzero || magnitude < p->min_abs)
        p->min_abs = magnitude;
    p->any_nonzero = true;
}

static int max_int(int a, int b) { return a > b ? a : b; }

/* FloatingFormat.fillFormat's first pass: the widest parts decide the pads. */
static void measure_float(printer *p, const unsigned char *element)
{
    bcg_dtype single = p->array->dtype;
    double x = load_float(p->array->dtype, element);
    if (!isfinite(x))
        return;
    float_format *f = &p->floats;
    float_parts parts;
    if (f->exp_format) {
        decimal d;
        decimal_scientific(x, single, 8, &d);
        scientific_parts(&d, &parts);
        f->exp_size = max_int(f->exp_size, exponent_digits(parts.exponent));
        f->precision = max_int(f->precision, (int)strlen(parts.fraction));
    } else {
        positional_parts(x, single, 8, false, &parts);
        f->pad_right = max_int(f->pad_right, (int)strlen(parts.fraction));
    }
    f->pad_left = max_int(f->pad_left, (int)strlen(parts.whole));
}

static void prepare_floats(printer *p)
{
    visit_visible(p, 0, 0, gather_float_statistics);
    float_format *f = &p->floats;
    memset(f, 0, sizeof *f);
    if (p->any_nonzero) {
        /* The ratio is computed in the array's type, as numpy divides two
         * scalars of it; the comparisons are in double. */
        bcg_dtype t = p->array->dtype;
        double ratio = t == BCG_F64 ? p->max_abs / p->min_abs
                                    : dtype_round_float(t, (double)((float)p->max_abs /
                                                                    (float)p->min_abs));
        f->exp_format = p->max_abs >= 1e8 || p->min_abs < 0.0001 || ratio > 1000.0;
    }
    visit_visible(p, 0, 0, measure_float);
    if (f->exp_format && p->any_finite)
        f->pad_right = f->exp_size + 2 + f->precision;
    if (p->any_nonfinite) {
        int offset = f->pad_right + 1;
        f->pad_left = max_int(f->pad_left, 3 - offset);
        f->pad_left = max_int(f->pad_left, 3 + (p->negative_inf ? 1 : 0) - offset);
    }
}

/* One element as FloatingFormat.__call__ (and IntegerFormat, BoolFormat)
 * writes it; returns the length. */
static int format_element(const printer *p, const unsigned char *element, char *buf, size_t cap)
{
    switch (p->kind) {
    case KIND_BOOL:
        return snprintf(buf, cap, "%s", *element ? " True" : "False");
    case KIND_INT:
    case KIND_UINT: {
        char digits[32];
        format_integer(digits, sizeof digits, p->array->dtype, element);
        return snprintf(buf, cap, "%*s", p->int_width, digits);
    }
    case KIND_FLOAT:
        break;
    }
    const float_format *f = &p->floats;
    double x = load_float(p->array->dtype, element);
    if (!isfinite(x)) {
        const char *text = isnan(x) ? "nan" : x < 0 ? "-inf" : "inf";
        return snprintf(buf, cap, "%*s", f->pad_left + f->pad_right + 1, text);
    }
    float_parts parts;
    if (f->exp_format) {
        /* Dragon4 with min_digits = max_digits = precision: the exact value
         * rounded to that many digits, except that a value whose own
         * shortest form has exactly that many keeps its shortest digits
         * (they differ at a power of two, where the gap below is narrower:
         * float32 2^90 prints as 1.2379401e+27, not 1.2379400e+27). */
        decimal d;
        decimal_scientific(x, p->array->dtype, 8, &d);
        if (d.count - 1 != f->precision) {
            char text[64];
            snprintf(text, sizeof text, "%.*e", f->precision, x);
            decimal_from_e(text, &d);
        }
        scientific_parts(&d, &parts);
        return snprintf(buf, cap, "%*s.%se%c%0*d", f->pad_left, parts.whole, parts.fraction,
                        parts.exponent < 0 ? '-' : '+', f->exp_size, abs(parts.exponent));
    }
    positional_parts(x, p->array->dtype, 8, true, &parts);
    return snprintf(buf, cap, "%*s.%-*s", f->pad_left, parts.whole, f->pad_right, parts.fraction);
}

static void put_spaces(strbuf *sb, int n)
{
    for (int i = 0; i < n; i++)
        sb_putc(sb, ' ');
}

/* _extendLine: start a new line (hanging INDENT) when WORD would pass WIDTH,
 * unless the line holds nothing but the indent. */
static void extend_line(printer *p, int *line_length, const char *word, int word_length,
                        int width, int indent)
{
    if (*line_length + word_length > width && *line_length > indent) {
        while (p->sb->len > 0 && p->sb->data[p->sb->len - 1] == ' ')
            p->sb->data[--p->sb->len] = 0;
        sb_putc(p->sb, '\n');
        put_spaces(p->sb, indent);
        *line_length = indent;
    }
    sb_put(p->sb, word, (size_t)word_length);
    *line_length += word_length;
}

static void print_row_element(printer *p, int64_t offset, int *line_length, int width, int indent)
{
    char word[160];
    int n = format_element(p, (const unsigned char *)p->array->data + (size_t)offset * p->size,
                           word, sizeof word);
    if (n >= (int)sizeof word)
        n = (int)sizeof word - 1;
    extend_line(p, line_length, word, n, width, indent);
}

/* _formatArray's recurser.  INDENT is the length of the hanging indent
 * (all spaces); the caller has already written whatever precedes the '['. */
static void print_axis(printer *p, int axis, int64_t offset, int indent, int width)
{
    const shape *s = &p->array->shape;
    int64_t n = s->dims[axis], stride = p->strides[axis];
    bool cut = p->summarise && n > 2 * EDGE_ITEMS;
    int64_t leading = cut ? EDGE_ITEMS : 0, trailing = cut ? EDGE_ITEMS : n;
    sb_putc(p->sb, '[');
    if (axis == s->rank - 1) {
        int element_width = width - 1;   /* room for the ']' */
        int line_length = indent;        /* the '[' stands in for the indent */
        for (int64_t i = 0; i < leading; i++) {
            print_row_element(p, offset + i * stride, &line_length, element_width, indent);
            sb_putc(p->sb, ' ');
            line_length++;
        }
        if (cut) {
            extend_line(p, &line_length, "...", 3, element_width, indent);
            sb_putc(p->sb, ' ');
            line_length++;
        }
        for (int64_t i = trailing; i > 1; i--) {
            print_row_element(p, offset + (n - i) * stride, &line_length, element_width, indent);
            sb_putc(p->sb, ' ');
            line_length++;
        }
        print_row_element(p, offset + (n - 1) * stride, &line_length, element_width, indent);
    } else {
        int newlines = s->rank - axis - 1;
        bool first = true;
        for (int64_t i = 0; i < leading; i++) {
            if (!first)
                put_spaces(p->sb, indent);
            first = false;
            print_axis(p, axis + 1, offset + i * stride, indent + 1, width - 1);
            for (int k = 0; k < newlines; k++)
                sb_putc(p->sb, '\n');
        }
        if (cut) {
            put_spaces(p->sb, indent);
            sb_puts(p->sb, "...");
            for (int k = 0; k < newlines; k++)
                sb_putc(p->sb, '\n');
        }
        for (int64_t i = trailing; i > 1; i--) {
            if (!first)
                put_spaces(p->sb, indent);
            first = false;
            print_axis(p, axis + 1, offset + (n - i) * stride, indent + 1, width - 1);
            for (int k = 0; k < newlines; k++)
                sb_putc(p->sb, '\n');
        }
        if (!first)
            put_spaces(p->sb, indent);
        print_axis(p, axis + 1, offset + (n - 1) * stride, indent + 1, width - 1);
    }
    sb_putc(p->sb, ']');
}

bcg_status npy_format(strbuf *sb, const npy_array *a)
{
    int64_t count;
    size_t bytes;
    if ((unsigned)a->dtype >= BCG_DTYPE_COUNT || npy_size(a, &count, &bytes, NULL) != BCG_OK)
        return BCG_ERR_USAGE;
    if (count == 0) {
        sb_puts(sb, "[]");
        return sb->failed ? BCG_ERR_NOMEM : BCG_OK;
    }
    if (!a->data)
        return BCG_ERR_USAGE;
    if (a->shape.rank == 0) {
        npy_format_value(sb, a->dtype, a->data);
        return sb->failed ? BCG_ERR_NOMEM : BCG_OK;
    }
    printer p;
    memset(&p, 0, sizeof p);
    p.array = a;
    p.sb = sb;
    p.summarise = count > THRESHOLD;
    p.size = bcg_dtype_size(a->dtype);
    p.kind = dtype_kind_of(a->dtype);
    int64_t stride = 1;
    for (int k = a->shape.rank - 1; k >= 0; k--) {
        p.strides[k] = stride;
        stride *= a->shape.dims[k];
    }
    if (p.kind == KIND_INT || p.kind == KIND_UINT)
        visit_visible(&p, 0, 0, measure_integer);
    else if (p.kind == KIND_FLOAT)
        prepare_floats(&p);
    print_axis(&p, 0, 0, 1, LINE_WIDTH);
    return sb->failed ? BCG_ERR_NOMEM : BCG_OK;
}
