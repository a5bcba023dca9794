/* npy.h - arrays in and out of the command line: NumPy .npy files, generated
 * data ("range", "ones", "zeros", "random:SEED") and printing an array the way
 * NumPy 1.24's print(arr) does.  Internal to bcgen (the CLI includes it);
 * defined in gen/npy.c.
 *
 * Ownership: an npy_array owns `data` (allocated with mem_alloc by npy_read
 * or npy_fill, released by npy_free).  Data is always C-contiguous and in the
 * host's byte order; bool elements are bytes holding 0 or 1.
 *
 * Limits: at most NPY_MAX_BYTES bytes of data per array and NPY_MAX_HEADER
 * bytes of .npy header; more is BCG_ERR_LIMIT, never a giant malloc.
 */
#ifndef BCGEN_NPY_H
#define BCGEN_NPY_H

#include "internal.h"

#define NPY_MAX_BYTES ((int64_t)1 << 40)   /* data bytes in one array */
#define NPY_MAX_HEADER (1 << 20)           /* bytes in a .npy header */

typedef struct npy_array {
    bcg_dtype dtype;
    shape shape;
    void *data;   /* C-contiguous, native-endian, mem_alloc'd; may be NULL when empty */
} npy_array;

/* Reads a .npy file (format 1.0, 2.0 or 3.0) into OUT, which the caller
 * later releases with npy_free.  Accepts descr '|b1', '[<>|=]i1..i8',
 * '[<>|=]u1..u8', '[<>|=]f2', '[<>|=]f4', '[<>|=]f8' in either byte order and
 * C or Fortran order (big-endian data is swapped, Fortran data transposed into
 * C order), and '|V2' (also '<V2') as bfloat16 bit patterns, little-endian:
 * what np.save writes for ml_dtypes' bfloat16, which bf16 arrays are written
 * as too.  Unsupported dtypes (complex, strings, objects, structured, ...),
 * malformed or truncated files: BCG_ERR_IO with a message naming the file and
 * what was wrong.  Data beyond the array is ignored, as np.load does.
 * Shapes over BCG_MAX_RANK dimensions or NPY_MAX_BYTES bytes: BCG_ERR_LIMIT.
 * On failure OUT holds no data (data NULL). */
bcg_status npy_read(const char *path, npy_array *out, bcg_error *err);

/* Writes A as .npy format 1.0, little-endian, C order, with the header
 * padded exactly as np.save pads it (so a C-contiguous little-endian array
 * gives the same bytes as np.save).  Errors: BCG_ERR_IO. */
bcg_status npy_write(const char *path, const npy_array *a, bcg_error *err);

/* Allocates a->data for a->dtype and a->shape (set by the caller) and fills
 * it from SOURCE:
 *   "range"        element i (C order) is i converted to the dtype; integers
 *                  wrap modulo 2^bits like a C conversion from uint64; bool
 *                  is i % 2
 *   "ones", "zeros"
 *   "random:SEED"  SEED a decimal integer in [0, 2^64); a splitmix64 stream
 *                  (one draw per element, in C order): signed ints uniform in
 *                  [-100, 100], unsigned in [0, 200], bool 0 or 1 (top bit),
 *                  floats uniform in [-10, 10) (53 random bits for f64, 24
 *                  for f32).  The same seed, dtype and shape always give the
 *                  same data on every platform.
 * An unknown source is BCG_ERR_USAGE with a message listing the sources.
 * A .npy path is not a source here: the caller reads it with npy_read. */
bcg_status npy_fill(npy_array *a, const char *source, bcg_error *err);

/* Releases a->data and sets it to NULL; A may be NULL. */
void npy_free(npy_array *a);

/* Appends A printed as NumPy 1.24's str(arr) (default print options:
 * linewidth 75, threshold 1000, edgeitems 3, precision 8, floatmode
 * "maxprec"): nested brackets, elements right-aligned to a common width,
 * rows wrapped at 75 columns, "..." summaries when the size is over 1000,
 * rank 0 as the bare scalar (str of the NumPy scalar), empty arrays as "[]".
 * No trailing newline.
 *
 * Floats follow NumPy's Dragon4 rules: shortest round-trip digits, at most 8
 * digits after the point, scientific notation when the largest magnitude is
 * >= 1e8, the smallest non-zero one < 1e-4 or their ratio > 1000.  The
 * shortest digits come from printf/strtod here rather than a bignum Dragon4;
 * they agree except possibly when a decimal candidate lies exactly on the
 * rounding boundary between two floats (none seen in the differential test).
 * Returns BCG_ERR_NOMEM if the buffer failed, BCG_ERR_USAGE for an array
 * without data. */
bcg_status npy_format(strbuf *sb, const npy_array *a);

/* Appends one element as NumPy prints a scalar of the dtype: "True", "-3",
 * "1.5", "1e-05", "nan". */
void npy_format_value(strbuf *sb, bcg_dtype dtype, const void *element);

/* Elements and bytes of A's shape.  Errors: BCG_ERR_SHAPE for a negative
 * size, BCG_ERR_LIMIT when the count overflows int64 or the bytes exceed
 * NPY_MAX_BYTES. */
bcg_status npy_size(const npy_array *a, int64_t *elements, size_t *bytes, bcg_error *err);

#endif
