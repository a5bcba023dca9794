/* test_npy.c - gen/npy.c: .npy round trips for every dtype, crafted
 * big-endian, Fortran-order and version 2/3 files, every malformed header
 * form we reject, the data sources, and exact printed forms. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* before cmocka.h, whose fail() macro would clash with util.c's fail() */
#include "npy.h"

#include <cmocka.h>

static char directory[] = "/tmp/bcgen_test_npy_XXXXXX";

static int setup_directory(void **state)
{
    (void)state;
    return mkdtemp(directory) ? 0 : -1;
}

static int remove_directory(void **state)
{
    (void)state;
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", directory);
    return system(command) == 0 ? 0 : -1;
}

static const char *temp_path(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", directory, name);
    return path;
}

static void write_bytes(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* A .npy file with HEADER as given (version MAJOR) and DATA after it. */
static const char *craft(const char *name, int major, const char *header, const void *data,
                         size_t data_size)
{
    unsigned char buf[4096];
    size_t header_size = strlen(header), at = 0;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    at = 8;
    buf[at++] = (unsigned char)(header_size & 0xff);
    buf[at++] = (unsigned char)(header_size >> 8);
    if (major != 1) {
        buf[at++] = 0;
        buf[at++] = 0;
    }
    assert_true(at + header_size + data_size <= sizeof buf);
    memcpy(buf + at, header, header_size);
    at += header_size;
    if (data_size)
        memcpy(buf + at, data, data_size);
    const char *path = temp_path(name);
    write_bytes(path, buf, at + data_size);
    return path;
}

/* Reads PATH expecting failure with STATUS and a message containing NEEDLE. */
static void expect_read_error(const char *path, bcg_status status, const char *needle)
{
    npy_array a;
    bcg_error err;
    error_clear(&err);
    assert_int_equal(npy_read(path, &a, &err), status);
    assert_int_equal(err.status, status);
    assert_null(a.data);
    if (!strstr(err.message, needle))
        fail_msg("message \"%s\" lacks \"%s\"", err.message, needle);
    assert_null(strchr(err.message, '\n'));
}

static void expect_header_error(const char *header, bcg_status status, const char *needle)
{
    const char *path = craft("bad.npy", 1, header, "\0\0\0\0\0\0\0\0", 8);
    expect_read_error(path, status, needle);
}

static char *format_array(const npy_array *a)
{
    strbuf sb;
    sb_init(&sb);
    assert_int_equal(npy_format(&sb, a), BCG_OK);
    return sb_finish(&sb);
}

static void expect_format(bcg_dtype dtype, int rank, const int64_t *dims, const void *data,
                          const char *expected)
{
    npy_array a = {.dtype = dtype, .data = (void *)data};
    a.shape.rank = rank;
    for (int k = 0; k < rank; k++)
        a.shape.dims[k] = dims[k];
    char *text = format_array(&a);
    assert_string_equal(text, expected);
    mem_free(text);
}

/* ---- round trips -------------------------------------------------------- */

static void round_trip(bcg_dtype dtype, int rank, const int64_t *dims, const char *source)
{
    npy_array a = {.dtype = dtype};
    a.shape.rank = rank;
    for (int k = 0; k < rank; k++)
        a.shape.dims[k] = dims[k];
    bcg_error err;
    error_clear(&err);
    assert_int_equal(npy_fill(&a, source, &err), BCG_OK);
    const char *path = temp_path("round.npy");
    assert_int_equal(npy_write(path, &a, &err), BCG_OK);
    npy_array b;
    assert_int_equal(npy_read(path, &b, &err), BCG_OK);
    assert_int_equal(b.dtype, dtype);
    assert_int_equal(b.shape.rank, rank);
    int64_t count, count_b;
    size_t bytes, bytes_b;
    assert_int_equal(npy_size(&a, &count, &bytes, NULL), BCG_OK);
    assert_int_equal(npy_size(&b, &count_b, &bytes_b, NULL), BCG_OK);
    assert_int_equal(bytes, bytes_b);
    for (int k = 0; k < rank; k++)
        assert_int_equal(b.shape.dims[k], dims[k]);
    if (bytes)
        assert_memory_equal(a.data, b.data, bytes);
    npy_free(&a);
    npy_free(&b);
    assert_null(b.data);
}

static void test_round_trip_every_dtype(void **state)
{
    (void)state;
    const int64_t dims[] = {3, 4, 5};
    for (int t = 0; t < BCG_DTYPE_COUNT; t++) {
        round_trip((bcg_dtype)t, 3, dims, "random:42");
        round_trip((bcg_dtype)t, 2, dims, "range");
    }
}

static void test_round_trip_rank0_and_empty(void **state)
{
    (void)state;
    const int64_t empty[] = {0, 3};
    const int64_t empty_last[] = {4, 0};
    for (int t = 0; t < BCG_DTYPE_COUNT; t++) {
        round_trip((bcg_dtype)t, 0, NULL, "random:3");
        round_trip((bcg_dtype)t, 2, empty, "ones");
        round_trip((bcg_dtype)t, 2, empty_last, "range");
        round_trip((bcg_dtype)t, 1, empty, "zeros");
    }
}

static void test_write_header_matches_numpy(void **state)
{
    (void)state;
    double values[12] = {0};
    npy_array a = {.dtype = BCG_F64, .data = values};
    a.shape.rank = 2;
    a.shape.dims[0] = 3;
    a.shape.dims[1] = 4;
    bcg_error err;
    error_clear(&err);
    const char *path = temp_path("header.npy");
    assert_int_equal(npy_write(path, &a, &err), BCG_OK);
    unsigned char buf[256];
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    /* np.save(np.zeros((3, 4))): 128 bytes of header, then 96 of data */
    assert_int_equal(n, 128 + 96);
    assert_memory_equal(buf, "\x93NUMPY\x01\x00\x76\x00", 10);
    const char *dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }";
    assert_memory_equal(buf + 10, dict, strlen(dict));
    for (size_t i = 10 + strlen(dict); i < 127; i++)
        assert_int_equal(buf[i], ' ');
    assert_int_equal(buf[127], '\n');

    /* a 1-d bool: '|b1' and the one-element tuple "(5,)" */
    unsigned char flags[5] = {1, 0, 1, 1, 0};
    npy_array b = {.dtype = BCG_BOOL, .data = flags};
    b.shape.rank = 1;
    b.shape.dims[0] = 5;
    assert_int_equal(npy_write(path, &b, &err), BCG_OK);
    f = fopen(path, "rb");
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_int_equal(n, 128 + 5);
    dict = "{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }";
    assert_memory_equal(buf + 10, dict, strlen(dict));
}

static void test_write_errors(void **state)
{
    (void)state;
    int32_t v = 1;
    npy_array a = {.dtype = BCG_I32, .data = &v};
    bcg_error err;
    error_clear(&err);
    assert_int_equal(npy_write("/nonexistent-dir/x.npy", &a, &err), BCG_ERR_IO);
    assert_non_null(strstr(err.message, "/nonexistent-dir/x.npy"));
    error_clear(&err);
    a.data = NULL;
    assert_int_equal(npy_write(temp_path("null.npy"), &a, &err), BCG_ERR_USAGE);
}

/* ---- crafted files --------------------------------------------------------- */

static void test_read_big_endian(void **state)
{
    (void)state;
    const unsigned char ints[] = {0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe, 0x7f, 0, 0, 0};
    const char *path = craft("be.npy", 1, "{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }\n",
                             ints, sizeof ints);
    npy_array a;
    bcg_error err;
    error_clear(&err);
    assert_int_equal(npy_read(path, &a, &err), BCG_OK);
    assert_int_equal(a.dtype, BCG_I32);
    int32_t *v = a.data;
    assert_int_equal(v[0], 1);
    assert_int_equal(v[1], -2);
    assert_int_equal(v[2], 0x7f000000);
    npy_free(&a);

    const unsigned char doubles[] = {0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0};
    path = craft("bef.npy", 1, "{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }",
                 doubles, sizeof doubles);
    assert_int_equal(npy_read(path, &a, &err), BCG_OK);
    assert_int_equal(a.dtype, BCG_F64);
    assert_true(((double *)a.data)[0] == 1.5);
    assert_true(((double *)a.data)[1] == -2.0);
    npy_free(&a);

    const unsigned char shorts[] = {0x12, 0x34, 0xff, 0xff};
    path = craft("beu.npy", 1, "{'descr': '>u2', 'fortran_order': False, 'shape': (2,), }",
                 shorts, sizeof shorts);
    assert_int_equal(npy_read(path, &a, &err), BCG_OK);
    assert_int_equal(a.dtype, BCG_U16);
    assert_int_equal(((uint16_t *)a.data)[0], 0x1234);
    assert_int_equal(((uint16_t *)a.data)[1], 0xffff);
    npy_free(&a);
}

static void test_read_fortran_order(void **state)
{
    (void)state;
    /* C order [[0,1,2],[3,4,5]] stored first index fastest */
    const int16_t fortran[] = {0, 3, 1, 4, 2, 5};
    const char *path = craft("f.npy", 1, "{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3), }",
                             fortran, sizeof fortran);
    npy_array a;
    bcg_error err;
    error_clear(&err);
    assert_int_equal(npy_read(path, &a, &err), BCG_OK);
    for (int i = 0; i < 6; i++)
        assert_int_equal(((int16_t *)a.data)[i], i);
    npy_free(&a);

    /* rank 3, shape (2,3,4): C index i*12+j*4+k sits at Fortran offset i+2j+6k */
    int32_t data[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                data[i + 2 * j + 6 * k] = i * 12 + j * 4 + k;
    path = craft("f3.npy", 1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 4), }",
                 data, sizeof data);
    assert_int_equal(npy_read(path, &a, &err), BCG_OK);
    for (int i = 0; i < 24; i++)
        assert_int_equal(((int32_t *)a.data)[i], i);
    npy_free(&a);

    /* big-endian and Fortran together */
    const unsigned char be[] = {0, 0, 0, 0, 0, 2, 0, 1, 0, 3};
    path = craft("fbe.npy", 1, "{'descr': '>u2', 'fortran_order': True, 'shape': (1, 5), }",
                 be, sizeof be);
    assert_int_equal(npy_read(path, &a, &err), BCG_OK);
    const uint16_t expect[] = {0, 0, 2, 1, 3};
    assert_memory_equal(a.data, expect, sizeof expect);
    npy_free(&a);
}

static void test_read_versions_and_layouts(void **state)
{
    (void)state;
    const double one = 1.0;
    npy_array a;
    bcg_error err;
    error_clear(&err);
    const char *header = "{'descr': '<f8', 'fortran_order': False, 'shape': (), }";
    for (int major = 1; major <= 3; major++) {
        const char *path = craft("v.npy", major, header, &one, sizeof one);
        assert_int_equal(npy_read(path, &a, &err), BCG_OK);
        assert_int_equal(a.shape.rank, 0);
        assert_true(*(double *)a.data == 1.0);
        npy_free(&a);
    }
    /* keys in any order, double quotes, no trailing comma, Python 2 longs,
     * '=' byte order and extra data after the array (ignored like np.load) */
    const unsigned char data[] = {7, 8, 9};
    const char *path = craft("loose.npy", 1,
                             "{\"shape\": (3L,), \"fortran_order\": False, \"descr\": \"=u1\"}   \n",
                             data, sizeof data);
    assert_int_equal(npy_read(path, &a, &err), BCG_OK);
    assert_int_equal(a.dtype, BCG_U8);
    assert_int_equal(a.shape.rank, 1);
    assert_int_equal(a.shape.dims[0], 3);
    npy_free(&a);
    path = craft("extra.npy", 1, "{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }",
                 data, sizeof data);
    assert_int_equal(npy_read(path, &a, &err), BCG_OK);
    assert_int_equal(((int8_t *)a.data)[1], 8);
    npy_free(&a);
    /* bools: any non-zero byte becomes 1 */
    const unsigned char flags[] = {0, 2, 255};
    path = craft("b.npy", 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                 flags, sizeof flags);
    assert_int_equal(npy_read(path, &a, &err), BCG_OK);
    const unsigned char normal[] = {0, 1, 1};
    assert_memory_equal(a.data, normal, 3);
    npy_free(&a);
}

/* ---- malformed files -------------------------------------------------------- */

static void test_bad_magic_and_version(void **state)
{
    (void)state;
    const char *path = temp_path("magic.npy");
    write_bytes(path, "\x93NUMPZ\x01\x00\x10\x00{}              ", 26);
    expect_read_error(path, BCG_ERR_IO, "magic");
    write_bytes(path, "PK\x03\x04", 4);   /* an .npz is a zip */
    expect_read_error(path, BCG_ERR_IO, "truncated");
    write_bytes(path, "", 0);
    expect_read_error(path, BCG_ERR_IO, "truncated");
    write_bytes(path, "\x93NUMPY\x04\x00\x10\x00", 10);
    expect_read_error(path, BCG_ERR_IO, "version 4.0");
    write_bytes(path, "\x93NUMPY\x01\x01\x10\x00", 10);
    expect_read_error(path, BCG_ERR_IO, "version 1.1");
    expect_read_error(temp_path("does-not-exist.npy"), BCG_ERR_IO, "cannot open");
}

static void test_header_length_beyond_file(void **state)
{
    (void)state;
    const char *path = temp_path("len.npy");
    write_bytes(path, "\x93NUMPY\x01\x00\xff\x7f{'descr'", 17);
    expect_read_error(path, BCG_ERR_IO, "past the end");
    write_bytes(path, "\x93NUMPY\x02\x00\xff\xff\xff\xff{", 13);
    expect_read_error(path, BCG_ERR_IO, "past the end");
    write_bytes(path, "\x93NUMPY\x01\x00", 8);   /* no length at all */
    expect_read_error(path, BCG_ERR_IO, "header length");
}

static void test_header_too_large(void **state)
{
    (void)state;
    /* a 2 MiB header of spaces: rejected by the limit, not parsed */
    size_t size = 12 + (2u << 20);
    unsigned char *buf = calloc(1, size);
    assert_non_null(buf);
    memcpy(buf, "\x93NUMPY\x02\x00\x00\x00\x20\x00", 12);
    memset(buf + 12, ' ', size - 12);
    const char *path = temp_path("bighead.npy");
    write_bytes(path, buf, size);
    free(buf);
    expect_read_error(path, BCG_ERR_LIMIT, "NPY_MAX_HEADER");
}

static void test_missing_and_repeated_keys(void **state)
{
    (void)state;
    expect_header_error("{'fortran_order': False, 'shape': (1,), }", BCG_ERR_IO, "missing key 'descr'");
    expect_header_error("{'descr': '<i8', 'shape': (1,), }", BCG_ERR_IO, "missing key 'fortran_order'");
    expect_header_error("{'descr': '<i8', 'fortran_order': False}", BCG_ERR_IO, "missing key 'shape'");
    expect_header_error("{'descr': '<i8', 'descr': '<i8', 'fortran_order': False, 'shape': (1,)}",
                        BCG_ERR_IO, "repeated key 'descr'");
    expect_header_error("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), 'x': 1}",
                        BCG_ERR_IO, "unexpected key 'x'");
    expect_header_error("", BCG_ERR_IO, "expected '{'");
    expect_header_error("{'descr': '<i8' 'fortran_order': False}", BCG_ERR_IO, "expected ',' or '}'");
    expect_header_error("{'descr' '<i8'}", BCG_ERR_IO, "expected ':'");
    expect_header_error("{'descr': '<i8', 'fortran_order': False, 'shape': (1,)} junk", BCG_ERR_IO,
                        "after the dict");
    expect_header_error("{'descr': '<i8, 'fortran_order': False, 'shape': (1,)}", BCG_ERR_IO,
                        "malformed");
    expect_header_error("{'descr': '<i8', 'fortran_order': 0, 'shape': (1,)}", BCG_ERR_IO,
                        "True or False");
}

static void test_bad_descr(void **state)
{
    (void)state;
    static const struct { const char *descr, *needle; } cases[] = {
        {"<f1", "'<f1' (float8"},
        {"|V4", "'|V4' (void"},
        {"<f16", "'<f16' (float128"},
        {"<c8", "'<c8' (complex"},
        {">c16", "'>c16' (complex"},
        {"|O", "'|O' (Python object"},
        {"<U4", "'<U4' (unicode string"},
        {"|S3", "'|S3' (byte string"},
        {"|V8", "'|V8' (void"},
        {"<M8[ns]", "'<M8[ns]' (datetime"},
        {"<i3", "'<i3' (unsupported size"},
        {"|b2", "'|b2' (unsupported size"},
        {"<u16", "'<u16'"},
        {"", "''"},
        {"x", "'x'"},
        {"<i", "'<i'"},
    };
    char header[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (1,), }",
                 cases[i].descr);
        expect_header_error(header, BCG_ERR_IO, cases[i].needle);
        expect_header_error(header, BCG_ERR_IO, "unsupported dtype");
    }
    expect_header_error("{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (1,)}",
                        BCG_ERR_IO, "structured");
}

static void test_bad_shape(void **state)
{
    (void)state;
    expect_header_error("{'descr': '<i8', 'fortran_order': False, 'shape': (2, x), }", BCG_ERR_IO,
                        "expected a dimension");
    expect_header_error("{'descr': '<i8', 'fortran_order': False, 'shape': 2, }", BCG_ERR_IO,
                        "expected '('");
    expect_header_error("{'descr': '<i8', 'fortran_order': False, 'shape': (2), }", BCG_ERR_IO,
                        "not a tuple");
    expect_header_error("{'descr': '<i8', 'fortran_order': False, 'shape': (,), }", BCG_ERR_IO,
                        "expected a dimension");
    expect_header_error("{'descr': '<i8', 'fortran_order': False, 'shape': (2 3), }", BCG_ERR_IO,
                        "expected ',' or ')'");
    expect_header_error("{'descr': '<i8', 'fortran_order': False, 'shape': (2,", BCG_ERR_IO,
                        "shape");
    expect_header_error("{'descr': '<i8', 'fortran_order': False, 'shape': (-1,), }", BCG_ERR_IO,
                        "negative dimension");
    expect_header_error("{'descr': '<i8', 'fortran_order': False, 'shape': (2, -3), }", BCG_ERR_IO,
                        "negative dimension");
    expect_header_error("{'descr': '<i8', 'fortran_order': False, 'shape': (1.5,), }", BCG_ERR_IO,
                        "expected ',' or ')'");
    expect_header_error("{'descr': '<i8', 'fortran_order': False, 'shape': (99999999999999999999,), }",
                        BCG_ERR_LIMIT, "2^63-1");
    /* the element count overflows int64 */
    expect_header_error("{'descr': '<i1', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
                        BCG_ERR_LIMIT, "2^63");
    /* fits int64 but not NPY_MAX_BYTES: refused before any allocation */
    expect_header_error("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000), }",
                        BCG_ERR_LIMIT, "NPY_MAX_BYTES");
    /* rank above BCG_MAX_RANK */
    char header[1024] = "{'descr': '<i8', 'fortran_order': False, 'shape': (";
    for (int k = 0; k <= BCG_MAX_RANK; k++)
        strcat(header, "1, ");
    strcat(header, "), }");
    expect_header_error(header, BCG_ERR_LIMIT, "BCG_MAX_RANK");
    /* a NUL inside the header */
    const char *path = temp_path("nul.npy");
    write_bytes(path, "\x93NUMPY\x01\x00\x04\x00{\0}\n", 14);
    expect_read_error(path, BCG_ERR_IO, "NUL");
}

static void test_truncated_data(void **state)
{
    (void)state;
    const int32_t data[5] = {1, 2, 3, 4, 5};
    const char *header = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }";
    const char *path = craft("trunc.npy", 1, header, data, sizeof data);
    expect_read_error(path, BCG_ERR_IO, "need 24 data bytes, the file holds 20");
    path = craft("trunc0.npy", 1, header, NULL, 0);
    expect_read_error(path, BCG_ERR_IO, "truncated");
    /* an empty array needs no data */
    npy_array a;
    bcg_error err;
    error_clear(&err);
    path = craft("empty.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (0, 3), }", NULL, 0);
    assert_int_equal(npy_read(path, &a, &err), BCG_OK);
    assert_int_equal(a.shape.dims[0], 0);
    npy_free(&a);
}

/* ---- data sources ------------------------------------------------------------ */

static npy_array filled(bcg_dtype dtype, int64_t n, const char *source)
{
    npy_array a = {.dtype = dtype};
    a.shape.rank = 1;
    a.shape.dims[0] = n;
    bcg_error err;
    error_clear(&err);
    assert_int_equal(npy_fill(&a, source, &err), BCG_OK);
    return a;
}

static void test_fill_range(void **state)
{
    (void)state;
    npy_array a = filled(BCG_I8, 300, "range");
    assert_int_equal(((int8_t *)a.data)[127], 127);
    assert_int_equal(((int8_t *)a.data)[128], -128);
    assert_int_equal(((int8_t *)a.data)[299], 43);
    npy_free(&a);
    a = filled(BCG_U8, 300, "range");
    assert_int_equal(((uint8_t *)a.data)[256], 0);
    assert_int_equal(((uint8_t *)a.data)[299], 43);
    npy_free(&a);
    a = filled(BCG_I16, 70000, "range");
    assert_int_equal(((int16_t *)a.data)[40000], 40000 - 65536);
    npy_free(&a);
    a = filled(BCG_BOOL, 5, "range");
    const unsigned char flags[] = {0, 1, 0, 1, 0};
    assert_memory_equal(a.data, flags, 5);
    npy_free(&a);
    a = filled(BCG_F32, 5, "range");
    assert_true(((float *)a.data)[4] == 4.0f);
    npy_free(&a);
    a = filled(BCG_U64, 3, "range");
    assert_int_equal(((uint64_t *)a.data)[2], 2);
    npy_free(&a);
}

static void test_fill_constants(void **state)
{
    (void)state;
    for (int t = 0; t < BCG_DTYPE_COUNT; t++) {
        npy_array ones = filled((bcg_dtype)t, 4, "ones"), zeros = filled((bcg_dtype)t, 4, "zeros");
        size_t size = bcg_dtype_size((bcg_dtype)t);
        unsigned char zero[8] = {0}, one[8] = {0};
        if (t == BCG_F32) {
            float f = 1;
            memcpy(one, &f, 4);
        } else if (t == BCG_F16 || t == BCG_BF16) {
            uint16_t bits = t == BCG_F16 ? 0x3c00 : 0x3f80;
            memcpy(one, &bits, 2);
        } else if (t == BCG_F64) {
            double d = 1;
            memcpy(one, &d, 8);
        } else {
            uint64_t u = 1;
            memcpy(one, &u, 8);   /* little-endian host: the low bytes */
        }
        for (int i = 0; i < 4; i++) {
            assert_memory_equal((unsigned char *)ones.data + i * size, one, size);
            assert_memory_equal((unsigned char *)zeros.data + i * size, zero, size);
        }
        npy_free(&ones);
        npy_free(&zeros);
    }
}

static void test_fill_random(void **state)
{
    (void)state;
    for (int t = 0; t < BCG_DTYPE_COUNT; t++) {
        npy_array a = filled((bcg_dtype)t, 5000, "random:123");
        npy_array b = filled((bcg_dtype)t, 5000, "random:123");
        npy_array c = filled((bcg_dtype)t, 5000, "random:124");
        size_t bytes = 5000 * bcg_dtype_size((bcg_dtype)t);
        assert_memory_equal(a.data, b.data, bytes);
        assert_memory_not_equal(a.data, c.data, bytes);
        double low = 1e300, high = -1e300;
        for (int i = 0; i < 5000; i++) {
            double v;
            const unsigned char *p = (const unsigned char *)a.data + i * bcg_dtype_size((bcg_dtype)t);
            switch (t) {
            case BCG_BOOL: v = *p; assert_true(*p <= 1); break;
            case BCG_I8: v = *(const int8_t *)p; break;
            case BCG_I16: v = *(const int16_t *)p; break;
            case BCG_I32: v = *(const int32_t *)p; break;
            case BCG_I64: v = (double)*(const int64_t *)p; break;
            case BCG_U8: v = *p; break;
            case BCG_U16: v = *(const uint16_t *)p; break;
            case BCG_U32: v = *(const uint32_t *)p; break;
            case BCG_U64: v = (double)*(const uint64_t *)p; break;
            case BCG_F32: v = *(const float *)p; break;
            case BCG_F16: v = bcg_f16_to_f32(*(const uint16_t *)p); break;
            case BCG_BF16: v = bcg_bf16_to_f32(*(const uint16_t *)p); break;
            default: v = *(const double *)p; break;
            }
            low = v < low ? v : low;
            high = v > high ? v : high;
        }
        dtype_kind kind = dtype_kind_of((bcg_dtype)t);
        if (kind == KIND_BOOL) {
            assert_true(low == 0 && high == 1);
        } else if (kind == KIND_INT) {
            assert_true(low == -100 && high == 100);
        } else if (kind == KIND_UINT) {
            assert_true(low == 0 && high == 200);
        } else {
            assert_true(low >= -10 && low < -9.9);
            assert_true(high < 10 && high > 9.9);
        }
        npy_free(&a);
        npy_free(&b);
        npy_free(&c);
    }
    /* the stream is pinned: splitmix64 from seed 0, first draw
     * 0xe220a8397b1dcdaf -> top 32 bits * 201 >> 32 = 177 -> 77 for i64 */
    npy_array a = filled(BCG_I64, 1, "random:0");
    assert_int_equal(((int64_t *)a.data)[0], 77);
    npy_free(&a);
}

static void test_fill_errors(void **state)
{
    (void)state;
    static const char *const bad[] = {"random", "random:", "random:x", "random:-1", "random:1x",
                                      "random:18446744073709551616", "linspace", "", "Range"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        npy_array a = {.dtype = BCG_F32};
        a.shape.rank = 1;
        a.shape.dims[0] = 2;
        bcg_error err;
        error_clear(&err);
        assert_int_equal(npy_fill(&a, bad[i], &err), BCG_ERR_USAGE);
        assert_null(a.data);
        assert_non_null(strstr(err.message, "random:SEED"));
    }
    npy_array a = filled(BCG_U8, 1, "random:18446744073709551615");
    npy_free(&a);

    npy_array big = {.dtype = BCG_F64};
    big.shape.rank = 2;
    big.shape.dims[0] = (int64_t)1 << 20;
    big.shape.dims[1] = (int64_t)1 << 20;
    bcg_error err;
    error_clear(&err);
    assert_int_equal(npy_fill(&big, "zeros", &err), BCG_ERR_LIMIT);
    assert_non_null(strstr(err.message, "NPY_MAX_BYTES"));
    big.shape.dims[0] = INT64_MAX;
    big.shape.dims[1] = 2;
    error_clear(&err);
    assert_int_equal(npy_fill(&big, "zeros", &err), BCG_ERR_LIMIT);
    big.shape.dims[0] = -1;
    error_clear(&err);
    assert_int_equal(npy_fill(&big, "zeros", &err), BCG_ERR_SHAPE);
}

/* ---- allocation failures ----------------------------------------------------- */

static void test_allocation_failures(void **state)
{
    (void)state;
    npy_array a = filled(BCG_I32, 10, "range");
    bcg_error err;
    const char *path = temp_path("alloc.npy");
    error_clear(&err);
    assert_int_equal(npy_write(path, &a, &err), BCG_OK);
    npy_free(&a);
    for (long n = 1; n <= 4; n++) {
        npy_array b;
        error_clear(&err);
        mem_fail_after(n);
        bcg_status status = npy_read(path, &b, &err);
        mem_fail_after(0);
        if (status == BCG_OK) {
            npy_free(&b);
            continue;
        }
        assert_int_equal(status, BCG_ERR_NOMEM);
        assert_null(b.data);
    }
    npy_array c = {.dtype = BCG_F64};
    error_clear(&err);
    mem_fail_after(1);
    assert_int_equal(npy_fill(&c, "ones", &err), BCG_ERR_NOMEM);
    mem_fail_after(0);
    assert_null(c.data);

    npy_array d = filled(BCG_F64, 6, "range");
    strbuf sb;
    sb_init(&sb);
    mem_fail_after(1);
    assert_int_equal(npy_format(&sb, &d), BCG_ERR_NOMEM);
    mem_fail_after(0);
    sb_free(&sb);
    error_clear(&err);
    mem_fail_after(1);
    assert_int_equal(npy_write(path, &d, &err), BCG_ERR_NOMEM);
    mem_fail_after(0);
    npy_free(&d);
}

/* ---- printing ------------------------------------------------------------------ */

static void test_format_bool(void **state)
{
    (void)state;
    const unsigned char flags[] = {1, 0, 1, 1};
    const int64_t dims[] = {2, 2};
    expect_format(BCG_BOOL, 1, dims, flags, "[ True False]");
    expect_format(BCG_BOOL, 2, dims, flags, "[[ True False]\n [ True  True]]");
    expect_format(BCG_BOOL, 0, NULL, flags, "True");
    expect_format(BCG_BOOL, 0, NULL, flags + 1, "False");
}

static void test_format_integers(void **state)
{
    (void)state;
    const int64_t dims[] = {2, 3};
    const int8_t i8[] = {-128, 5, 127, 0, -1, 12};
    expect_format(BCG_I8, 2, dims, i8, "[[-128    5  127]\n [   0   -1   12]]");
    const uint8_t u8[] = {0, 255, 7};
    expect_format(BCG_U8, 1, (const int64_t[]){3}, u8, "[  0 255   7]");
    const int16_t i16[] = {-300};
    expect_format(BCG_I16, 1, (const int64_t[]){1}, i16, "[-300]");
    const int32_t i32[] = {1, 2, 3, 4, 5, 6};
    expect_format(BCG_I32, 3, (const int64_t[]){3, 1, 2}, i32, "[[[1 2]]\n\n [[3 4]]\n\n [[5 6]]]");
    const int64_t i64[] = {INT64_MIN, INT64_MAX};
    expect_format(BCG_I64, 1, (const int64_t[]){2}, i64,
                  "[-9223372036854775808  9223372036854775807]");
    const uint16_t u16[] = {65535};
    expect_format(BCG_U16, 0, NULL, u16, "65535");
    const uint32_t u32[] = {4000000000u, 1};
    expect_format(BCG_U32, 1, (const int64_t[]){2}, u32, "[4000000000          1]");
    const uint64_t u64[] = {UINT64_MAX};
    expect_format(BCG_U64, 1, (const int64_t[]){1}, u64, "[18446744073709551615]");
    expect_format(BCG_I8, 0, NULL, i8, "-128");
}

static void test_format_floats(void **state)
{
    (void)state;
    const int64_t dims[] = {2, 2};
    const double f64[] = {1, 2, 3, 4};
    expect_format(BCG_F64, 2, dims, f64, "[[1. 2.]\n [3. 4.]]");
    const double mixed[] = {1.5, -2, 0.25, 100};
    expect_format(BCG_F64, 1, (const int64_t[]){4}, mixed, "[  1.5   -2.     0.25 100.  ]");
    const float f32[] = {0.1f, 1.0f / 3, 2.5f};
    expect_format(BCG_F32, 1, (const int64_t[]){3}, f32, "[0.1        0.33333334 2.5       ]");
    const double third[] = {1.0 / 3, 2.0 / 3};
    expect_format(BCG_F64, 1, (const int64_t[]){2}, third, "[0.33333333 0.66666667]");
    const double wide[] = {1e-5, 1.5e10};
    expect_format(BCG_F64, 1, (const int64_t[]){2}, wide, "[1.0e-05 1.5e+10]");
    const double exponents[] = {1e-5, 1e-100, 1e10};
    expect_format(BCG_F64, 1, (const int64_t[]){3}, exponents, "[1.e-005 1.e-100 1.e+010]");
    const double special[] = {NAN, -INFINITY, 1.5};
    expect_format(BCG_F64, 1, (const int64_t[]){3}, special, "[ nan -inf  1.5]");
    const float only_special[] = {NAN, INFINITY};
    expect_format(BCG_F32, 1, (const int64_t[]){2}, only_special, "[nan inf]");
    const double zeros[] = {-0.0, 0.0};
    expect_format(BCG_F64, 1, (const int64_t[]){2}, zeros, "[-0.  0.]");
    const double tie[] = {0.001953125, 0.5};   /* exact tie at the 8th decimal: to even */
    expect_format(BCG_F64, 1, (const int64_t[]){2}, tie, "[0.00195312 0.5       ]");
    const float whole[] = {99999992.0f};        /* exact whole digits, not 99999990 */
    expect_format(BCG_F32, 1, (const int64_t[]){1}, whole, "[99999992.]");
    const float power[] = {0x1p90f};             /* the narrower gap below a power of two */
    expect_format(BCG_F32, 1, (const int64_t[]){1}, power, "[1.2379401e+27]");
    const float small[] = {1e-4f, 0.5f};         /* the ratio 5000 > 1000 */
    expect_format(BCG_F32, 1, (const int64_t[]){2}, small, "[1.e-04 5.e-01]");
    /* the thresholds one at a time: float32 1e-4 is below the double 1e-4 */
    expect_format(BCG_F32, 1, (const int64_t[]){1}, small, "[1.e-04]");
    const double limit[] = {1e-4, 1e-5, 1e-5, 99999999, 99999999, 1e8};
    expect_format(BCG_F64, 1, (const int64_t[]){1}, limit, "[0.0001]");
    expect_format(BCG_F64, 1, (const int64_t[]){2}, limit + 1, "[1.e-05 1.e-05]");
    expect_format(BCG_F64, 1, (const int64_t[]){2}, limit + 3, "[99999999. 99999999.]");
    expect_format(BCG_F64, 1, (const int64_t[]){1}, limit + 5, "[1.e+08]");
    const double ratio[] = {0.001, 2.0, 0.001, 1.0};   /* max/min > 1000, not >= */
    expect_format(BCG_F64, 1, (const int64_t[]){2}, ratio, "[1.e-03 2.e+00]");
    expect_format(BCG_F64, 1, (const int64_t[]){2}, ratio + 2, "[0.001 1.   ]");
    const float ratio32[] = {0.001f, 1.0f};
    expect_format(BCG_F32, 1, (const int64_t[]){2}, ratio32, "[0.001 1.   ]");
}

static void test_format_float_scalars(void **state)
{
    (void)state;
    static const struct { double value; const char *text; } f64[] = {
        {1.5, "1.5"}, {-0.0, "-0.0"}, {1e16, "1e+16"}, {1e-5, "1e-05"},
        {123456789012345.0, "123456789012345.0"}, {0.1, "0.1"}, {1.5e-300, "1.5e-300"},
        {1e-4, "0.0001"}, {NAN, "nan"}, {-INFINITY, "-inf"}, {100, "100.0"},
    };
    for (size_t i = 0; i < sizeof f64 / sizeof f64[0]; i++)
        expect_format(BCG_F64, 0, NULL, &f64[i].value, f64[i].text);
    static const struct { float value; const char *text; } f32[] = {
        {0.1f, "0.1"}, {99999992.0f, "99999990.0"}, {3e15f, "3000000000000000.0"},
        {1e-5f, "1e-05"}, {1e16f, "1e+16"}, {INFINITY, "inf"}, {16777216.0f, "16777216.0"},
    };
    for (size_t i = 0; i < sizeof f32 / sizeof f32[0]; i++)
        expect_format(BCG_F32, 0, NULL, &f32[i].value, f32[i].text);

    strbuf sb;
    sb_init(&sb);
    const int16_t v = -42;
    npy_format_value(&sb, BCG_I16, &v);
    sb_putc(&sb, ' ');
    const float f = 2.0f;
    npy_format_value(&sb, BCG_F32, &f);
    char *text = sb_finish(&sb);
    assert_string_equal(text, "-42 2.0");
    mem_free(text);
}

static void test_format_empty(void **state)
{
    (void)state;
    expect_format(BCG_F64, 1, (const int64_t[]){0}, NULL, "[]");
    expect_format(BCG_I32, 3, (const int64_t[]){2, 0, 3}, NULL, "[]");
    npy_array a = {.dtype = BCG_I32};
    a.shape.rank = 1;
    a.shape.dims[0] = 2;   /* no data for a non-empty array */
    strbuf sb;
    sb_init(&sb);
    assert_int_equal(npy_format(&sb, &a), BCG_ERR_USAGE);
    sb_free(&sb);
}

static void test_format_wrapping(void **state)
{
    (void)state;
    /* np.arange(30): 25 two-digit words fill a 75-column line */
    npy_array a = filled(BCG_I64, 30, "range");
    char *text = format_array(&a);
    assert_string_equal(text,
                        "[ 0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22 23\n"
                        " 24 25 26 27 28 29]");
    mem_free(text);
    npy_free(&a);
    /* nested rows wrap one column earlier per level */
    npy_array b = {.dtype = BCG_F64};
    b.shape.rank = 2;
    b.shape.dims[0] = 2;
    b.shape.dims[1] = 8;
    bcg_error err;
    error_clear(&err);
    assert_int_equal(npy_fill(&b, "range", &err), BCG_OK);
    for (int i = 0; i < 16; i++)
        ((double *)b.data)[i] = ((double *)b.data)[i] / 7;
    text = format_array(&b);
    assert_string_equal(text,
                        "[[0.         0.14285714 0.28571429 0.42857143 0.57142857 0.71428571\n"
                        "  0.85714286 1.        ]\n"
                        " [1.14285714 1.28571429 1.42857143 1.57142857 1.71428571 1.85714286\n"
                        "  2.         2.14285714]]");
    mem_free(text);
    npy_free(&b);
}

/* Past NumPy's 32 dimensions the nested width (75 minus one per level) gets
 * shorter than a word: a word is never moved off a line holding only the
 * hanging indent, so no empty lines appear. */
static void test_format_deep_nesting(void **state)
{
    (void)state;
    const int64_t values[] = {INT64_MIN, INT64_MAX};
    npy_array a = {.dtype = BCG_I64, .data = (void *)values};
    a.shape.rank = 60;
    for (int k = 0; k < 60; k++)
        a.shape.dims[k] = k == 59 ? 2 : 1;
    char expected[512], *at = expected;
    for (int k = 0; k < 60; k++)
        *at++ = '[';
    at += sprintf(at, "-9223372036854775808\n%60s 9223372036854775807", "");
    for (int k = 0; k < 60; k++)
        *at++ = ']';
    *at = 0;
    char *text = format_array(&a);
    assert_string_equal(text, expected);
    mem_free(text);
}

static void test_format_summary(void **state)
{
    (void)state;
    npy_array a = filled(BCG_I16, 1001, "range");
    char *text = format_array(&a);
    assert_string_equal(text, "[   0    1    2 ...  998  999 1000]");
    mem_free(text);
    npy_free(&a);
    /* exactly 1000 elements: printed in full */
    a = filled(BCG_U8, 1000, "zeros");
    text = format_array(&a);
    assert_null(strstr(text, "..."));
    /* str(np.zeros(1000, np.uint8)): 2028 characters on 28 lines */
    assert_int_equal(strlen(text), 2028);
    int lines = 1;
    for (const char *c = text; *c; c++)
        lines += *c == '\n';
    assert_int_equal(lines, 28);
    mem_free(text);
    npy_free(&a);

    npy_array b = {.dtype = BCG_I32};
    b.shape.rank = 2;
    b.shape.dims[0] = 100;
    b.shape.dims[1] = 20;
    bcg_error err;
    error_clear(&err);
    assert_int_equal(npy_fill(&b, "range", &err), BCG_OK);
    text = format_array(&b);
    assert_string_equal(text,
                        "[[   0    1    2 ...   17   18   19]\n"
                        " [  20   21   22 ...   37   38   39]\n"
                        " [  40   41   42 ...   57   58   59]\n"
                        " ...\n"
                        " [1940 1941 1942 ... 1957 1958 1959]\n"
                        " [1960 1961 1962 ... 1977 1978 1979]\n"
                        " [1980 1981 1982 ... 1997 1998 1999]]");
    mem_free(text);
    npy_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_dtype),
        cmocka_unit_test(test_round_trip_rank0_and_empty),
        cmocka_unit_test(test_write_header_matches_numpy),
        cmocka_unit_test(test_write_errors),
        cmocka_unit_test(test_read_big_endian),
        cmocka_unit_test(test_read_fortran_order),
        cmocka_unit_test(test_read_versions_and_layouts),
        cmocka_unit_test(test_bad_magic_and_version),
        cmocka_unit_test(test_header_length_beyond_file),
        cmocka_unit_test(test_header_too_large),
        cmocka_unit_test(test_missing_and_repeated_keys),
        cmocka_unit_test(test_bad_descr),
        cmocka_unit_test(test_bad_shape),
        cmocka_unit_test(test_truncated_data),
        cmocka_unit_test(test_fill_range),
        cmocka_unit_test(test_fill_constants),
        cmocka_unit_test(test_fill_random),
        cmocka_unit_test(test_fill_errors),
        cmocka_unit_test(test_allocation_failures),
        cmocka_unit_test(test_format_bool),
        cmocka_unit_test(test_format_integers),
        cmocka_unit_test(test_format_floats),
        cmocka_unit_test(test_format_float_scalars),
        cmocka_unit_test(test_format_empty),
        cmocka_unit_test(test_format_wrapping),
        cmocka_unit_test(test_format_deep_nesting),
        cmocka_unit_test(test_format_summary),
    };
    return cmocka_run_group_tests(tests, setup_directory, remove_directory);
}
