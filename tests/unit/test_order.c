/* test_order.c - the plan and form choices for inputs read across the
 * output's layout (gen/plan.c plan_order_transposed, gen/lower.c "2-D
 * tiles of long runs over a transposed input"), for trees whose repeated
 * subtrees share their tiles (lower.c tile_repeats), and for operands the
 * folded tree no longer reads (gen/front.c mark_unread): seeded random
 * shapes, strides, dtypes and expressions, in place and on two threads,
 * every result bit for bit against the reference evaluator over the same
 * operands. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "kir.h"
#include "vex.h"

#include <cmocka.h>

#include "compare.h"
#include "guarded.h"

static uint64_t state = 0x9e3779b97f4a7c15ull;

static uint64_t next(void) { return xorshift64(&state); }

/* Random bytes, a few values of every dtype (NaN, -0.0 and inf among the
 * floats' bit patterns). */
static void fill(void *buffer, size_t bytes)
{
    unsigned char *b = buffer;
    for (size_t i = 0; i < bytes; i++)
        b[i] = (unsigned char)(next() >> 24);
}

typedef struct view {
    int rank;
    int64_t shape[5], strides[5];
    size_t bytes;          /* the buffer */
    int64_t first;         /* element [0, ..., 0]'s offset in it, in elements */
} view;

/* A view of SHAPE whose dimension CONTIGUOUS has stride SIGN (1 or -1),
 * the others laid out around it in random order with a random gap. */
static view random_view(int rank, const int64_t *shape, int contiguous, int sign)
{
    view v = {.rank = rank};
    int order[5], count = 0;
    order[count++] = contiguous;
    for (int d = 0; d < rank; d++)
        if (d != contiguous)
            order[count++] = d;
    for (int i = 1; i < count; i++) { /* shuffle all but the contiguous one */
        int j = 1 + (int)(next() % (uint64_t)i);
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    int64_t step = 1, low = 0, high = 0;
    for (int i = 0; i < count; i++) {
        int d = order[i];
        v.shape[d] = shape[d];
        int64_t stride = step * (i == 0 ? sign : (next() % 3 == 0 ? -1 : 1));
        v.strides[d] = stride;
        int64_t reach = stride * (shape[d] - 1);
        if (reach < 0)
            low += reach;
        else
            high += reach;
        step *= shape[d] + (i > 0 && next() % 2 ? 1 : 0); /* a gap now and then */
    }
    v.first = -low;
    v.bytes = (size_t)(high - low + 1);
    return v;
}

/* How many runs check made on more than one thread. */
static long threaded_runs;

/* Whether check's last kernel gathers a tile outside its innermost plan
 * loop (lower.c hoist_tile_gathers): a gather call before the last
 * `for (long i` of the source. */
static bool last_hoisted;

/* Whether check's last kernel is the small kernel's straight-line code
 * (vex.c; the flat form's loop of bodies among them): no gathers at all. */
static bool last_small;
static int small_kernels; /* (check's kernels in the small or flat form) */

static bool gather_hoisted(const char *source)
{
    const char *gather = NULL, *loop = NULL;
    for (const char *at = strstr(source, "gather_rows_"); at && !gather;
         at = strstr(at + 1, "gather_rows_")) {
        const char *end = at + strlen("gather_rows_");
        while (*end >= '0' && *end <= '9')
            end++;
        if (strncmp(end, "(in", 3) == 0) /* a call, not a declaration */
            gather = at;
    }
    for (const char *at = strstr(source, "for (long i"); at; at = strstr(at + 1, "for (long i"))
        loop = at;
    return gather && loop && gather < loop;
}

/* Compiles EXPR over OPS (COUNT), runs it (in place on operand INPLACE
 * when >= 0, on THREADS threads) and compares with the reference
 * evaluator; returns the kernel's source's answer to NEEDLE (1 found, 0
 * not), -1 on a mismatch. */
/* check's comparisons within the transcendentals' tolerance (compare.h:
 * the fused function's f32 exp and log are the microkernels' polynomials,
 * docs/semantics.md) instead of bit for bit. */
static bool check_tolerant;

static int check(const char *expr, bcg_operand *ops, void **in, const size_t *bytes, int count,
                 int inplace, int threads, const char *needle)
{
    bcg_options options;
    bcg_options_init(&options);
    options.inplace = inplace;
    bcg_context *ctx = bcg_context_new();
    bcg_kernel *k = NULL;
    bcg_error err;
    assert_non_null(ctx);
    if (bcg_compile(ctx, expr, ops, count, &options, &k, &err) != BCG_OK) {
        print_error("%s: %s\n", expr, err.message);
        bcg_context_free(ctx);
        return -1;
    }
    int found = needle && strstr(bcg_kernel_source(k), needle) != NULL;
    last_hoisted = gather_hoisted(bcg_kernel_source(k));
    last_small = strstr(bcg_kernel_source(k), VEX_SMALL_SYMBOL "(") != NULL;
    small_kernels += last_small;
    arena *ar = arena_new();
    compile *front = ar ? arena_alloc(ar, sizeof *front) : NULL;
    assert_non_null(front);
    memset(front, 0, sizeof *front);
    front->arena = ar;
    front->err = &err;
    assert_int_equal(compile_front(front, expr, ops, count, &options), BCG_OK);
    front->err = NULL;
    int64_t elements = bcg_kernel_elements(k);
    bcg_dtype t = bcg_kernel_dtype(k);
    size_t out_bytes = (size_t)elements * bcg_dtype_size(t);
    char *want = malloc(out_bytes + 1), *got = malloc(out_bytes + 1);
    assert_true(want && got);
    const void *pointers[4];
    for (int i = 0; i < count; i++)
        pointers[i] = in[i];
    int result = found;
    if (inplace >= 0) { /* the reference into a copy of the target */
        char *copy = malloc(bytes[inplace]);
        assert_non_null(copy);
        int64_t first = (char *)in[inplace] - (char *)in[count];
        memcpy(copy, in[count], bytes[inplace]);
        const void *reference[4];
        memcpy(reference, pointers, sizeof reference);
        reference[inplace] = copy + first;
        assert_int_equal(eval_run(front, copy + first, reference, NULL), BCG_OK);
        assert_int_equal(bcg_run(k, NULL, pointers, &err), BCG_OK);
        /* (the target is C-contiguous: its elements in order) */
        if (first_difference(in[count], copy, t, elements, check_tolerant) >= 0) {
            print_error("%s in place on operand %d differs from the reference\n", expr, inplace);
            result = -1;
        }
        free(copy);
    } else {
        assert_int_equal(eval_run(front, want, pointers, NULL), BCG_OK);
        if (threads > 1)
            assert_int_equal(bcg_run_threads(k, got, pointers, threads, &err), BCG_OK);
        else
            assert_int_equal(bcg_run(k, got, pointers, &err), BCG_OK);
        int64_t at = first_difference(got, want, t, elements, check_tolerant);
        if (at >= 0) {
            print_error("%s: element %lld differs from the reference\n", expr, (long long)at);
            result = -1;
        }
    }
    free(want);
    free(got);
    arena_free(ar);
    threaded_runs += compile_threaded_run_count(ctx);
    bcg_context_free(ctx);
    return result;
}

/* An input laid out across the output: a (rows..., run) view contiguous
 * (or reversed) along a dimension other than the last, so that it is read
 * with a long stride along the output's run; b C-contiguous of the same
 * shape, c a row.  Shapes of 2 and 3 dimensions, the contiguous one next
 * to the last or further out (the plan moves it), runs short and long
 * (columns), every dtype class; in place on b, two threads.  Asserts a
 * share of them takes the calls per row over columns (tile_row). */
static void test_transposed_layouts(void **state_)
{
    (void)state_;
    static const char *const exprs[] = {
        "a + b", "where(7 > a, 7, a)", "minimum(a, c) * b - a",
        "sqrt(abs(f32(a))) * f32(b)", "where(a > c, a - b, c + b)"};
    static const bcg_dtype types[] = {BCG_F32, BCG_F64, BCG_I32, BCG_I16, BCG_U8, BCG_I8};
    int checked = 0, failures = 0, by_rows = 0;
    for (int n = 0; n < 50; n++) {
        int rank = 2 + (int)(next() % 2);
        int64_t shape[4];
        for (int d = 0; d < rank; d++)
            shape[d] = 2 + (int64_t)(next() % 23);
        shape[rank - 1] = 513 + (int64_t)(next() % 1600); /* a long run */
        if (rank == 3 && next() % 2)
            shape[1] = 1 + (int64_t)(next() % 3);
        bcg_dtype t = types[next() % (sizeof types / sizeof types[0])];
        const char *expr = exprs[next() % (sizeof exprs / sizeof exprs[0])];
        int contiguous = (int)(next() % (uint64_t)(rank - 1));
        view va = random_view(rank, shape, contiguous, next() % 4 == 0 ? -1 : 1);
        size_t size = bcg_dtype_size(t);
        int64_t b_elements = 1;
        for (int d = 0; d < rank; d++)
            b_elements *= shape[d];
        size_t bytes[3] = {va.bytes * size, (size_t)b_elements * size,
                           (size_t)shape[rank - 1] * size};
        void *buffers[4];
        for (int i = 0; i < 3; i++) {
            buffers[i] = malloc(bytes[i]);
            assert_non_null(buffers[i]);
            fill(buffers[i], bytes[i]);
        }
        bcg_operand ops[3] = {{"a", t, rank, va.shape, va.strides},
                              {"b", t, rank, shape, NULL},
                              {"c", t, 1, &shape[rank - 1], NULL}};
        void *in[4] = {(char *)buffers[0] + (size_t)va.first * size, buffers[1], buffers[2],
                       buffers[1]};
        int variant = (int)(next() % 4);
        /* in place on b: only where the result is b's dtype */
        bool inplace = variant == 1 && strncmp(expr, "sqrt", 4) != 0;
        int got = check(expr, ops, in, bytes, 3, inplace ? 1 : -1, variant == 2 ? 2 : 1,
                        "tile_row");
        checked++;
        failures += got < 0;
        by_rows += got > 0;
        if (got < 0) {
            print_error("  %s rank %d variant %d a", bcg_dtype_name(t), rank, variant);
            for (int d = 0; d < rank; d++)
                print_error(" %lld@%lld", (long long)va.shape[d], (long long)va.strides[d]);
            print_error("\n");
        }
        for (int i = 0; i < 3; i++)
            free(buffers[i]);
    }
    print_message("# %d kernels over transposed layouts, %d with calls per row over "
                  "columns\n", checked, by_rows);
    assert_int_equal(failures, 0);
    assert_true(by_rows * 4 >= checked); /* 19 of 50 */
}

/* Trees that repeat a subtree (its tiles shared) past MAX_TILE_TEMPORARIES
 * occurrences, over contiguous, broadcast and strided operands of every
 * integer width: the tiles or the fused function, bit for bit. */
static void test_repeated_subtrees(void **state_)
{
    (void)state_;
    static const char *const exprs[] = {
        ("where(sqrt(f32(abs(maximum(b, maximum(2, a))))) > 3.0, a, "
         "sqrt(f32(abs(maximum(b, maximum(2, a))))))"),
        "u8(u8(b) > minimum(a, exp(f32(a)))) * (minimum(a, exp(f32(a))))",
        "maximum(i32(where(abs(b - a) != 1, abs(b - a), a)), i32(abs(a) + abs(b - a)))"};
    static const bcg_dtype types[] = {BCG_I16, BCG_U8, BCG_I32, BCG_I8};
    int checked = 0, failures = 0, tiled = 0;
    for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            bcg_dtype t = types[ti];
            size_t size = bcg_dtype_size(t);
            int64_t n = 700 + (int64_t)(next() % 3000), one = 1;
            int64_t stride = next() % 2 ? 1 : -2;
            bcg_operand ops[2] = {{"a", t, 1, &n, stride == 1 ? NULL : &stride},
                                  {"b", t, 1, &one, NULL}};
            size_t bytes[2] = {(size_t)(2 * n) * size, size};
            void *buffers[2] = {malloc(bytes[0]), malloc(bytes[1])};
            assert_true(buffers[0] && buffers[1]);
            fill(buffers[0], bytes[0]);
            fill(buffers[1], bytes[1]);
            void *in[3] = {stride == 1 ? buffers[0] : (char *)buffers[0] + (size_t)(2 * n - 2) * size,
                           buffers[1], NULL};
            int got = check(exprs[e], ops, in, bytes, 2, -1, 1, "tile_count");
            checked++;
            failures += got < 0;
            tiled += got > 0;
            free(buffers[0]);
            free(buffers[1]);
        }
    print_message("# %d kernels with repeated subtrees, %d in tiles\n", checked, tiled);
    assert_int_equal(failures, 0);
    assert_true(tiled * 2 >= checked);
}

/* The folds that drop an operand (fold.c: x * 0, 0 * x, x & 0, x - x,
 * where(c, x, x) on integers and bool; never on floats, where NaN, -0.0
 * and inf decide) over every dtype and a strided, broadcast layout: the
 * result keeps its shape and dtype (the dropped operand still
 * broadcasts), the plan gives the dropped operand stride 0 (front.c,
 * mark_unread) on integers only, and the values are the reference
 * evaluator's bit for bit. */
static void test_dropped_operands(void **state_)
{
    (void)state_;
    /* (the operand dropped on integers: a, a, a, b, a, none) */
    static const char *const exprs[] = {"a * 0 + b", "0 * a + b", "(a - a) + b",
                                        "where(b > 1, a, a) + b * 0", "(a | -1) + b",
                                        "(-1 & a) * b"};
    static const int drops[] = {0, 0, 0, 1, 0, -1};
    int checked = 0, failures = 0, dropped = 0, dropped_wanted = 0;
    for (int t = BCG_BOOL; t <= BCG_F64; t++) {
        size_t size = bcg_dtype_size((bcg_dtype)t);
        for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++) {
            bool integer = dtype_kind_of((bcg_dtype)t) != KIND_FLOAT;
            if (t == BCG_BOOL && e != 0 && e != 1 && e != 4)
                continue; /* (bool has no subtraction; where's branches are bool) */
            int64_t a_shape[3] = {4, 1, 6}, a_strides[3] = {-7, 3, 1};
            int64_t b_shape[2] = {5, 1};
            bcg_operand ops[2] = {{"a", (bcg_dtype)t, 3, a_shape, a_strides},
                                  {"b", (bcg_dtype)t, 2, b_shape, NULL}};
            size_t bytes[2] = {32 * size, 5 * size};
            void *buffers[2] = {malloc(bytes[0]), malloc(bytes[1])};
            assert_true(buffers[0] && buffers[1]);
            fill(buffers[0], bytes[0]);
            fill(buffers[1], bytes[1]);
            if (t == BCG_BOOL)
                for (size_t i = 0; i < 32; i++)
                    ((unsigned char *)buffers[0])[i] &= 1;
            void *in[3] = {(char *)buffers[0] + 21 * size, buffers[1], NULL};
            bcg_error err;
            arena *ar = arena_new();
            compile *front = ar ? arena_alloc(ar, sizeof *front) : NULL;
            assert_non_null(front);
            memset(front, 0, sizeof *front);
            front->arena = ar;
            front->err = &err;
            bcg_status s = compile_front(front, exprs[e], ops, 2, NULL);
            if (s != BCG_OK) { /* a bool subtraction or comparison the typing refuses */
                arena_free(ar);
                free(buffers[0]);
                free(buffers[1]);
                continue;
            }
            assert_int_equal(front->broadcast->result.rank, 3);
            assert_int_equal(front->broadcast->result.dims[1], 5);
            /* (where(c, x, x) is x whatever the dtype; b * 0 drops b on integers) */
            bool zero_strides = front->unread[drops[e] == 1 ? 1 : 0];
            if (drops[e] < 0) /* (a & ~0 is a: read) */
                integer = false;
            arena_free(ar);
            int got = check(exprs[e], ops, in, bytes, 2, -1, 1, NULL);
            checked++;
            failures += got < 0;
            dropped += zero_strides;
            dropped_wanted += integer;
            if (zero_strides != integer)
                print_error("%s over %s: a dropped %d\n", exprs[e], bcg_dtype_name((bcg_dtype)t),
                            zero_strides);
            assert_int_equal(zero_strides, integer);
            free(buffers[0]);
            free(buffers[1]);
        }
    }
    print_message("# %d kernels, %d dropping an operand (%d integer)\n", checked, dropped,
                  dropped_wanted);
    assert_int_equal(failures, 0);
    assert_true(dropped > 0);
}

/* Short runs that read an input backwards or with a stride of 2 (a view
 * reversed along the run or every other element, its other dimensions in
 * random order and direction): one binary
 * operation or comparison, which the _rows microkernel would write with a
 * gather of the reversed input on every call, takes the 2-D tiles whose
 * fused function reads it in place row by row (lower.c strided_run);
 * deeper trees for comparison.  Every dtype, a reversed or contiguous b,
 * a reversed row c; in place on b, two threads; a placed against a page
 * that faults on either side.  Asserts the share of single operations
 * that takes no _rows call where the CPU runs the fused code. */
static void test_reversed_runs(void **state_)
{
    (void)state_;
    static const char *const exprs[] = {"a + b", "a - 3", "minimum(a, c)", "b * a",
                                        "where(a > b, a, c)", "a > c"};
    static const bcg_dtype types[] = {BCG_I8,  BCG_I16, BCG_I32, BCG_I64, BCG_U8,
                                      BCG_U16, BCG_U32, BCG_U64, BCG_F32, BCG_F64};
    static guarded memory;
    int checked = 0, failures = 0, single = 0, fused = 0;
    long threaded_before = threaded_runs;
    for (int n = 0; n < 120; n++) {
        int rank = 2 + (int)(next() % 2);
        int64_t shape[4];
        for (int d = 0; d < rank; d++)
            shape[d] = 2 + (int64_t)(next() % 12);
        shape[rank - 1] = 16 + (int64_t)(next() % 300); /* a short run */
        int variant = (int)(next() % 4);
        if (variant == 2) { /* two threads: rows enough for two pieces (65536 elements) */
            int64_t inner = 1;
            for (int d = 1; d < rank; d++)
                inner *= shape[d];
            shape[0] = 65536 / inner + 2;
        }
        bcg_dtype t = types[next() % (sizeof types / sizeof types[0])];
        size_t e = (size_t)(next() % (sizeof exprs / sizeof exprs[0]));
        const char *expr = exprs[e];
        static const int signs[] = {-1, -1, 2, -2}; /* (2: elements overlap, as views may) */
        view va = random_view(rank, shape, rank - 1, signs[next() % 4]);
        view vb = next() % 2 ? random_view(rank, shape, rank - 1, -1)
                             : random_view(rank, shape, rank - 1, 1);
        size_t size = bcg_dtype_size(t);
        int64_t c_stride = -1;
        size_t bytes[3] = {va.bytes * size, vb.bytes * size, (size_t)shape[rank - 1] * size};
        char *a = guarded_alloc(&memory, bytes[0], next() % 2);
        void *buffers[2] = {malloc(bytes[1]), malloc(bytes[2])};
        assert_true(buffers[0] && buffers[1]);
        fill(a, bytes[0]);
        for (int i = 0; i < 2; i++)
            fill(buffers[i], bytes[i + 1]);
        /* in place on b: a C-contiguous b, the result of b's dtype */
        bool inplace = variant == 1 && e != 5;
        bcg_operand ops[3] = {{"a", t, rank, va.shape, va.strides},
                              {"b", t, rank, shape, inplace ? NULL : vb.strides},
                              {"c", t, 1, &shape[rank - 1], &c_stride}};
        if (inplace) { /* b C-contiguous: its buffer holds exactly its elements */
            int64_t count = 1;
            for (int d = 0; d < rank; d++)
                count *= shape[d];
            free(buffers[0]);
            bytes[1] = (size_t)count * size;
            buffers[0] = malloc(bytes[1]);
            assert_non_null(buffers[0]);
            fill(buffers[0], bytes[1]);
            vb.first = 0;
        }
        void *in[4] = {a + (size_t)va.first * size, (char *)buffers[0] + (size_t)vb.first * size,
                       (char *)buffers[1] + (size_t)(shape[rank - 1] - 1) * size, buffers[0]};
        int got = check(expr, ops, in, bytes, 3, inplace ? 1 : -1, variant == 2 ? 2 : 1,
                        "_rows(");
        checked++;
        failures += got < 0;
        if (e < 4 || e == 5) {
            single++;
            fused += got == 0;
        }
        if (got < 0) {
            print_error("  %s rank %d variant %d a", bcg_dtype_name(t), rank, variant);
            for (int d = 0; d < rank; d++)
                print_error(" %lld@%lld", (long long)va.shape[d], (long long)va.strides[d]);
            print_error("\n");
        }
        free(buffers[0]);
        free(buffers[1]);
    }
    guarded_free(&memory);
    print_message("# %d kernels over runs read backwards or by 2, %d of %d single operations "
                  "without the _rows call, %ld on two threads\n", checked, fused, single,
                  threaded_runs - threaded_before);
    assert_int_equal(failures, 0);
    assert_true(threaded_runs - threaded_before >= 10);
    if (vex_cpu_ok())
        assert_true(fused * 10 >= single * 9);
}

/* A single operation or comparison over a leaf of stride -1 or +-2 (rows
 * of a reversed or interleaved view, a second operand a row or a value):
 * the fused function where lower.c's strided_leaf_fused says so, the _rows
 * microkernel otherwise, bit for bit either way; every dtype, runs short
 * and long, in place and on two threads.  Asserts the fused share. */
static void test_strided_single_operations(void **state_)
{
    (void)state_;
    static const char *const exprs[] = {"a + b", "a - b", "a * b", "minimum(a, b)",
                                        "a > b", "a + 3", "maximum(1, a)", "a == b"};
    static const bcg_dtype types[] = {BCG_F32, BCG_F64, BCG_I64, BCG_I32, BCG_I16,
                                      BCG_U16, BCG_U8,  BCG_I8};
    static const int64_t strides[] = {-1, -2, 2};
    int checked = 0, failures = 0, by_rows = 0;
    for (int n = 0; n < 80; n++) {
        int64_t rows = 2 + (int64_t)(next() % 200), run = 17 + (int64_t)(next() % 1200);
        int64_t stride = strides[next() % 3];
        bcg_dtype t = types[next() % (sizeof types / sizeof types[0])];
        const char *expr = exprs[next() % (sizeof exprs / sizeof exprs[0])];
        size_t size = bcg_dtype_size(t);
        /* a: rows of RUN at STRIDE, the rows apart by a gap, maybe reversed */
        int64_t span = (run - 1) * (stride < 0 ? -stride : stride) + 1 + (int64_t)(next() % 5);
        int64_t row_stride = next() % 3 == 0 ? -span : span;
        int64_t a_shape[2] = {rows, run}, a_strides[2] = {row_stride, stride};
        int64_t first = (row_stride < 0 ? -row_stride * (rows - 1) : 0) +
                        (stride < 0 ? -stride * (run - 1) : 0);
        int b_rank = next() % 2 ? 1 : 2; /* a row, or the output's shape */
        int64_t b_elements = b_rank == 1 ? run : rows * run;
        size_t bytes[2] = {(size_t)(span * rows) * size, (size_t)b_elements * size};
        void *buffers[2];
        for (int i = 0; i < 2; i++) {
            buffers[i] = malloc(bytes[i]);
            assert_non_null(buffers[i]);
            fill(buffers[i], bytes[i]);
        }
        bcg_operand ops[2] = {{"a", t, 2, a_shape, a_strides},
                              {"b", t, b_rank, b_rank == 1 ? &a_shape[1] : a_shape, NULL}};
        void *in[3] = {(char *)buffers[0] + (size_t)first * size, buffers[1], buffers[1]};
        int variant = (int)(next() % 4);
        bool inplace = variant == 1 && b_rank == 2 && strcmp(expr, "a > b") != 0 &&
                       strcmp(expr, "a == b") != 0;
        int got = check(expr, ops, in, bytes, 2, inplace ? 1 : -1, variant == 2 ? 2 : 1, "_rows(");
        checked++;
        failures += got < 0;
        by_rows += got > 0;
        if (got < 0)
            print_error("  %s rows %lld run %lld strides %lld %lld b rank %d variant %d\n",
                        bcg_dtype_name(t), (long long)rows, (long long)run,
                        (long long)row_stride, (long long)stride, b_rank, variant);
        for (int i = 0; i < 2; i++)
            free(buffers[i]);
    }
    print_message("# %d single operations over strided rows, %d by the _rows microkernel\n",
                  checked, by_rows);
    assert_int_equal(failures, 0);
    assert_true(by_rows * 6 <= checked); /* 10 of 80; 62 before strided_leaf_fused */
}

/* Streaming stores (stream_stores 1) for runs of a single operation or a
 * fused tree over rows that do not merge (a padded input): only when every
 * run is a whole number of cache lines (lower.c runs_whole_lines), and for
 * one contiguous run always. */
static void test_stream_whole_lines(void **state_)
{
    (void)state_;
    static const struct {
        const char *expr;
        bcg_dtype t;
        int64_t run, padded;
        bool stream;
        int64_t out_padded; /* 0: a new contiguous output, else its row stride */
    } cases[] = {
        {"a + 5", BCG_U8, 313, 320, false, 0}, {"a + 5", BCG_U8, 320, 330, true, 0},
        {"a + b", BCG_F32, 300, 301, false, 0}, {"a + b", BCG_F32, 512, 520, true, 0},
        {"a * b + 1", BCG_F32, 1500, 1501, false, 0}, {"a * b + 1", BCG_F32, 2048, 2050, true, 0},
        {"a - b", BCG_I16, 930, 931, false, 0}, {"a - b", BCG_I16, 4096, 4100, true, 0},
        {"a + b", BCG_F64, 3000, 3000, true, 0}, /* (one contiguous run) */
        /* output views: rows of whole lines that are not whole lines apart */
        {"a + b", BCG_F32, 512, 520, false, 520}, {"a + b", BCG_F32, 512, 520, true, 528},
        {"a + 5", BCG_U8, 320, 330, false, 352}, {"a + 5", BCG_U8, 320, 330, true, 384},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t shape[2] = {64, cases[i].run}, strides[2] = {cases[i].padded, 1};
        bcg_operand ops[2] = {{"a", cases[i].t, 2, shape, strides},
                              {"b", cases[i].t, 1, &shape[1], NULL}};
        bcg_options options;
        bcg_options_init(&options);
        options.stream_stores = 1;
        int64_t out_strides[2] = {cases[i].out_padded, 1};
        bcg_output view;
        memset(&view, 0, sizeof view);
        view.dtype = BCG_DTYPE_AUTO;
        view.rank = 2;
        view.strides = out_strides;
        if (cases[i].out_padded)
            options.output = &view;
        bcg_context *ctx = bcg_context_new();
        bcg_kernel *k = NULL;
        bcg_error err;
        assert_non_null(ctx);
        assert_int_equal(bcg_compile(ctx, cases[i].expr, ops, 2, &options, &k, &err), BCG_OK);
        bool streams = strstr(bcg_kernel_source(k), "bcg_mk_fence") != NULL;
        if (streams != cases[i].stream)
            print_error("%s over %s runs of %lld: streams %d\n", cases[i].expr,
                        bcg_dtype_name(cases[i].t), (long long)cases[i].run, streams);
        assert_int_equal(streams, cases[i].stream);
        bcg_context_free(ctx);
    }
}

/* An input read with a long stride (100 elements) along the run: the
 * tiles only where the fused function writes the tree or the tree calls
 * no costly function (lower.c vex_long_stride, vex_fuses_run); a tree
 * calling sin, cos or erf that vex.c does not write keeps the
 * per-element code (the microkernels' tiles measured 1.3-1.9x slower);
 * bit for bit against the reference evaluator either way (but for the
 * polynomials, f32 sin, cos and exp and f64 exp, compared elsewhere). */
static void test_long_stride_costly(void **state_)
{
    (void)state_;
    static const struct {
        const char *expr;
        bcg_dtype t;
        const char *needle; /* in the source when the tiles are taken */
        bool tiles;
    } cases[] = {
        {"sin(a) + b", BCG_F32, "bcg_mk_sin_f32(", false},
        {"cos(a) * b", BCG_F32, "bcg_mk_cos_f32(", false},
        {"erf(a) + b", BCG_F64, "bcg_mk_erf_f64(", false},
        {"exp(a) + b", BCG_F64, VEX_SYMBOL "(", true}, /* fused (emit_exp_f64) */
        {"exp(a) + b", BCG_F32, VEX_SYMBOL "(", true}, /* fused */
        {"a * 3 + b", BCG_F64, VEX_SYMBOL "(", true},  /* fused */
        {"a % 3 + b", BCG_F32, "bcg_mk_", true},       /* no costly function */
    };
    int64_t n = 2000, stride = 100;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bcg_dtype t = cases[i].t;
        size_t size = bcg_dtype_size(t), bytes[2] = {(size_t)((n - 1) * stride + 1) * size,
                                                     (size_t)n * size};
        bcg_operand ops[2] = {{"a", t, 1, &n, &stride}, {"b", t, 1, &n, NULL}};
        void *buffers[2] = {malloc(bytes[0]), malloc(bytes[1])};
        assert_true(buffers[0] && buffers[1]);
        for (int k = 0; k < 2; k++) { /* values in range of every function */
            for (size_t e = 0; e < bytes[k] / size; e++) {
                double v = (double)(next() % 2000) / 500.0 - 2.0;
                if (t == BCG_F32)
                    ((float *)buffers[k])[e] = (float)v;
                else
                    ((double *)buffers[k])[e] = v;
            }
        }
        void *in[3] = {buffers[0], buffers[1], NULL};
        bcg_context *ctx = bcg_context_new();
        bcg_kernel *k = NULL;
        bcg_error err;
        assert_non_null(ctx);
        assert_int_equal(bcg_compile(ctx, cases[i].expr, ops, 2, NULL, &k, &err), BCG_OK);
        int got = strstr(bcg_kernel_source(k), cases[i].needle) != NULL;
        bcg_context_free(ctx);
        /* (f32 sin, cos, exp and f64 exp: polynomials within their ulp
         * bound in the microkernels and vex.c, compared there) */
        if ((t == BCG_F64 && strncmp(cases[i].expr, "exp(", 4) != 0) ||
            strchr(cases[i].expr, '(') == NULL)
            assert_true(check(cases[i].expr, ops, in, bytes, 2, -1, 1, NULL) >= 0);
        if (got != (cases[i].tiles && vex_cpu_ok()))
            print_error("%s over %s of stride %lld: %d (tiles expected: %d)\n", cases[i].expr,
                        bcg_dtype_name(t), (long long)stride, got, (int)cases[i].tiles);
        assert_int_equal(got, cases[i].tiles && vex_cpu_ok());
        free(buffers[0]);
        free(buffers[1]);
    }
}

/* An input read with a long stride along the run that another loop reads
 * contiguously (a transposed view) keeps the gather's transposed path in
 * the 2-D tiles, not the fused rows form's element-by-element loads
 * (lower.c vex_in_place); bit for bit either way. */
static void test_transposed_not_in_place(void **state_)
{
    (void)state_;
    static const bcg_dtype types[] = {BCG_I32, BCG_F32, BCG_I16, BCG_F64};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        bcg_dtype t = types[i];
        size_t size = bcg_dtype_size(t);
        int64_t shape[2] = {181, 109 + 2 * (int64_t)i}, strides[2] = {1, 181}, one = 1;
        size_t bytes[2] = {(size_t)(shape[0] * shape[1]) * size, size};
        void *buffers[2] = {malloc(bytes[0]), malloc(bytes[1])};
        assert_true(buffers[0] && buffers[1]);
        fill(buffers[0], bytes[0]);
        fill(buffers[1], bytes[1]);
        bcg_operand ops[2] = {{"a", t, 2, shape, strides}, {"b", t, 1, &one, NULL}};
        void *in[3] = {buffers[0], buffers[1], NULL};
        char needle[40];
        snprintf(needle, sizeof needle, "bcg_mk_gather_rows_%d", (int)(8 * size));
        int got = check("b + a", ops, in, bytes, 2, -1, 1, needle);
        if (got != 1)
            print_error("b + a over a transposed %s: %s\n", bcg_dtype_name(t),
                        got < 0 ? "differs" : "not gathered");
        assert_int_equal(got, 1);
        free(buffers[0]);
        free(buffers[1]);
    }
}

/* An input read with a long stride along the run and contiguously along
 * a loop that is not the one just outside it (b (15, 1, 18, 5) with
 * strides (1, 75, 75, 15): plan_order_transposed leaves the loop of 15
 * outermost, so the transposed tiles are not taken): the microkernels or
 * the fused function, not the per-element groups (lower.c
 * vex_long_stride: 3x slower); bit for bit either way. */
static void test_transposed_far(void **state_)
{
    (void)state_;
    static const bcg_dtype types[] = {BCG_I16, BCG_I32, BCG_F32, BCG_F64, BCG_U8};
    static const char *const exprs[] = {"(a) * (maximum(b, b))", "a + b * 3"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        for (size_t e = 0; e < 2; e++) {
            bcg_dtype t = types[i];
            size_t size = bcg_dtype_size(t);
            int64_t ashape[4] = {15, 26, 1, 1}, astrides[4] = {26, 1, 1, 1};
            int64_t bshape[4] = {15, 1, 18, 5}, bstrides[4] = {1, 75, 75, 15};
            size_t bytes[2] = {15 * 26 * size, 15 * 90 * size};
            void *buffers[2] = {malloc(bytes[0]), malloc(bytes[1])};
            assert_true(buffers[0] && buffers[1]);
            fill(buffers[0], bytes[0]);
            fill(buffers[1], bytes[1]);
            bcg_operand ops[2] = {{"a", t, 4, ashape, astrides}, {"b", t, 4, bshape, bstrides}};
            void *in[3] = {buffers[0], buffers[1], NULL};
            int micro = check(exprs[e], ops, in, bytes, 2, -1, 1, "bcg_mk_");
            int fused = check(exprs[e], ops, in, bytes, 2, -1, 1, VEX_SYMBOL "(");
            if (micro < 0 || fused < 0 || (vex_cpu_ok() && micro + fused == 0))
                print_error("%s over %s: %s\n", exprs[e], bcg_dtype_name(t),
                            micro < 0 || fused < 0 ? "differs" : "per-element groups");
            assert_true(micro >= 0 && fused >= 0);
            if (vex_cpu_ok())
                assert_true(micro + fused > 0);
            free(buffers[0]);
            free(buffers[1]);
        }
    }
}

/* A random tree of DEPTH over a, b and c into OUT (a few casts, 8-bit
 * products, selects and literals: the operations reversed leaves meet in
 * the fused code). */
static void reversed_tree(char *out, size_t cap, int depth)
{
    static const char *const leaves[] = {"a", "b", "a", "c", "2", "a"};
    static const char *const casts[] = {"i8", "u8", "i16", "u16", "i32", "f32", "f64", "i64"};
    if (depth == 0) {
        snprintf(out, cap, "%s", leaves[next() % 6]);
        return;
    }
    char x[512], y[512];
    reversed_tree(x, sizeof x, depth - 1);
    reversed_tree(y, sizeof y, (int)(next() % (uint64_t)depth));
    int written;
    switch (next() % 9) {
    case 0: written = snprintf(out, cap, "(%s) * (%s)", x, y); break;
    case 1: written = snprintf(out, cap, "%s + %s", x, y); break;
    case 2: written = snprintf(out, cap, "%s - (%s)", x, y); break;
    case 3: written = snprintf(out, cap, "minimum(%s, %s)", x, y); break;
    case 4: written = snprintf(out, cap, "where(%s > %s, %s, %s)", x, y, x, y); break;
    case 5: written = snprintf(out, cap, "%s(%s)", casts[next() % 8], x); break;
    case 6: written = snprintf(out, cap, "abs(%s)", x); break;
    case 7: written = snprintf(out, cap, "(%s) * (%s)", x, x); break;
    default: written = snprintf(out, cap, "maximum(%s, %s)", x, y); break;
    }
    if (written < 0 || (size_t)written >= cap) /* (too long: a leaf) */
        snprintf(out, cap, "a");
}

/* Random trees over leaves read backwards along the run (a always, b
 * half the time, c a per-row value or one value), every dtype, runs short
 * and long, one run or rows apart by random gaps, and copies of a
 * reversed leaf (a + 0 folded: vex.c reversed_copy, lower.c
 * reversed_rows_copy) and 8-bit products (vex.c byte_product): bit for
 * bit against the reference evaluator, a and b against a page that
 * faults on either side.  Asserts the share through the fused function
 * and that copies and 8-bit products take it. */
static void test_reversed_trees(void **state_)
{
    (void)state_;
    static const bcg_dtype types[] = {BCG_I8,  BCG_I16, BCG_I32, BCG_I64, BCG_U8,
                                      BCG_U16, BCG_U32, BCG_U64, BCG_F32, BCG_F64};
    static guarded memory[2];
    int checked = 0, failures = 0, fused = 0;
    int copies = 0, copies_fused = 0, products = 0, products_fused = 0;
    for (int n = 0; n < 260; n++) {
        int rank = next() % 3 ? 2 : 1;
        int64_t shape[2];
        shape[rank - 1] = 1 + (int64_t)(next() % (next() % 4 ? 200 : 3000));
        if (rank == 2)
            shape[0] = 1 + (int64_t)(next() % 40);
        bcg_dtype t = types[next() % (sizeof types / sizeof types[0])];
        bcg_dtype tb = next() % 3 ? t : types[next() % (sizeof types / sizeof types[0])];
        char expr[512];
        int kind = (int)(next() % 8);
        if (kind < 2) { /* copies and products: runs of two vectors or more, 2048+ elements */
            shape[rank - 1] = rank == 2 ? 64 + (int64_t)(next() % 500) : 2048 + (int64_t)(next() % 4000);
            if (rank == 2)
                shape[0] = 2048 / shape[1] + 1 + (int64_t)(next() % 8);
        }
        bool copy = kind == 0 && dtype_kind_of(t) != KIND_FLOAT;
        bool product = kind == 1 && bcg_dtype_size(t) == 1;
        if (copy)
            snprintf(expr, sizeof expr, "a + 0");
        else if (product)
            snprintf(expr, sizeof expr, next() % 2 ? "(a) * (a)" : "(a) * (b) + c");
        else
            reversed_tree(expr, sizeof expr, 1 + (int)(next() % 3));
        view va = random_view(rank, shape, rank - 1, -1);
        view vb = random_view(rank, shape, rank - 1, next() % 2 ? -1 : 1);
        int64_t c_shape[2] = {rank == 2 && next() % 2 ? shape[0] : 1, 1};
        size_t sa = bcg_dtype_size(t), sb = bcg_dtype_size(tb);
        size_t bytes[3] = {va.bytes * sa, vb.bytes * sb, (size_t)c_shape[0] * sa};
        char *a = guarded_alloc(&memory[0], bytes[0], next() % 2);
        char *b = guarded_alloc(&memory[1], bytes[1], next() % 2);
        char *c = malloc(bytes[2]);
        assert_non_null(c);
        fill(a, bytes[0]);
        fill(b, bytes[1]);
        fill(c, bytes[2]);
        bcg_operand ops[3] = {{"a", t, rank, va.shape, va.strides},
                              {"b", tb, rank, vb.shape, vb.strides},
                              {"c", t, rank, c_shape, NULL}};
        void *in[4] = {a + (size_t)va.first * sa, b + (size_t)vb.first * sb, c, NULL};
        int got = check(expr, ops, in, bytes, 3, -1, 1, "vex_in");
        checked++;
        failures += got < 0;
        fused += got > 0;
        /* (one run alone, rows that merge into one included, keeps the microkernel) */
        bool rows = rank == 2 && va.strides[0] != -shape[1];
        copies += copy && rows;
        copies_fused += copy && rows && got > 0;
        products += product;
        products_fused += product && got > 0;
        if (got < 0) {
            print_error("  %s a %s b %s rank %d", expr, bcg_dtype_name(t), bcg_dtype_name(tb),
                        rank);
            for (int d = 0; d < rank; d++)
                print_error(" %lld@%lld,%lld", (long long)shape[d], (long long)va.strides[d],
                            (long long)vb.strides[d]);
            print_error("\n");
        }
        free(c);
    }
    guarded_free(&memory[0]);
    guarded_free(&memory[1]);
    print_message("# %d trees over reversed leaves, %d through the fused function; "
                  "copies of rows %d of %d, 8-bit products %d of %d\n",
                  checked, fused, copies_fused, copies, products_fused, products);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok()) {
        assert_true(fused * 5 >= checked * 2); /* 128 of 260 */
        assert_true(copies_fused * 10 >= copies * 9 && copies >= 8); /* 10 of 10 */
        assert_true(products_fused * 10 >= products * 8 && products >= 5); /* 7 of 7 */
    }
}

/* Whether bcg_compile's choices (compile_choose_jit) reorder the plan of
 * EXPR over OPS (COUNT) from the output's order. */
static bool plan_reordered(const char *expr, const bcg_operand *ops, int count)
{
    bcg_options options;
    bcg_options_init(&options);
    bcg_error err;
    arena *ar = arena_new();
    compile *c = ar ? arena_alloc(ar, sizeof *c) : NULL;
    assert_non_null(c);
    memset(c, 0, sizeof *c);
    c->arena = ar;
    c->err = &err;
    assert_int_equal(compile_front(c, expr, ops, count, &options), BCG_OK);
    int order[BCG_MAX_RANK];
    memcpy(order, c->plan->order, sizeof order);
    compile_choose_jit(c, 0);
    bool moved = memcmp(order, c->plan->order, sizeof order) != 0;
    arena_free(ar);
    return moved;
}

/* An input contiguous along no dimension but read with a short stride
 * (2 to 8 elements, either sign) along one that is not the run, a long
 * one along the run (a spaced transposed view: lower.c spaced_along,
 * plan.c plan_order_spaced), against a page that faults either side; b
 * C-contiguous of the same shape, c a row.  Every dtype, shapes of 2 and
 * 3 dimensions, runs short and long, in place on b and on two threads,
 * bit for bit against the reference evaluator.  Asserts the shares that
 * take the gathered 2-D tiles and, of 3 dimensions with the spaced one
 * outermost and many lines between its trips, the moved loop. */
static void test_spaced_layouts(void **state_)
{
    (void)state_;
    static const char *const exprs[] = {"a + b", "where(7 > a, 7, a)", "minimum(a, c) * b - a",
                                        "sqrt(abs(f32(a))) * f32(b)",
                                        "where(a > c, a - b, c + b)"};
    static const bcg_dtype types[] = {BCG_I8,  BCG_I16, BCG_I32, BCG_I64, BCG_U8,
                                      BCG_U16, BCG_U32, BCG_U64, BCG_F32, BCG_F64};
    static guarded memory;
    int checked = 0, failures = 0, eligible = 0, gathered = 0, far = 0, moved = 0;
    long threaded_before = threaded_runs;
    for (int n = 0; n < 40; n++) {
        int rank = 2 + (int)(next() % 2);
        int64_t shape[4];
        shape[0] = 4 + (int64_t)(next() % 32);
        if (rank == 3)
            shape[1] = 2 + (int64_t)(next() % 12);
        shape[rank - 1] = next() % 2 ? 16 + (int64_t)(next() % 300)   /* a short run */
                                     : 513 + (int64_t)(next() % 1200); /* a long one */
        int variant = (int)(next() % 4);
        if (variant == 2) { /* two threads: rows enough for two pieces (65536 elements) */
            int64_t inner = 1;
            for (int d = 1; d < rank; d++)
                inner *= shape[d];
            shape[0] = 65536 / inner + 2;
        }
        bcg_dtype t = types[next() % (sizeof types / sizeof types[0])];
        size_t e = (size_t)(next() % (sizeof exprs / sizeof exprs[0]));
        const char *expr = exprs[e];
        int spaced = rank == 3 && next() % 3 ? 0 : (int)(next() % (uint64_t)(rank - 1));
        int64_t apart = 2 + (int64_t)(next() % 7);
        view va = random_view(rank, shape, spaced, next() % 4 == 0 ? -1 : 1);
        for (int d = 0; d < rank; d++) /* every element APART from the next */
            va.strides[d] *= apart;
        va.first *= apart;
        va.bytes = (va.bytes - 1) * (size_t)apart + 1;
        size_t size = bcg_dtype_size(t);
        int64_t count = 1;
        for (int d = 0; d < rank; d++)
            count *= shape[d];
        size_t bytes[3] = {va.bytes * size, (size_t)count * size, (size_t)shape[rank - 1] * size};
        char *a = guarded_alloc(&memory, bytes[0], next() % 2);
        void *buffers[2] = {malloc(bytes[1]), malloc(bytes[2])};
        assert_true(buffers[0] && buffers[1]);
        fill(a, bytes[0]);
        for (int i = 0; i < 2; i++)
            fill(buffers[i], bytes[i + 1]);
        bcg_operand ops[3] = {{"a", t, rank, va.shape, va.strides},
                              {"b", t, rank, shape, NULL},
                              {"c", t, 1, &shape[rank - 1], NULL}};
        void *in[4] = {a + (size_t)va.first * size, buffers[0], buffers[1], buffers[0]};
        /* in place on b: only where the result is b's dtype */
        bool inplace = variant == 1 && e != 3;
        int got = check(expr, ops, in, bytes, 3, inplace ? 1 : -1, variant == 2 ? 2 : 1,
                        "bcg_mk_gather_rows");
        checked++;
        failures += got < 0;
        /* the rule's cases: two rows to a line, a line or more along the run
         * and more than MAX_TILE_STRIDE (8) elements */
        int64_t across = va.strides[rank - 1] < 0 ? -va.strides[rank - 1] : va.strides[rank - 1];
        bool covered = 2 * apart * (int64_t)size <= 64 && across * (int64_t)size >= 64 && across > 8;
        eligible += covered;
        gathered += covered && got > 0;
        /* the spaced dimension outermost, more than 32 KB of lines inside */
        if (covered && rank == 3 && spaced == 0 && shape[1] * shape[2] > 512) {
            far++;
            moved += plan_reordered(expr, ops, 3);
        }
        if (got < 0) {
            print_error("  %s rank %d variant %d a", bcg_dtype_name(t), rank, variant);
            for (int d = 0; d < rank; d++)
                print_error(" %lld@%lld", (long long)va.shape[d], (long long)va.strides[d]);
            print_error("\n");
        }
        free(buffers[0]);
        free(buffers[1]);
    }
    guarded_free(&memory);
    print_message("# %d kernels over spaced transposed layouts, %d of %d covered gathered in 2-D "
                  "tiles, %d of %d with the spaced loop moved in, %ld on two threads\n",
                  checked, gathered, eligible, moved, far, threaded_runs - threaded_before);
    assert_int_equal(failures, 0);
    assert_true(threaded_runs - threaded_before >= 5);
    /* (16 of 33 gathered, 13 of 16 moved; main before the spaced rules: 4
     * gathered, none moved) */
    assert_true(gathered * 3 >= eligible);
    assert_true(far >= 5 && moved * 10 >= far * 8);
}

/* The gather's transposed path (bcg_mk_gather_rows_BITS, ro 1; 8 and
 * 16-bit elements in 16 x 16 and 8 x 8 register blocks; with AVX2 16-bit
 * two 8 x 8 blocks at once, 32-bit 8 x 8, 64-bit 4 x 4, the rows left
 * over in SSE2 blocks, the rest by element) against dst[r * run + j] =
 * src[r + j * si] for random rows, runs and strides either way, the
 * source's first and last elements against a page that faults. */
void bcg_mk_gather_rows_8(void *, const void *, long, long, long, long);
void bcg_mk_gather_rows_16(void *, const void *, long, long, long, long);
void bcg_mk_gather_rows_32(void *, const void *, long, long, long, long);
void bcg_mk_gather_rows_64(void *, const void *, long, long, long, long);

static void test_transposed_gather_blocks(void **state_)
{
    (void)state_;
    static void (*const gather[4])(void *, const void *, long, long, long, long) = {
        bcg_mk_gather_rows_8, bcg_mk_gather_rows_16, bcg_mk_gather_rows_32,
        bcg_mk_gather_rows_64};
    static guarded memory;
    int checked = 0, blocks = 0, partial = 0, wide = 0;
    for (int n = 0; n < 1500; n++) {
        int e = (int)(next() % 4);
        size_t size = (size_t)1 << e;
        /* (half of them a short contiguous dimension, 2 to 17 rows) */
        long rows = 2 + (long)(next() % (next() % 2 ? 16 : 70)), run = 1 + (long)(next() % 60);
        long si = rows + (long)(next() % 200); /* the rows of a column, then a gap */
        if (next() % 2)
            si = -si;
        long reach = (run - 1) * (si < 0 ? -si : si) + rows; /* elements spanned */
        char *base = guarded_alloc(&memory, (size_t)reach * size, next() % 2);
        fill(base, (size_t)reach * size);
        const char *src = base + (si < 0 ? (size_t)((run - 1) * -si) * size : 0);
        char *got = malloc((size_t)(rows * run) * size), *want = malloc((size_t)(rows * run) * size);
        assert_true(got && want);
        for (long r = 0; r < rows; r++)
            for (long j = 0; j < run; j++)
                memcpy(want + (size_t)(r * run + j) * size, src + (r + j * si) * (long)size, size);
        gather[e](got, src, rows, run, 1, si);
        if (memcmp(got, want, (size_t)(rows * run) * size) != 0)
            print_error("gather_rows_%d rows %ld run %ld si %ld differs\n", (int)(8 * size), rows,
                        run, si);
        assert_memory_equal(got, want, (size_t)(rows * run) * size);
        checked++;
        blocks += size <= 2 && rows >= 16 / (long)size && run >= 16 / (long)size;
        /* the AVX2 blocks: 16 rows by 8 columns of 16-bit, 8 by 8 32-bit,
         * 4 by 4 64-bit, with rows left over when not a multiple */
        long wide_rows = size == 2 ? 16 : size == 4 ? 8 : 4;
        long wide_columns = size == 2 ? 8 : wide_rows;
        wide += size >= 2 && rows >= wide_rows && run >= wide_columns;
        /* a last block of fewer rows through the registers (8, 16 and
         * 32-bit: rows short of 16, 8, 4 or a multiple), when one of its
         * columns is not the run's last */
        long block = size <= 2 ? 16 / (long)size : 4, left = rows % block;
        partial += size <= 4 && (size == 4 ? left >= 2 : left * 4 >= block) && run > block;
        free(got);
        free(want);
    }
    guarded_free(&memory);
    print_message("# %d transposed gathers, %d with 8/16-bit register blocks, %d whose last "
                  "block of fewer rows may go through them, %d with AVX2 blocks of 16 to 64 "
                  "bits\n",
                  checked, blocks, partial, wide);
    assert_true(blocks * 5 >= checked); /* 479 of 1500 */
    assert_true(wide * 4 >= checked);
    assert_true(partial * 5 >= checked);
}

/* The _rows microkernels' runs that are contiguous or one value each
 * (runtime/microkernels.c ROWS_INLINE, loops of their own) against a call
 * of the operation's own microkernel per run, which they were before: the
 * same bits for random rows, runs, row strides either way (0: a repeated
 * run), every combination of strides 0 and 1 along the runs, a and b
 * against a page that faults on either side; a binary operation and a
 * comparison of several dtypes, floats with NaN, infinities and -0.0 from
 * the random bytes. */
typedef void runs_function(void *, long, const void *, long, long, const void *, long, long,
                           long, long, long);
typedef void one_run_function(void *, const void *, long, const void *, long, long);
runs_function bcg_mk_minimum_i32_rows, bcg_mk_add_f32_rows, bcg_mk_lt_u8_rows,
    bcg_mk_sub_i16_rows, bcg_mk_maximum_f64_rows, bcg_mk_gt_f64_rows;
one_run_function bcg_mk_minimum_i32, bcg_mk_add_f32, bcg_mk_lt_u8, bcg_mk_sub_i16, bcg_mk_maximum_f64,
    bcg_mk_gt_f64;

static void test_rows_inline(void **state_)
{
    (void)state_;
    static const struct {
        runs_function *rows;
        one_run_function *run;
        size_t size, out_size;
    } kernels[] = {{bcg_mk_minimum_i32_rows, bcg_mk_minimum_i32, 4, 4},
                   {bcg_mk_add_f32_rows, bcg_mk_add_f32, 4, 4},
                   {bcg_mk_lt_u8_rows, bcg_mk_lt_u8, 1, 1},
                   {bcg_mk_sub_i16_rows, bcg_mk_sub_i16, 2, 2},
                   {bcg_mk_maximum_f64_rows, bcg_mk_maximum_f64, 8, 8},
                   {bcg_mk_gt_f64_rows, bcg_mk_gt_f64, 8, 1}};
    static guarded memory[2];
    int checked = 0;
    for (int n_case = 0; n_case < 600; n_case++) {
        int e = (int)(next() % (sizeof kernels / sizeof kernels[0]));
        size_t size = kernels[e].size, out_size = kernels[e].out_size;
        long rows = 1 + (long)(next() % 20), n = 1 + (long)(next() % 300);
        long s[2], r[2], low[2], high[2];
        int both = (int)(next() % 3); /* 0: a contiguous, b one value; 1: the reverse; 2: both runs */
        s[0] = both != 1;
        s[1] = both != 0;
        for (int k = 0; k < 2; k++) {
            long gap = (long)(next() % 5), span = s[k] ? n : 1;
            switch (next() % 4) {
            case 0: r[k] = 0; break;
            case 1: r[k] = span; break;
            case 2: r[k] = span + gap; break;
            default: r[k] = -(span + gap); break;
            }
            long last_row = (rows - 1) * r[k];
            low[k] = last_row < 0 ? last_row : 0;
            high[k] = (last_row > 0 ? last_row : 0) + span - 1;
        }
        long ro = n + (long)(next() % 3);
        char *in[2];
        for (int k = 0; k < 2; k++) {
            size_t bytes = (size_t)(high[k] - low[k] + 1) * size;
            char *base = guarded_alloc(&memory[k], bytes, next() % 2);
            fill(base, bytes);
            in[k] = base - low[k] * (long)size;
        }
        size_t out_bytes = (size_t)((rows - 1) * ro + n) * out_size;
        char *got = malloc(out_bytes), *want = malloc(out_bytes);
        assert_true(got && want);
        memset(got, 0x5a, out_bytes);
        memset(want, 0x5a, out_bytes);
        kernels[e].rows(got, ro, in[0], s[0], r[0], in[1], s[1], r[1], n, rows, 0);
        for (long row = 0; row < rows; row++)
            kernels[e].run(want + (size_t)(row * ro) * out_size, in[0] + row * r[0] * (long)size,
                           s[0], in[1] + row * r[1] * (long)size, s[1], n);
        /* which NaN an operation on two NaNs gives is not specified
         * (docs/semantics.md): the _rows kernel may take the other
         * operand's (add_f32 over two random-byte NaNs, a scratch seed) */
        if (kernels[e].rows == bcg_mk_add_f32_rows || kernels[e].rows == bcg_mk_maximum_f64_rows)
            for (size_t i = 0; i < out_bytes / out_size; i++) {
                char *g = got + i * out_size, *w = want + i * out_size;
                bool nans = out_size == 4 ? isnan(*(float *)g) && isnan(*(float *)w)
                                          : isnan(*(double *)g) && isnan(*(double *)w);
                if (nans)
                    memcpy(g, w, out_size);
            }
        if (memcmp(got, want, out_bytes) != 0)
            print_error("_rows kernel %d rows %ld n %ld strides %ld %ld rows apart %ld %ld\n", e,
                        rows, n, s[0], s[1], r[0], r[1]);
        assert_memory_equal(got, want, out_bytes);
        checked++;
        free(got);
        free(want);
    }
    guarded_free(&memory[0]);
    guarded_free(&memory[1]);
    print_message("# %d _rows calls of contiguous or one-value runs\n", checked);
}

/* The rows of the 2-D tiles in the kernel of EXPR over OPS (COUNT), from
 * the source's tile loop, 0 for none. */
static long tile_rows_of(const char *expr, const bcg_operand *ops, int count)
{
    bcg_context *ctx = bcg_context_new();
    bcg_kernel *k = NULL;
    bcg_error err;
    long rows = 0;
    assert_non_null(ctx);
    if (bcg_compile(ctx, expr, ops, count, NULL, &k, &err) == BCG_OK) {
        const char *at = strstr(bcg_kernel_source(k), "row_start += ");
        if (at)
            rows = strtol(at + strlen("row_start += "), NULL, 10);
    }
    bcg_context_free(ctx);
    return rows;
}

/* Random trees over a transposed or spaced input a (contiguous, or
 * reversed, along the loop just outside the run) with runs short enough
 * for several to a 2-D tile, b C-contiguous or a row, c a per-row value
 * or one value, every dtype, a and b against a page that faults on either
 * side: bit for bit against the reference evaluator.  Asserts the share
 * whose tiles take a line's worth of rows of a (lower.c
 * short_transposed_rows) rather than TILE_ELEMENTS / run. */
static void test_transposed_short_runs(void **state_)
{
    (void)state_;
    static const bcg_dtype types[] = {BCG_I8,  BCG_I16, BCG_I32, BCG_I64, BCG_U8,
                                      BCG_U16, BCG_U32, BCG_U64, BCG_F32, BCG_F64};
    static guarded memory[2];
    int checked = 0, failures = 0, line_rows = 0;
    for (int n = 0; n < 160; n++) {
        int rank = next() % 3 ? 2 : 3;
        int64_t shape[3];
        shape[rank - 1] = 17 + (int64_t)(next() % 480); /* 2 * run <= TILE_ELEMENTS mostly */
        for (int d = 0; d < rank - 1; d++)
            shape[d] = 2 + (int64_t)(next() % (rank == 2 ? 150 : 12));
        bcg_dtype t = types[next() % (sizeof types / sizeof types[0])];
        bcg_dtype tb = next() % 3 ? t : types[next() % (sizeof types / sizeof types[0])];
        char expr[512];
        if (next() % 3 == 0)
            snprintf(expr, sizeof expr, next() % 2 ? "5 - a" : "(2) * (a) + b");
        else
            reversed_tree(expr, sizeof expr, 1 + (int)(next() % 3));
        view va = random_view(rank, shape, rank - 2, next() % 4 == 0 ? -1 : 1);
        if (next() % 4 == 0) { /* spaced: the outer loop 2 or 3 elements apart */
            int64_t along = 2 + (int64_t)(next() % 2);
            va.strides[rank - 2] = along;
            va.strides[rank - 1] = along * shape[rank - 2] + 1;
            for (int d = 0; d < rank - 2; d++)
                va.strides[d] = va.strides[rank - 1] * shape[rank - 1];
            va.first = 0;
            va.bytes = 1;
            for (int d = 0; d < rank; d++)
                va.bytes += (size_t)(va.strides[d] * (shape[d] - 1));
        }
        bool row = next() % 3 == 0;
        int64_t b_shape[3], c_shape[3] = {1, 1, 1};
        memcpy(b_shape, shape, sizeof b_shape);
        for (int d = 0; row && d < rank - 1; d++)
            b_shape[d] = 1;
        view vb = random_view(rank, b_shape, rank - 1, 1);
        if (next() % 2)
            c_shape[rank - 2] = shape[rank - 2];
        size_t sa = bcg_dtype_size(t), sb = bcg_dtype_size(tb);
        size_t bytes[3] = {va.bytes * sa, vb.bytes * sb, (size_t)c_shape[rank - 2] * sa};
        char *a = guarded_alloc(&memory[0], bytes[0], next() % 2);
        char *b = guarded_alloc(&memory[1], bytes[1], next() % 2);
        char *c = malloc(bytes[2]);
        assert_non_null(c);
        fill(a, bytes[0]);
        fill(b, bytes[1]);
        fill(c, bytes[2]);
        bcg_operand ops[3] = {{"a", t, rank, va.shape, va.strides},
                              {"b", tb, rank, vb.shape, vb.strides},
                              {"c", t, rank, c_shape, NULL}};
        void *in[4] = {a + (size_t)va.first * sa, b + (size_t)vb.first * sb, c, NULL};
        int got = check(expr, ops, in, bytes, 3, -1, 1, NULL);
        long rows = tile_rows_of(expr, ops, 3);
        checked++;
        failures += got < 0;
        line_rows += rows > 1024 / shape[rank - 1];
        if (got < 0) {
            print_error("  %s a %s b %s rank %d", expr, bcg_dtype_name(t), bcg_dtype_name(tb),
                        rank);
            for (int d = 0; d < rank; d++)
                print_error(" %lld@%lld,%lld", (long long)shape[d], (long long)va.strides[d],
                            (long long)vb.strides[d]);
            print_error("\n");
        }
        free(c);
    }
    guarded_free(&memory[0]);
    guarded_free(&memory[1]);
    print_message("# %d trees over transposed short runs, %d with a line's worth of rows a "
                  "tile\n", checked, line_rows);
    assert_int_equal(failures, 0);
    assert_true(line_rows * 3 >= checked); /* 71 of 160 (22 before) */
}

/* Long runs over a transposed input whose contiguous dimension is short
 * (2 to 15 rows: b of a > b, u8 (12, 8473) strides (1, 12)), every dtype,
 * rows contiguous or reversed, a gap between columns now and then, an
 * outer loop sometimes; b C-contiguous or a row, c a per-row value or one
 * value; a and b against a page that faults on either side, in place on b
 * or on two threads now and then: bit for bit against the reference
 * evaluator.  Asserts the share of 8 and 16-bit inputs read with a stride
 * over 8 along the run (not the 1-D tiles' strided reads) whose 2-D tiles
 * gather it (lower.c transposed_tile_rows, narrow
 * columns), where the long runs of 8 and 16-bit elements kept the
 * per-element code before unless a tile of whole runs held 4 rows. */
static void test_transposed_short_dimension(void **state_)
{
    (void)state_;
    static const bcg_dtype types[] = {BCG_I8,  BCG_U8,  BCG_I16, BCG_U16, BCG_I32,
                                      BCG_U32, BCG_I64, BCG_U64, BCG_F32, BCG_F64};
    static const char *const fixed[] = {"a + b", "minimum(a, c) * b - a",
                                        "where(a > b, a - b, c + b)", "i32((a > b) * (a))",
                                        "f64(a) * b"};
    static guarded memory[2];
    int checked = 0, failures = 0, narrow = 0, narrow_rows = 0;
    state = seeded_stream(0x5bd1e9955bd1e995ull); /* (its own cases, whatever ran before) */
    for (int n = 0; n < 64; n++) {
        int rank = next() % 4 ? 2 : 3;
        int64_t shape[3];
        shape[rank - 1] = 600 + (int64_t)(next() % 9000); /* a long run */
        shape[rank - 2] = 2 + (int64_t)(next() % 14);     /* the short contiguous dimension */
        if (rank == 3)
            shape[0] = 2 + (int64_t)(next() % 3);
        /* (8 and 16-bit elements half the time: the narrow columns) */
        bcg_dtype t = types[next() % (next() % 2 ? 4 : sizeof types / sizeof types[0])];
        bcg_dtype tb = next() % 3 ? t : types[next() % (sizeof types / sizeof types[0])];
        char expr[512];
        int pick = (int)(next() % 7);
        if (pick < 5)
            snprintf(expr, sizeof expr, "%s", fixed[pick]);
        else
            reversed_tree(expr, sizeof expr, 1 + (int)(next() % 3));
        view va = random_view(rank, shape, rank - 2, next() % 4 == 0 ? -1 : 1);
        bool row = next() % 3 == 0;
        int64_t b_shape[3], c_shape[3] = {1, 1, 1};
        memcpy(b_shape, shape, sizeof b_shape);
        for (int d = 0; row && d < rank - 1; d++)
            b_shape[d] = 1;
        int64_t b_elements = 1;
        for (int d = 0; d < rank; d++)
            b_elements *= b_shape[d];
        if (next() % 2)
            c_shape[rank - 2] = shape[rank - 2];
        size_t sa = bcg_dtype_size(t), sb = bcg_dtype_size(tb);
        size_t bytes[3] = {va.bytes * sa, (size_t)b_elements * sb, (size_t)c_shape[rank - 2] * sa};
        char *a = guarded_alloc(&memory[0], bytes[0], next() % 2);
        char *b = guarded_alloc(&memory[1], bytes[1], next() % 2);
        char *c = malloc(bytes[2]);
        assert_non_null(c);
        fill(a, bytes[0]);
        fill(b, bytes[1]);
        fill(c, bytes[2]);
        bcg_operand ops[3] = {{"a", t, rank, va.shape, va.strides},
                              {"b", tb, rank, b_shape, NULL},
                              {"c", t, rank, c_shape, NULL}};
        void *in[4] = {a + (size_t)va.first * sa, b, c, b};
        int variant = (int)(next() % 4);
        /* in place on b: a whole b of the result's dtype (the fixed trees over one dtype) */
        bool inplace = variant == 1 && !row && tb == t && pick < 3;
        int got = check(expr, ops, in, bytes, 3, inplace ? 1 : -1, variant == 2 ? 2 : 1,
                        "bcg_mk_gather_rows_");
        checked++;
        failures += got < 0;
        int64_t along = va.strides[rank - 1] < 0 ? -va.strides[rank - 1] : va.strides[rank - 1];
        if (sa <= 2 && along > 8 /* MAX_TILE_STRIDE */ && pick < 5) {
            narrow++;
            narrow_rows += got > 0;
        }
        if (got < 0) {
            print_error("  %s a %s b %s variant %d", expr, bcg_dtype_name(t), bcg_dtype_name(tb),
                        variant);
            for (int d = 0; d < rank; d++)
                print_error(" %lld@%lld", (long long)shape[d], (long long)va.strides[d]);
            print_error("\n");
        }
        free(c);
    }
    guarded_free(&memory[0]);
    guarded_free(&memory[1]);
    print_message("# %d trees over transposed inputs of 2 to 15 rows, %d of %d 8/16-bit ones "
                  "gathered in 2-D tiles\n",
                  checked, narrow_rows, narrow);
    assert_int_equal(failures, 0);
    assert_true(narrow >= 6 && narrow_rows * 10 >= narrow * 9); /* 21 of 21; main 10 */
}

/* A transposed or spaced input copied whole (`a`, or a tree folded to it:
 * maximum(a, a)), every dtype, rows of 2 to 40 contiguous or reversed
 * along the loop outside the run, runs of 17 to 3000, an outer dimension
 * sometimes, against a page that faults on either side, on two threads now
 * and then: bit for bit against the reference evaluator.  Asserts the share
 * whose 2-D tiles gather it and copy the tile out (lower.c tiles2d_chosen,
 * a transposed operand as the root), which took the cache-blocked
 * per-element copy before. */
static void test_transposed_copy(void **state_)
{
    (void)state_;
    static const bcg_dtype types[] = {BCG_I8,  BCG_U8,  BCG_I16, BCG_U16, BCG_I32,
                                      BCG_U32, BCG_I64, BCG_U64, BCG_F32, BCG_F64};
    static const char *const exprs[] = {"a", "maximum(a, a)", "minimum(a, a)"};
    static guarded memory;
    int checked = 0, failures = 0, gathered = 0;
    state = seeded_stream(0x94d049bb133111ebull); /* (its own cases, whatever ran before) */
    for (int n = 0; n < 48; n++) {
        int rank = next() % 4 ? 2 : 3;
        int64_t shape[3];
        shape[rank - 1] = 17 + (int64_t)(next() % (next() % 2 ? 300 : 3000));
        shape[rank - 2] = 2 + (int64_t)(next() % 39);
        if (rank == 3)
            shape[0] = 2 + (int64_t)(next() % 3);
        bcg_dtype t = types[next() % (sizeof types / sizeof types[0])];
        const char *expr = exprs[next() % (sizeof exprs / sizeof exprs[0])];
        view va = random_view(rank, shape, rank - 2, next() % 4 == 0 ? -1 : 1);
        size_t size = bcg_dtype_size(t);
        size_t bytes[1] = {va.bytes * size};
        char *a = guarded_alloc(&memory, bytes[0], next() % 2);
        fill(a, bytes[0]);
        bcg_operand ops[1] = {{"a", t, rank, va.shape, va.strides}};
        void *in[2] = {a + (size_t)va.first * size, NULL};
        int got = check(expr, ops, in, bytes, 1, -1, next() % 3 == 0 ? 2 : 1,
                        "bcg_mk_gather_rows_");
        checked++;
        failures += got < 0;
        gathered += got > 0;
        if (got < 0) {
            print_error("  %s %s", expr, bcg_dtype_name(t));
            for (int d = 0; d < rank; d++)
                print_error(" %lld@%lld", (long long)shape[d], (long long)va.strides[d]);
            print_error("\n");
        }
    }
    guarded_free(&memory);
    print_message("# %d copies of transposed inputs, %d gathered in 2-D tiles\n", checked,
                  gathered);
    assert_int_equal(failures, 0);
    assert_true(gathered * 5 >= checked * 2); /* 26 of 48; main 0 */
}

/* The dtype of EXPR's result over OPS (COUNT), BCG_BOOL when it does not
 * compile. */
static bcg_dtype result_dtype(const char *expr, const bcg_operand *ops, int count)
{
    bcg_context *ctx = bcg_context_new();
    bcg_kernel *k = NULL;
    bcg_error err;
    bcg_dtype t = BCG_BOOL;
    assert_non_null(ctx);
    if (bcg_compile(ctx, expr, ops, count, NULL, &k, &err) == BCG_OK)
        t = bcg_kernel_dtype(k);
    bcg_context_free(ctx);
    return t;
}

/* Trees over an input read across its memory order (contiguous, or
 * reversed, along a dimension other than the last: transposed), ranks 2
 * to 5, every dtype, with casts, b of another dtype C-contiguous or a
 * row, tiles of rows that are and are not a multiple of the gather's AVX2
 * register blocks (16-bit 16 x 8, 32-bit 8 x 8, 64-bit 4 x 4) and runs of
 * columns left over, a against a page that faults on either side, in
 * place on b or on two threads now and then: bit for bit against the
 * reference evaluator.  Asserts a share of them gathers the tiles. */
static void test_transposed_register_blocks(void **state_)
{
    (void)state_;
    static const bcg_dtype types[] = {BCG_I8,  BCG_U8,  BCG_I16, BCG_U16, BCG_I32,
                                      BCG_U32, BCG_I64, BCG_U64, BCG_F32, BCG_F64};
    static const char *const exprs[] = {"a",           "maximum(b, a)",      "a - b",
                                        "minimum(a, a)", "where(a > b, a, b)", "f64(a) * 2",
                                        "i32(a) + b",  "1 - u8(a)",          "f32(a) / 4"};
    static guarded memory;
    int checked = 0, failures = 0, gathered = 0;
    state = seeded_stream(0x7f4a7c159e3779b9ull); /* (its own cases, whatever ran before) */
    for (int n = 0; n < 60; n++) {
        int rank = 2 + (int)(next() % 4);
        int64_t shape[5], elements = 1;
        for (int d = 0; d < rank; d++)
            shape[d] = 1 + (int64_t)(next() % 4);
        shape[rank - 1] = 9 + (int64_t)(next() % (next() % 2 ? 120 : 1200));
        int contiguous = (int)(next() % (uint64_t)(rank - 1)); /* not the last */
        shape[contiguous] = 4 + (int64_t)(next() % 45);
        for (int d = 0; d < rank; d++)
            elements *= shape[d];
        bcg_dtype t = types[next() % (sizeof types / sizeof types[0])];
        bcg_dtype u = types[next() % (sizeof types / sizeof types[0])];
        const char *expr = exprs[next() % (sizeof exprs / sizeof exprs[0])];
        view va = random_view(rank, shape, contiguous, next() % 4 == 0 ? -1 : 1);
        bool row = next() % 3 == 0;
        size_t bytes[2] = {va.bytes * bcg_dtype_size(t),
                           (size_t)(row ? shape[rank - 1] : elements) * bcg_dtype_size(u)};
        char *a = guarded_alloc(&memory, bytes[0], next() % 2);
        char *b = malloc(bytes[1]);
        assert_non_null(b);
        fill(a, bytes[0]);
        fill(b, bytes[1]);
        bcg_operand ops[2] = {{"a", t, rank, va.shape, va.strides},
                              {"b", u, row ? 1 : rank, row ? &shape[rank - 1] : shape, NULL}};
        void *in[3] = {a + (size_t)va.first * bcg_dtype_size(t), b, b};
        int variant = (int)(next() % 4);
        bool inplace = variant == 1 && !row && strstr(expr, "b") &&
                       result_dtype(expr, ops, 2) == u;
        int got = check(expr, ops, in, bytes, 2, inplace ? 1 : -1, variant == 2 ? 2 : 1,
                        "bcg_mk_gather_rows_");
        checked++;
        failures += got < 0;
        gathered += got > 0;
        if (got < 0) {
            print_error("  %s a %s b %s%s variant %d a", expr, bcg_dtype_name(t),
                        bcg_dtype_name(u), row ? " (a row)" : "", variant);
            for (int d = 0; d < rank; d++)
                print_error(" %lld@%lld", (long long)va.shape[d], (long long)va.strides[d]);
            print_error("\n");
        }
        free(b);
    }
    guarded_free(&memory);
    print_message("# %d trees over transposed inputs, %d gathered in tiles\n", checked,
                  gathered);
    assert_int_equal(failures, 0);
    assert_true(gathered * 2 >= checked);
}

/* One operation (a cast, a literal operand, a function) over runs of 65
 * to 512 of an input read with stride 1 along the run whose rows are not
 * a run apart (padded, reversed, a sub-view), ranks 2 to 5, every dtype,
 * a against a page that faults on either side, two threads now and then:
 * bit for bit against the reference evaluator.  Asserts a share of them
 * reads a in place with a call per run (lower.c tiles2d_add_gather: no
 * gather into a 2-D tile). */
static void test_rows_in_place_one_operation(void **state_)
{
    (void)state_;
    static const bcg_dtype types[] = {BCG_I8,  BCG_U8,  BCG_I16, BCG_U16, BCG_I32,
                                      BCG_U32, BCG_I64, BCG_U64, BCG_F32, BCG_F64};
    static const char *const exprs[] = {"i32(a)", "f64(a)",        "u8(a)", "a * 3",
                                        "maximum(a, 2)", "sqrt(f32(a))", "-a",    "i16(a)"};
    static guarded memory;
    int checked = 0, failures = 0, in_place = 0;
    state = seeded_stream(0x3c6ef372fe94f82bull); /* (its own cases, whatever ran before) */
    for (int n = 0; n < 60; n++) {
        int rank = 2 + (int)(next() % 4);
        int64_t shape[5], strides[5];
        for (int d = 0; d < rank; d++)
            shape[d] = 1 + (int64_t)(next() % 4);
        shape[rank - 2] = 2 + (int64_t)(next() % 9);
        shape[rank - 1] = 65 + (int64_t)(next() % 448);
        /* C order with a gap after each row now and then, a dimension
         * reversed now and then (the rows' most often) */
        int64_t step = 1, low = 0, high = 0;
        for (int d = rank - 1; d >= 0; d--) {
            strides[d] = d == rank - 1 ? 1 : step * (next() % (d == rank - 2 ? 2 : 4) ? -1 : 1);
            if (d == rank - 2 && strides[d] > 0)
                strides[d] = step + 1 + (int64_t)(next() % 9); /* padded rows */
            int64_t reach = strides[d] * (shape[d] - 1);
            if (reach < 0)
                low += reach;
            else
                high += reach;
            step = (strides[d] < 0 ? -strides[d] : strides[d]) * shape[d];
        }
        bcg_dtype t = types[next() % (sizeof types / sizeof types[0])];
        const char *expr = exprs[next() % (sizeof exprs / sizeof exprs[0])];
        size_t size = bcg_dtype_size(t), bytes[1] = {(size_t)(high - low + 1) * size};
        char *a = guarded_alloc(&memory, bytes[0], next() % 2);
        fill(a, bytes[0]);
        bcg_operand ops[1] = {{"a", t, rank, shape, strides}};
        void *in[2] = {a + (size_t)-low * size, NULL};
        int got = check(expr, ops, in, bytes, 1, -1, next() % 4 == 0 ? 2 : 1,
                        "bcg_mk_gather_rows_");
        checked++;
        failures += got < 0;
        in_place += got == 0;
        if (got < 0) {
            print_error("  %s a %s", expr, bcg_dtype_name(t));
            for (int d = 0; d < rank; d++)
                print_error(" %lld@%lld", (long long)shape[d], (long long)strides[d]);
            print_error("\n");
        }
    }
    guarded_free(&memory);
    print_message("# %d single operations over rows not a run apart, %d read in place\n",
                  checked, in_place);
    assert_int_equal(failures, 0);
    assert_true(in_place * 4 >= checked * 3); /* 58 of 60; main 31 */
}

/* Large random trees (depth 4 and 5, casts through every dtype) over runs
 * of 16 to 300, a contiguous, reversed or of stride 2 or 3, b a whole
 * array or a row, c a per-row value or one value, a and b against a page
 * that faults on either side, in place on b or on two threads now and
 * then: bit for bit against the reference evaluator.  Asserts that of the
 * trees with more operations than MAX_TILE_TEMPORARIES (counted from the
 * expression: a lower bound of the tiles' count) a share runs as the
 * fused function over 1-D tiles (lower.c fused_past_temporaries) rather
 * than the per-element groups. */
static void test_fused_past_temporaries(void **state_)
{
    (void)state_;
    static const bcg_dtype types[] = {BCG_I8,  BCG_U8,  BCG_I16, BCG_U16, BCG_I32,
                                      BCG_U32, BCG_I64, BCG_U64, BCG_F32, BCG_F64};
    static guarded memory[2];
    int checked = 0, failures = 0, large = 0, fused = 0;
    state = seeded_stream(0x2545f4914f6cdd1dull); /* (its own cases, whatever ran before) */
    for (int n = 0; n < 70; n++) {
        char expr[512];
        reversed_tree(expr, sizeof expr, 4 + (int)(next() % 2));
        int operations = 0; /* the operators and calls the expression writes */
        for (const char *at = expr; *at; at++)
            operations += *at == '(' || *at == '+' || *at == '-' || *at == '>';
        int rank = next() % 3 ? 2 : 3;
        int64_t shape[3];
        shape[rank - 1] = 16 + (int64_t)(next() % 285);
        for (int d = 0; d < rank - 1; d++)
            shape[d] = 2 + (int64_t)(next() % 40);
        bcg_dtype t = types[next() % (sizeof types / sizeof types[0])];
        bcg_dtype tb = next() % 2 ? t : types[next() % (sizeof types / sizeof types[0])];
        view va = random_view(rank, shape, rank - 1, next() % 4 == 0 ? -1 : 1);
        int64_t step = 1 + (int64_t)(next() % 3); /* stride 1, 2 or 3 along the run */
        for (int d = 0; d < rank; d++)
            va.strides[d] *= step;
        va.first *= step;
        va.bytes = (va.bytes - 1) * (size_t)step + 1;
        bool row = next() % 3 == 0;
        int64_t b_shape[3], c_shape[3] = {1, 1, 1};
        memcpy(b_shape, shape, sizeof b_shape);
        for (int d = 0; row && d < rank - 1; d++)
            b_shape[d] = 1;
        int64_t b_elements = 1;
        for (int d = 0; d < rank; d++)
            b_elements *= b_shape[d];
        if (next() % 2)
            c_shape[rank - 2] = shape[rank - 2];
        size_t sa = bcg_dtype_size(t), sb = bcg_dtype_size(tb);
        size_t bytes[3] = {va.bytes * sa, (size_t)b_elements * sb, (size_t)c_shape[rank - 2] * sa};
        char *a = guarded_alloc(&memory[0], bytes[0], next() % 2);
        char *b = guarded_alloc(&memory[1], bytes[1], next() % 2);
        char *c = malloc(bytes[2]);
        assert_non_null(c);
        fill(a, bytes[0]);
        fill(b, bytes[1]);
        fill(c, bytes[2]);
        bcg_operand ops[3] = {{"a", t, rank, va.shape, va.strides},
                              {"b", tb, rank, b_shape, NULL},
                              {"c", t, rank, c_shape, NULL}};
        void *in[4] = {a + (size_t)va.first * sa, b, c, b};
        int variant = (int)(next() % 4);
        bool inplace = variant == 1 && !row && result_dtype(expr, ops, 3) == tb;
        int got = check(expr, ops, in, bytes, 3, inplace ? 1 : -1, variant == 2 ? 2 : 1,
                        "bcg_vex");
        checked++;
        failures += got < 0;
        if (operations > 12 /* MAX_TILE_TEMPORARIES */) {
            large++;
            fused += got > 0;
        }
        if (got < 0) {
            print_error("  %s a %s b %s variant %d", expr, bcg_dtype_name(t), bcg_dtype_name(tb),
                        variant);
            for (int d = 0; d < rank; d++)
                print_error(" %lld@%lld", (long long)shape[d], (long long)va.strides[d]);
            print_error("\n");
        }
        free(c);
    }
    guarded_free(&memory[0]);
    guarded_free(&memory[1]);
    print_message("# %d large trees, %d of %d with over 12 operations fused\n", checked, fused,
                  large);
    assert_int_equal(failures, 0);
    assert_true(large >= 10 && fused * 10 >= large * 9); /* 41 of 43; main 37 */
}

/* Whether the kernel of EXPR over OPS (COUNT) has NEEDLE in its source and
 * not AVOID. */
static bool source_has(const char *expr, const bcg_operand *ops, int count, const char *needle,
                       const char *avoid)
{
    bcg_context *ctx = bcg_context_new();
    bcg_kernel *k = NULL;
    bcg_error err;
    bool has = false;
    assert_non_null(ctx);
    if (bcg_compile(ctx, expr, ops, count, NULL, &k, &err) == BCG_OK)
        has = strstr(bcg_kernel_source(k), needle) && !strstr(bcg_kernel_source(k), avoid);
    bcg_context_free(ctx);
    return has;
}

/* Float trees over an operand of another dtype contiguous along its runs
 * whose rows lie apart (a gap, a reversed or permuted outer order), runs
 * that are not whole vectors, b a row, a per-row value or C-contiguous:
 * the fused function's rows form reads a in place and takes each run's
 * last elements as its last whole vector again (lower.c
 * float_overlap_rows), bit for bit against the reference evaluator, a
 * and b against a page that faults on either side.  Asserts the share
 * read in place (no gather). */
static void test_float_rows_overlap(void **state_)
{
    (void)state_;
    static const char *const exprs[] = {"(a) / (f64(a))", "f64(a) * 1e-5 + b",
                                        "where(f32(a) > b, f32(a), b)",
                                        "minimum(f64(a), b) - 2.5", "(1e-5) * (f64(a))",
                                        "f32(a) * b + f32(a)"};
    static const bcg_dtype types[] = {BCG_I32, BCG_I16, BCG_U8, BCG_F32, BCG_I8, BCG_U16};
    static guarded memory[2];
    int checked = 0, failures = 0, in_place = 0;
    for (int n = 0; n < 120; n++) {
        int rank = next() % 3 ? 2 : 3;
        int64_t shape[3];
        shape[rank - 1] = 9 + (int64_t)(next() % 300);
        for (int d = 0; d < rank - 1; d++)
            shape[d] = 2 + (int64_t)(next() % (rank == 2 ? 60 : 9));
        const char *expr = exprs[next() % (sizeof exprs / sizeof exprs[0])];
        bcg_dtype t = types[next() % (sizeof types / sizeof types[0])];
        bcg_dtype tb = next() % 2 ? BCG_F32 : BCG_F64;
        view va = random_view(rank, shape, rank - 1, 1);
        if (va.strides[rank - 2] == shape[rank - 1] && rank == 2) { /* rows apart */
            va.strides[rank - 2] = shape[rank - 1] + 1 + (int64_t)(next() % 9);
            va.bytes = (size_t)(va.strides[0] * (shape[0] - 1) + shape[1]);
            va.first = 0;
        }
        int64_t b_shape[3];
        memcpy(b_shape, shape, sizeof b_shape);
        int kind = (int)(next() % 3);
        for (int d = 0; kind == 0 && d < rank - 1; d++)
            b_shape[d] = 1; /* a row */
        if (kind == 1)
            b_shape[rank - 1] = 1; /* a per-row value */
        view vb = random_view(rank, b_shape, rank - 1, 1);
        size_t sa = bcg_dtype_size(t), sb = bcg_dtype_size(tb);
        size_t bytes[2] = {va.bytes * sa, vb.bytes * sb};
        char *a = guarded_alloc(&memory[0], bytes[0], next() % 2);
        char *b = guarded_alloc(&memory[1], bytes[1], next() % 2);
        fill(a, bytes[0]);
        fill(b, bytes[1]);
        bcg_operand ops[2] = {{"a", t, rank, va.shape, va.strides},
                              {"b", tb, rank, vb.shape, vb.strides}};
        void *in[3] = {a + (size_t)va.first * sa, b + (size_t)vb.first * sb, NULL};
        int got = check(expr, ops, in, bytes, 2, -1, 1, NULL);
        checked++;
        failures += got < 0;
        in_place += source_has(expr, ops, 2, VEX_SYMBOL "(", "bcg_mk_gather_rows_");
        if (got < 0) {
            print_error("  %s a %s b %s rank %d", expr, bcg_dtype_name(t), bcg_dtype_name(tb),
                        rank);
            for (int d = 0; d < rank; d++)
                print_error(" %lld@%lld,%lld", (long long)shape[d], (long long)va.strides[d],
                            (long long)vb.strides[d]);
            print_error("\n");
        }
    }
    guarded_free(&memory[0]);
    guarded_free(&memory[1]);
    print_message("# %d float trees over rows apart, %d read in place by the fused function\n",
                  checked, in_place);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok())
        assert_true(in_place * 3 >= checked * 2); /* 101 of 120 (45 before) */
}

/* A view of SHAPE laid out in a random order of its dimensions (a
 * transposed one as often as not), the first STEP (1 to 8) elements
 * apart, either way, every other one past the reach of those before it
 * and now and then a gap: strided, reversed and transposed at once. */
static view spread_view(int rank, const int64_t *shape)
{
    view v = {.rank = rank};
    int order[4];
    for (int d = 0; d < rank; d++)
        order[d] = d;
    for (int i = rank - 1; i > 0; i--) {
        int j = (int)(next() % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    int64_t step = 1 + (int64_t)(next() % 8), low = 0, high = 0;
    for (int i = 0; i < rank; i++) {
        int d = order[i];
        v.shape[d] = shape[d];
        v.strides[d] = next() % 3 == 0 ? -step : step;
        int64_t reach = v.strides[d] * (shape[d] - 1);
        if (reach < 0)
            low += reach;
        else
            high += reach;
        step = step * shape[d] + (next() % 2 ? (int64_t)(next() % 3) : 0);
    }
    v.first = -low;
    v.bytes = (size_t)(high - low + 1);
    return v;
}

/* One operation or comparison of two operands (or an operand and a
 * literal) broadcast against each other, each laid out by spread_view,
 * runs of 2 to 127: the shapes that took the _rows microkernel, which
 * lower.c's rows_refused now sends to the 2-D tiles or the small flat
 * form unless the microkernel lays the runs out as long calls; every
 * dtype, operands against a faulting page on either side, in place and on
 * two threads, bit for bit against the reference evaluator.  Asserts the
 * share left on the _rows microkernel. */
static void test_broadcast_rows(void **state_)
{
    (void)state_;
    static const char *const exprs[] = {"a + b", "b - a", "a * b", "minimum(a, b)",
                                        "maximum(b, a)", "a > b", "b <= a", "a == b",
                                        "a + 3", "5 - a", "maximum(a, 2)"};
    static const bcg_dtype types[] = {BCG_I8,  BCG_I16, BCG_I32, BCG_I64, BCG_U8,
                                      BCG_U16, BCG_U32, BCG_U64, BCG_F32, BCG_F64};
    static guarded memory[2];
    int checked = 0, failures = 0, by_rows = 0, hoisted = 0, small = 0;
    long threaded_before = threaded_runs;
    for (int n = 0; n < 150; n++) {
        int rank = 3 + (int)(next() % 2);
        int64_t shape[4], a_shape[4], b_shape[4], rest = 1;
        shape[rank - 1] = next() % 2 ? 2 + (int64_t)(next() % 14) : 16 + (int64_t)(next() % 112);
        for (int d = 1; d < rank - 1; d++)
            shape[d] = 2 + (int64_t)(next() % 9);
        for (int d = 1; d < rank; d++)
            rest *= shape[d];
        int variant = (int)(next() % 4);
        int64_t elements = variant == 2 ? 70000 : 4096 + (int64_t)(next() % 12000);
        shape[0] = elements / rest + 1;
        for (int d = 0; d < rank; d++) { /* a broadcast dimension in one or the other */
            int pattern = (int)(next() % 4);
            a_shape[d] = pattern == 1 ? 1 : shape[d];
            b_shape[d] = pattern == 2 ? 1 : shape[d];
        }
        bcg_dtype t = types[next() % (sizeof types / sizeof types[0])];
        size_t e = (size_t)(next() % (sizeof exprs / sizeof exprs[0]));
        const char *expr = exprs[e];
        bool literal = e >= 8, compares = e >= 5 && e <= 7;
        /* in place on b: b of the result's shape, C-contiguous, and the result b's dtype */
        bool inplace = variant == 1 && !literal && !compares;
        if (inplace)
            memcpy(b_shape, shape, sizeof shape);
        view va = spread_view(rank, a_shape), vb = spread_view(rank, b_shape);
        size_t size = bcg_dtype_size(t);
        if (inplace) {
            int64_t count = 1;
            for (int d = 0; d < rank; d++)
                count *= shape[d];
            vb.first = 0;
            vb.bytes = (size_t)count;
        }
        size_t bytes[2] = {va.bytes * size, vb.bytes * size};
        char *a = guarded_alloc(&memory[0], bytes[0], next() % 2);
        char *b = guarded_alloc(&memory[1], bytes[1], next() % 2);
        fill(a, bytes[0]);
        fill(b, bytes[1]);
        bcg_operand ops[2] = {{"a", t, rank, va.shape, va.strides},
                              {"b", t, rank, b_shape, inplace ? NULL : vb.strides}};
        void *in[3] = {a + (size_t)va.first * size, b + (size_t)vb.first * size, b};
        int got = check(expr, ops, in, bytes, 2, inplace ? 1 : -1, variant == 2 ? 2 : 1,
                        "_rows(");
        checked++;
        failures += got < 0;
        by_rows += got > 0;
        hoisted += last_hoisted;
        small += last_small;
        if (got < 0) {
            print_error("  %s variant %d a", bcg_dtype_name(t), variant);
            for (int d = 0; d < rank; d++)
                print_error(" %lld@%lld", (long long)va.shape[d], (long long)va.strides[d]);
            print_error(" b");
            for (int d = 0; d < rank; d++)
                print_error(" %lld@%lld", (long long)b_shape[d],
                            (long long)(inplace ? 0 : vb.strides[d]));
            print_error("\n");
        }
    }
    guarded_free(&memory[0]);
    guarded_free(&memory[1]);
    print_message("# %d single operations over broadcast spread layouts, %d by the _rows "
                  "microkernel, %d with a gather hoisted out of loops, %d through the flat "
                  "form (no gathers), %ld on two threads\n",
                  checked, by_rows, hoisted, small, threaded_runs - threaded_before);
    assert_int_equal(failures, 0);
    assert_true(threaded_runs - threaded_before >= 10);
    if (vex_cpu_ok()) {
        assert_true(by_rows * 6 <= checked); /* 14 of 150; 114 before rows_refused */
        /* 12 of 150; none before hoist_tile_gathers; the flat form (runs
         * of up to 40, in place of the 2-D tiles and the rows form) took
         * most of them since: no gathers at all */
        assert_true((hoisted + small) * 20 >= checked);
    }
}

/* The gate itself, both ways: b + a with b read with stride 3 along runs
 * of 17 (sweep seed 1's worst case, smaller) leaves the _rows microkernel;
 * b * a with a strided block repeating every run beside a contiguous b
 * (the microkernel's periodic layout, 4.7x gcc's loop nest) keeps it. */
static void test_rows_gate(void **state_)
{
    (void)state_;
    if (!vex_cpu_ok())
        return;
    int64_t a1_shape[5] = {9, 1, 13, 15, 1}, b1_shape[5] = {1, 7, 1, 15, 17};
    int64_t b1_strides[5] = {0, 1071, 0, 51, 3};
    int64_t a2_shape[3] = {1, 2, 9}, a2_strides[3] = {108, 27, 3}, b2_shape[3] = {300, 2, 9};
    bcg_operand ops1[2] = {{"a", BCG_I8, 5, a1_shape, NULL}, {"b", BCG_I8, 5, b1_shape, b1_strides}};
    bcg_operand ops2[2] = {{"a", BCG_I16, 3, a2_shape, a2_strides}, {"b", BCG_I16, 3, b2_shape, NULL}};
    char *a1 = calloc(9 * 13 * 15, 1), *b1 = calloc(7 * 1071, 1);
    char *a2 = calloc(108, 2), *b2 = calloc(300 * 18, 2);
    assert_true(a1 && b1 && a2 && b2);
    fill(a1, 9 * 13 * 15);
    fill(b1, 7 * 1071);
    fill(a2, 108 * 2);
    fill(b2, 300 * 18 * 2);
    size_t bytes1[2] = {9 * 13 * 15, 7 * 1071}, bytes2[2] = {108 * 2, 300 * 18 * 2};
    void *in1[3] = {a1, b1, b1}, *in2[3] = {a2, b2, b2};
    assert_int_equal(check("b + a", ops1, in1, bytes1, 2, -1, 1, "_rows("), 0);
    /* b gathered once a trip of the loop over 7, or the flat form split
     * at loop 2 under 3 level loops (vex.c flat_split: cc / JIT 0.72-0.79
     * with the 2-D tiles -> 3.8, same process) */
    assert_true(last_hoisted || last_small);
    /* (the flat form since its runs of up to 40: faster still, cc / JIT
     * 5.8 with the _rows call, 8.2 flat, same process) */
    int got = check("b * a", ops2, in2, bytes2, 2, -1, 1, "_rows(");
    assert_true(got == 1 || (got == 0 && last_small));
    free(a1);
    free(b1);
    free(a2);
    free(b2);
}

/* The JIT forms of EXPR over OPS (COUNT) these tests count. */
typedef struct form_seen {
    bool row_groups;  /* the rows form over two loops (lower.c row_groups_chosen) */
    bool flat;        /* the flat form (the small function over rows as one stream) */
    bool tile_rows;   /* the 2-D tiles' rows form (the fused function reading operands
                         in place row by row), not a call per run */
    int float_hoisted; /* values its function computes once a row (mark_float_hoisted) */
    bool gathered_once; /* 2-D tiles of the fused function whose every gather is done
                           once, before all loops (lower.c tiles_gathered_once) */
} form_seen;

static form_seen form_of(const char *expr, const bcg_operand *ops, int count)
{
    arena *ar = arena_new();
    compile *c = ar ? arena_alloc(ar, sizeof *c) : NULL;
    assert_non_null(c);
    memset(c, 0, sizeof *c);
    bcg_error err;
    c->arena = ar;
    c->err = &err;
    bcg_options options;
    bcg_options_init(&options);
    compile_request r = {.text = expr, .operands = ops, .operand_count = count,
                         .options = &options, .goal = COMPILE_JIT, .max_source = 1 << 20};
    form_seen f = {false, false, false, 0, false};
    const kernel_ir *ir = compile_pipeline(c, &r) == BCG_OK ? c->ir : NULL;
    if (ir) {
        f.row_groups = ir->vex && ir->row_groups > 0;
        f.flat = ir->small && ir->small_flat;
        f.tile_rows = ir->tiles2d && ir->vex && ir->vex->rows;
        f.float_hoisted = f.tile_rows ? ir->vex->float_hoisted : 0;
        int top = ir->step_count ? ir->steps[0].depth : 0, gathers = 0, inner = 0;
        for (int i = 0; i < ir->step_count; i++)
            top = ir->steps[i].depth < top ? ir->steps[i].depth : top;
        for (int i = 0; i < ir->step_count; i++)
            if (ir->steps[i].op == KIR_GATHER)
                ir->steps[i].depth == top ? gathers++ : inner++;
        f.gathered_once = ir->tiles2d && ir->vex && gathers > 0 && inner == 0;
    }
    arena_free(ar);
    return f;
}

/* A C-contiguous view of SHAPE (an in-place target, whole). */
static view c_contiguous(int rank, const int64_t *shape)
{
    view v = {.rank = rank};
    int64_t step = 1;
    for (int d = rank - 1; d >= 0; d--) {
        v.shape[d] = shape[d];
        v.strides[d] = step;
        step *= shape[d];
    }
    v.bytes = (size_t)step;
    return v;
}

/* Operand NAME of dtype T over view V in MEMORY (against a faulting page
 * on a random side), filled: its bytes, its pointer and its operand. */
static void place_operand(guarded *memory, const view *v, const char *name, bcg_dtype t,
                          size_t *bytes, void **in, bcg_operand *op)
{
    size_t size = bcg_dtype_size(t);
    *bytes = v->bytes * size;
    char *data = guarded_alloc(memory, *bytes, next() % 2);
    fill(data, *bytes);
    *in = data + (size_t)v->first * size;
    *op = (bcg_operand){name, t, v->rank, v->shape, v->strides};
}

/* Whether EXPR over OPS (COUNT) gives a result of dtype T (an in-place
 * target must be of the result's dtype). */
static bool result_dtype_is(const char *expr, const bcg_operand *ops, int count, bcg_dtype t)
{
    arena *ar = arena_new();
    compile *front = ar ? arena_alloc(ar, sizeof *front) : NULL;
    assert_non_null(front);
    memset(front, 0, sizeof *front);
    bcg_error err;
    front->arena = ar;
    front->err = &err;
    bool same = compile_front(front, expr, ops, count, NULL) == BCG_OK && front->out_dtype == t;
    arena_free(ar);
    return same;
}

/* View V read every other element (its strides doubled). */
static void every_other(view *v)
{
    for (int d = 0; d < v->rank; d++)
        v->strides[d] *= 2;
    v->first *= 2;
    v->bytes = 2 * v->bytes - 1;
}

/* COUNT kernels of EXPRS over TYPES: (P,) G groups of R rows of runs of
 * run_of() elements (P and G up to WIDEN times 6 and 30), operands of those dtypes read contiguously, reversed
 * or with a stride of 2 along the run, each row's and group's start apart
 * by random gaps and signs, or broadcast: one value, a value a row, a
 * value a group, a row for every group (column broadcast); in place on a,
 * on two threads; every operand against a page that faults on either
 * side; bit for bit against the reference evaluator.  Counts those in the
 * rows form over two loops (GROUPS) and in the flat form (FLAT); returns
 * the number of failures. */
static int groups_cases(const char *const *exprs, int expr_count, const bcg_dtype *types,
                        int type_count, int count, int64_t (*run_of)(void), int widen,
                        int *groups, int *flat)
{
    static guarded memory[3];
    int checked = 0, failures = 0;
    for (int n = 0; n < count; n++) {
        int rank = next() % 3 ? 3 : 4;
        int64_t shape[4];
        for (int d = 0; d < rank - 2; d++)
            shape[d] = 2 + (int64_t)(next() % (rank == 3 ? 30 * widen : 6 * widen));
        shape[rank - 2] = 1 + (int64_t)(next() % 8);
        shape[rank - 1] = run_of();
        const char *expr = exprs[next() % expr_count];
        bcg_dtype t[3];
        for (int i = 0; i < 3; i++)
            t[i] = types[next() % type_count];
        if (next() % 2)
            t[1] = t[2] = t[0];
        view v[3];
        void *in[4];
        size_t bytes[3];
        bcg_operand ops[3];
        static const char *const names[3] = {"a", "b", "c"};
        int variant = (int)(next() % 5);
        for (int i = 0; i < 3; i++) {
            int64_t s[4];
            memcpy(s, shape, sizeof s);
            /* a: whole; b and c: whole or broadcast (one value, a value a
             * row, a value a group, a row for every group) */
            int kind = i == 0 ? 0 : (int)(next() % 5);
            if (kind == 1)
                for (int d = 0; d < rank; d++)
                    s[d] = 1;
            else if (kind == 2 || kind == 3)
                s[rank - 1] = 1;
            if (kind == 3)
                s[rank - 2] = 1;
            if (kind == 4)
                for (int d = 0; d < rank - 1; d++)
                    s[d] = 1;
            int along = (int)(next() % 4); /* contiguous, reversed, stride 2 */
            v[i] = random_view(rank, s, rank - 1, along == 1 ? -1 : 1);
            if (along == 2) /* every other element */
                every_other(&v[i]);
            if (i == 0 && variant == 0) /* in place: a C-contiguous */
                v[i] = c_contiguous(rank, s);
            place_operand(&memory[i], &v[i], names[i], t[i], &bytes[i], &in[i], &ops[i]);
        }
        in[3] = in[0];
        bool inplace = false;
        if (variant == 0) /* only where the result is a's dtype */
            inplace = result_dtype_is(expr, ops, 3, t[0]);
        int got = check(expr, ops, in, bytes, 3, inplace ? 0 : -1, variant == 1 ? 2 : 1, NULL);
        checked++;
        failures += got < 0;
        form_seen f = form_of(expr, ops, 3);
        *groups += f.row_groups;
        *flat += f.flat;
        if (got < 0) {
            print_error("  %s rank %d variant %d", expr, rank, variant);
            for (int i = 0; i < 3; i++) {
                print_error(" %s %s", names[i], bcg_dtype_name(t[i]));
                for (int d = 0; d < rank; d++)
                    print_error(" %lld@%lld", (long long)v[i].shape[d], (long long)v[i].strides[d]);
            }
            print_error("\n");
        }
    }
    return failures;
}

static int64_t groups_run(void)
{
    return next() % 3 ? 4 + (int64_t)(next() % 60) : 60 + (int64_t)(next() % 200);
}

/* The fused function's rows form over two loops (lower.c
 * row_groups_chosen, vex.c vex_layout.group): float, mixed and integer
 * trees over short and long runs (tails of every length), as
 * groups_cases lays them out.  Asserts the share that takes the form. */
static void test_row_groups(void **state_)
{
    (void)state_;
    static const char *const exprs[] = {
        "a * b + c", "where(a > c, a, b)", "f64(minimum(c, 0) + f64(b)) - minimum(a, c)",
        "(0.1) * (a)", "(where(b != 2.0, b, a)) / ((b) * (3.0 - c))",
        "where(where(a >= 3, b, a) > 5, where(a >= 3, b, a), b)", "minimum(a, b) - c",
        "where(a / b > c, a / b, c)", "abs(a - b) + c", "where(a > f64(a), a, f64(a))"};
    static const bcg_dtype types[] = {BCG_F32, BCG_F64, BCG_I16, BCG_I32, BCG_U8,
                                      BCG_I8,  BCG_U16, BCG_F32, BCG_F64};
    int groups = 0, flat = 0, checked = 160;
    int failures = groups_cases(exprs, sizeof exprs / sizeof exprs[0], types,
                                sizeof types / sizeof types[0], checked, groups_run, 1,
                                &groups, &flat);
    print_message("# %d kernels over groups of rows, %d in the rows form over two loops\n",
                  checked, groups);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok())
        assert_true(groups * 5 >= checked);
}

static int64_t short_groups_run(void) { return 2 + (int64_t)(next() % 15); }

/* Float trees over groups of rows of at most two vectors (runs of 2 to
 * 16): the flat form, not the rows form over two loops (lower.c
 * flat_chosen), as groups_cases lays them out.  Asserts the share that
 * takes the flat form. */
static void test_short_groups_flat(void **state_)
{
    (void)state_;
    static const char *const exprs[] = {"a * b + c", "where(a > c, a, b)", "(a - c) / (b + 1.5)",
                                        "minimum(a, b) - c", "abs(a - b) + c",
                                        "a * 0.5 - maximum(b, c)"};
    static const bcg_dtype types[] = {BCG_F32, BCG_F64};
    int groups = 0, flat = 0, checked = 100;
    int failures = groups_cases(exprs, sizeof exprs / sizeof exprs[0], types,
                                sizeof types / sizeof types[0], checked, short_groups_run, 8,
                                &groups, &flat);
    print_message("# %d float kernels over groups of short rows, %d in the flat form, %d in "
                  "the rows form over two loops\n", checked, flat, groups);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok()) /* 61 of 100 (the rest f64 runs past 8, or forms before); 49 before */
        assert_true(flat * 20 >= checked * 11);
}

/* Planes of short rows with an operand that is one plane (the same for
 * every outer trip) read reversed, every other element or transposed:
 * the 2-D tiles gather it once for the whole call and the fused function
 * reads it contiguously, where the flat form would read it in place every
 * body (lower.c tiles_gathered_once).  Float, mixed and integer trees of
 * two operations or more, runs of 2 to 8 (at times 16) under 2 to 41 rows and 2 to 40
 * planes (rank 3 or 4), c one value, one value a row or whole; in place
 * on a; against a page that faults on either side; bit for bit against
 * the reference evaluator.  Asserts the share that takes the tiles. */
static void test_planes_gathered_once(void **state_)
{
    (void)state_;
    static const char *const exprs[] = {"a - a - b", "a * b + a", "maximum(a, b) * c",
                                        "(a - b) * (a + c)", "where(a > b, a, c) + b",
                                        "abs(a * b) - c"};
    static const bcg_dtype types[] = {BCG_F32, BCG_F32, BCG_F64, BCG_I32, BCG_I16, BCG_U8};
    static guarded memory[3];
    int checked = 120, failures = 0, once = 0, flat = 0;
    for (int n = 0; n < checked; n++) {
        int rank = next() % 3 ? 3 : 4;
        int64_t shape[4];
        shape[rank - 1] = 2 + (int64_t)(next() % (next() % 4 ? 7 : 15));
        shape[rank - 2] = 2 + (int64_t)(next() % 40);
        for (int d = 0; d < rank - 2; d++)
            shape[d] = 2 + (int64_t)(next() % (d == rank - 3 ? 39 : 3));
        const char *expr = exprs[next() % (sizeof exprs / sizeof exprs[0])];
        bcg_dtype t[3];
        for (int i = 0; i < 3; i++)
            t[i] = types[next() % (sizeof types / sizeof types[0])];
        if (next() % 2)
            t[1] = t[2] = t[0];
        view v[3];
        void *in[4];
        size_t bytes[3];
        bcg_operand ops[3];
        static const char *const names[3] = {"a", "b", "c"};
        bool inplace_asked = next() % 5 == 0;
        for (int i = 0; i < 3; i++) {
            int64_t s[4];
            memcpy(s, shape, sizeof s);
            int kind = i == 1 ? 0 : (int)(next() % 3);
            if (i == 1) /* b: one plane */
                for (int d = 0; d < rank - 2; d++)
                    s[d] = 1;
            if (i == 2 && kind == 0) /* c: one value */
                for (int d = 0; d < rank; d++)
                    s[d] = 1;
            else if (i == 2 && kind == 1) /* c: one value a row */
                s[rank - 1] = 1;
            int along = i == 1 ? 1 + (int)(next() % 3) : (int)(next() % 2);
            if (i == 0 && inplace_asked)
                along = 0;
            /* reversed, every other element or transposed (contiguous along
             * the rows) */
            v[i] = random_view(rank, s, along == 3 ? rank - 2 : rank - 1, along == 1 ? -1 : 1);
            if (along == 2)
                every_other(&v[i]);
            if ((i == 0 && (inplace_asked || next() % 4)) || (i == 2 && next() % 2))
                v[i] = c_contiguous(rank, s); /* (a and c mostly laid out as the output) */
            place_operand(&memory[i], &v[i], names[i], t[i], &bytes[i], &in[i], &ops[i]);
        }
        in[3] = in[0];
        bool inplace = inplace_asked && result_dtype_is(expr, ops, 3, t[0]);
        int got = check(expr, ops, in, bytes, 3, inplace ? 0 : -1, 1, NULL);
        failures += got < 0;
        form_seen f = form_of(expr, ops, 3);
        once += f.gathered_once;
        flat += f.flat;
        if (got < 0) {
            print_error("  %s rank %d", expr, rank);
            for (int i = 0; i < 3; i++) {
                print_error(" %s %s", names[i], bcg_dtype_name(t[i]));
                for (int d = 0; d < rank; d++)
                    print_error(" %lld@%lld", (long long)v[i].shape[d], (long long)v[i].strides[d]);
            }
            print_error("\n");
        }
    }
    print_message("# %d kernels over planes with an operand of one plane read in place: %d in "
                  "2-D tiles gathering it once, %d in the flat form\n", checked, once, flat);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok()) /* 32 of 120 (the others the flat form, gathers inside a loop or
                         the rows form); 0 before */
        assert_true(once * 5 >= checked);
}

/* COUNT kernels of EXPRS over TYPES (a, b and c; c one value a row):
 * runs of MIN_RUN to MIN_RUN + 1035 (MIN_RUN + SPAN - 1 with SPAN > 0) under 2 to 41 rows (and 2 to 6
 * planes), a also the same row every row; operands contiguous, reversed
 * or every other element along the run, rows apart by random gaps; in
 * place on a; against a page that faults on either side; bit for bit
 * against the reference evaluator.  Counts the kernels in the 2-D tiles'
 * rows form (ROWS_FORM) and those computing a value once a row
 * (HOISTED); returns the number of failures. */
static int rows_cases(const char *const *exprs, int expr_count, const bcg_dtype *types,
                      int type_count, int count, int64_t min_run, int64_t span, int *rows_form,
                      int *hoisted)
{
    static guarded memory[3];
    int failures = 0;
    for (int n = 0; n < count; n++) {
        int rank = next() % 3 ? 2 : 3;
        int64_t shape[3];
        shape[rank - 1] = min_run + (int64_t)(next() % (span > 0 ? (uint64_t)span
                                                         : next() % 3 ? 200 : 1036));
        shape[rank - 2] = 2 + (int64_t)(next() % 40);
        if (rank == 3)
            shape[0] = 2 + (int64_t)(next() % 5);
        const char *expr = exprs[next() % expr_count];
        bcg_dtype t[3];
        for (int i = 0; i < 3; i++)
            t[i] = types[next() % type_count];
        if (next() % 3 == 0) /* a float tree over one dtype */
            t[1] = t[2] = t[0] = next() % 2 ? BCG_F32 : BCG_F64;
        view v[3];
        void *in[4];
        size_t bytes[3];
        bcg_operand ops[3];
        static const char *const names[3] = {"a", "b", "c"};
        bool inplace_asked = next() % 5 == 0;
        for (int i = 0; i < 3; i++) {
            int64_t s[3];
            memcpy(s, shape, sizeof s);
            if (i == 2) /* c: a value a row */
                s[rank - 1] = 1;
            else if (i == 0 && next() % 3 == 0) /* a: the same row every row */
                for (int d = 0; d < rank - 1; d++)
                    s[d] = 1;
            int along = (int)(next() % 4); /* contiguous (twice), reversed, stride 2 */
            if (i == 0 && inplace_asked)
                along = 0;
            v[i] = random_view(rank, s, rank - 1, along == 1 ? -1 : 1);
            if (along == 2) /* every other element */
                every_other(&v[i]);
            if (i == 0 && inplace_asked) /* in place: a C-contiguous, whole */
                v[i] = c_contiguous(rank, shape);
            place_operand(&memory[i], &v[i], names[i], t[i], &bytes[i], &in[i], &ops[i]);
        }
        in[3] = in[0];
        bool inplace = false;
        if (inplace_asked) /* only where the result is a's dtype */
            inplace = result_dtype_is(expr, ops, 3, t[0]);
        int got = check(expr, ops, in, bytes, 3, inplace ? 0 : -1, n % 7 == 0 ? 2 : 1, NULL);
        failures += got < 0;
        form_seen f = form_of(expr, ops, 3);
        *rows_form += f.tile_rows;
        *hoisted += f.float_hoisted > 0;
        if (got < 0) {
            print_error("  %s rank %d", expr, rank);
            for (int i = 0; i < 3; i++) {
                print_error(" %s %s", names[i], bcg_dtype_name(t[i]));
                for (int d = 0; d < rank; d++)
                    print_error(" %lld@%lld", (long long)v[i].shape[d], (long long)v[i].strides[d]);
            }
            print_error("\n");
        }
    }
    return failures;
}

/* Medium runs (65 to 1100) with a value a row read as a leaf, float and
 * mixed trees with no per-row subtree (lower.c medium_rows_in_place):
 * the 2-D tiles' rows form, one call for many rows, where a call per run
 * was the form before (rows_cases).  Asserts the share that takes it. */
static void test_medium_rows_leaves(void **state_)
{
    (void)state_;
    static const char *const exprs[] = {
        "c - b", "a * c + b", "where(b > c, a, b)", "minimum(a, c) - b", "(a - c) * (b + c)",
        "f64(c) * b - a", "abs(b - c) + a", "c * 2.5 + b", "maximum(b, c) / (a + 0.5)"};
    static const bcg_dtype types[] = {BCG_F32, BCG_F64, BCG_I16, BCG_I32, BCG_U8,
                                      BCG_I8,  BCG_F32, BCG_F64};
    int checked = 90, rows_form = 0, hoisted = 0;
    int failures = rows_cases(exprs, sizeof exprs / sizeof exprs[0], types,
                              sizeof types / sizeof types[0], checked, 65, 0, &rows_form, &hoisted);
    print_message("# %d kernels of medium runs with a value a row, %d in the 2-D tiles' rows form\n",
                  checked, rows_form);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok()) /* 46 of 90; 32 before medium_rows_in_place took float trees */
        assert_true(rows_form * 9 >= checked * 4);
}

/* Float trees with subtrees of a value a row (sqrt(c + 1e-5) as in a
 * layer norm, c * c + 2): the float path computes them once a row in a
 * register of their own (vex.c mark_float_hoisted), and medium runs with
 * them take the rows form (lower.c medium_rows_in_place); runs of 9 to
 * 1044 (rows_cases).  Asserts the share that hoists. */
static void test_float_hoisted(void **state_)
{
    (void)state_;
    static const char *const exprs[] = {
        "(a - c) / sqrt(c * c + 1e-5)", "a * sqrt(abs(c) + 1) + b", "where(a > c * 2, a, b - abs(c))",
        "minimum(a, c * c) + b", "(b + c * 3) / (c * c + 2)", "maximum(a - sqrt(abs(c)), b / 3)",
        "a - (c - 1) * (c + 1)", "where(b > -c, a * (c + 0.5), b)"};
    static const bcg_dtype types[] = {BCG_F32, BCG_F64, BCG_F32, BCG_F64, BCG_I16, BCG_U8};
    int checked = 100, rows_form = 0, hoisted = 0;
    int failures = rows_cases(exprs, sizeof exprs / sizeof exprs[0], types,
                              sizeof types / sizeof types[0], checked, 9, 0, &rows_form, &hoisted);
    print_message("# %d float kernels with subtrees of a value a row, %d in the 2-D tiles' rows "
                  "form, %d of them computing such a value once a row\n", checked, rows_form,
                  hoisted);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok())
        assert_true(hoisted * 4 >= checked);
}

/* f32 trees with an exp or log of a value a row (vex.c
 * float_hoist_refused: log over any run, exp over runs under 4 vectors):
 * the rows form computes it once a row, runs of 4 vectors on (lower.c
 * per_row_functions), the flat form every vector below; runs of 9 to 136
 * (rows_cases), within the transcendentals' tolerance of the reference
 * evaluator.  Asserts the share that hoists and the share in the rows or
 * flat form. */
static void test_float_hoisted_functions(void **state_)
{
    (void)state_;
    static const char *const exprs[] = {
        "a * log(c) - b", "a + exp(c) * b", "b - a * exp(c * 0.5)", "log(c) * a",
        "where(a > log(abs(c) + 1), a, b)", "(a - c) * exp(-c) + b", "log(c + 2) / (b + 3)"};
    static const bcg_dtype types[] = {BCG_F32, BCG_F32, BCG_F32, BCG_I16};
    int checked = 80, rows_form = 0, hoisted = 0;
    check_tolerant = true;
    int small_before = small_kernels;
    int failures = rows_cases(exprs, sizeof exprs / sizeof exprs[0], types,
                              sizeof types / sizeof types[0], checked, 9, 128, &rows_form, &hoisted);
    check_tolerant = false;
    int flat = small_kernels - small_before;
    print_message("# %d float kernels with an exp or log of a value a row, %d in the 2-D tiles' "
                  "rows form computing it once a row, %d in the flat form\n", checked, hoisted,
                  flat);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok())
        assert_true(hoisted * 4 >= checked && (hoisted + flat) * 2 >= checked);
}

/* Random trees over a transposed or spaced input a (contiguous, or
 * reversed, along the loop just outside the run) with runs of 65 to 600,
 * b one value a row (broadcast along the run) or one row (broadcast along
 * the rows), c contiguous, transposed too, or one value a row, ranks 2 to
 * 4, every dtype, b of another dtype now and then, trees of over
 * MAX_TILE_TEMPORARIES operations, and copies of a: the 2-D tiles
 * (lower.c long_stride_run, fused_over_tile2d, transposed_copy and
 * short_transposed_rows of strides under a line) where the per-row
 * operand, the tree's size or a stride under a line sent them to tcc's
 * cache blocks or groups.  Bit for bit against the
 * reference evaluator, a and b against a page that faults on either side,
 * in place on c and on two threads now and then.  Asserts the share in
 * 2-D tiles, and that the large trees take them through the fused
 * function. */
static void test_transposed_per_row(void **state_)
{
    (void)state_;
    static const bcg_dtype types[] = {BCG_I8,  BCG_U8,  BCG_I16, BCG_U16, BCG_I32,
                                      BCG_U32, BCG_I64, BCG_U64, BCG_F32, BCG_F64};
    static guarded memory[3];
    int checked = 0, failures = 0, tiled = 0, large = 0, large_tiled = 0;
    state = 0x6a09e667f3bcc909ull; /* (its own cases, whatever ran before) */
    for (int n = 0; n < 120; n++) {
        int rank = 2 + (int)(next() % 3);
        int64_t shape[4];
        shape[rank - 1] = 65 + (int64_t)(next() % 536);
        shape[rank - 2] = 8 + (int64_t)(next() % 90);
        for (int d = 0; d < rank - 2; d++)
            shape[d] = 1 + (int64_t)(next() % 4);
        bcg_dtype t = types[next() % (sizeof types / sizeof types[0])];
        bcg_dtype tb = next() % 3 ? t : types[next() % (sizeof types / sizeof types[0])];
        bool big = n % 4 == 3;
        char expr[512];
        reversed_tree(expr, sizeof expr, big ? 4 + (int)(next() % 2) : 1 + (int)(next() % 3));
        if (n % 8 == 5) /* a copy of the transposed input */
            snprintf(expr, sizeof expr, next() % 2 ? "a" : "maximum(a, a)");
        else if (!strchr(expr, 'a') || !strchr(expr, 'b')) { /* a transposed a, a per-row b */
            char tree[400];
            if (strlen(expr) >= sizeof tree)
                snprintf(expr, sizeof expr, "a");
            memcpy(tree, expr, strlen(expr) + 1);
            snprintf(expr, sizeof expr, "(%s) - (a) * (b)", tree);
        }
        int operations = 0; /* the operators and calls the expression writes */
        for (const char *at = expr; *at; at++)
            operations += *at == '(' || *at == '+' || *at == '-' || *at == '>';
        view va = random_view(rank, shape, rank - 2, next() % 4 == 0 ? -1 : 1);
        if (next() % 4 == 0) { /* spaced: the outer loop 2 or 3 elements apart */
            int64_t along = 2 + (int64_t)(next() % 2);
            va.strides[rank - 2] = along;
            va.strides[rank - 1] = along * shape[rank - 2] + 1;
            for (int d = rank - 3; d >= 0; d--)
                va.strides[d] = va.strides[d + 1] * shape[d + 1];
            va.first = 0;
            va.bytes = 1;
            for (int d = 0; d < rank; d++)
                va.bytes += (size_t)(va.strides[d] * (shape[d] - 1));
        }
        int64_t b_shape[4], c_shape[4];
        memcpy(b_shape, shape, sizeof b_shape);
        memcpy(c_shape, shape, sizeof c_shape);
        if (next() % 3) /* one value a row */
            b_shape[rank - 1] = 1;
        else /* one row for all rows */
            b_shape[rank - 2] = 1;
        for (int d = 0; d < rank - 2; d++)
            if (next() % 2)
                b_shape[d] = 1;
        int c_kind = (int)(next() % 3); /* contiguous, transposed, one value a row */
        if (c_kind == 2)
            c_shape[rank - 1] = 1;
        view vb = random_view(rank, b_shape, rank - 1, next() % 4 == 0 ? -1 : 1);
        view vc = random_view(rank, c_shape, c_kind == 1 ? rank - 2 : rank - 1, 1);
        if (c_kind == 0) { /* C-contiguous: a target for the result in place */
            int64_t step = 1;
            for (int d = rank - 1; d >= 0; d--) {
                vc.strides[d] = step;
                step *= c_shape[d];
            }
            vc.first = 0;
            vc.bytes = (size_t)step;
        }
        size_t sa = bcg_dtype_size(t), sb = bcg_dtype_size(tb);
        size_t bytes[3] = {va.bytes * sa, vb.bytes * sb, vc.bytes * sa};
        char *a = guarded_alloc(&memory[0], bytes[0], next() % 2);
        char *b = guarded_alloc(&memory[1], bytes[1], next() % 2);
        char *c = guarded_alloc(&memory[2], bytes[2], next() % 2);
        fill(a, bytes[0]);
        fill(b, bytes[1]);
        fill(c, bytes[2]);
        bcg_operand ops[3] = {{"a", t, rank, va.shape, va.strides},
                              {"b", tb, rank, vb.shape, vb.strides},
                              {"c", t, rank, vc.shape, vc.strides}};
        void *in[4] = {a + (size_t)va.first * sa, b + (size_t)vb.first * sb,
                       c + (size_t)vc.first * sa, c};
        int variant = (int)(next() % 4);
        bool inplace = variant == 1 && c_kind == 0 && result_dtype(expr, ops, 3) == t;
        int got = check(expr, ops, in, bytes, 3, inplace ? 2 : -1, variant == 2 ? 2 : 1,
                        "bcg_vex");
        bool tiles = tile_rows_of(expr, ops, 3) > 0;
        checked++;
        failures += got < 0;
        tiled += tiles;
        if (operations > 12 /* MAX_TILE_TEMPORARIES */) {
            large++;
            large_tiled += tiles && got > 0;
        }
        if (got < 0) {
            print_error("  %s a %s b %s variant %d rank %d", expr, bcg_dtype_name(t),
                        bcg_dtype_name(tb), variant, rank);
            for (int d = 0; d < rank; d++)
                print_error(" %lld@%lld,%lld,%lld", (long long)shape[d], (long long)va.strides[d],
                            (long long)vb.strides[d], (long long)vc.strides[d]);
            print_error("\n");
        }
    }
    for (int i = 0; i < 3; i++)
        guarded_free(&memory[i]);
    print_message("# %d trees over a transposed input and a per-row one, %d in 2-D tiles; "
                  "%d of %d with over 12 operations fused in them\n",
                  checked, tiled, large_tiled, large);
    assert_int_equal(failures, 0);
    assert_true(tiled * 10 >= checked * 8); /* 109 of 120; main 77 */
    if (vex_cpu_ok())
        assert_true(large >= 10 && large_tiled * 10 >= large * 8); /* 21 of 24; main 13 */
}

int main(void)
{
    state = seeded_stream(state);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transposed_layouts),
        cmocka_unit_test(test_repeated_subtrees),
        cmocka_unit_test(test_dropped_operands),
        cmocka_unit_test(test_reversed_runs),
        cmocka_unit_test(test_strided_single_operations),
        cmocka_unit_test(test_stream_whole_lines),
        cmocka_unit_test(test_transposed_not_in_place),
        cmocka_unit_test(test_long_stride_costly),
        cmocka_unit_test(test_reversed_trees),
        cmocka_unit_test(test_spaced_layouts),
        cmocka_unit_test(test_transposed_far),
        cmocka_unit_test(test_broadcast_rows),
        cmocka_unit_test(test_rows_gate),
        cmocka_unit_test(test_transposed_gather_blocks),
        cmocka_unit_test(test_rows_inline),
        cmocka_unit_test(test_transposed_short_runs),
        cmocka_unit_test(test_transposed_short_dimension),
        cmocka_unit_test(test_fused_past_temporaries),
        cmocka_unit_test(test_transposed_copy),
        cmocka_unit_test(test_transposed_register_blocks),
        cmocka_unit_test(test_rows_in_place_one_operation),
        cmocka_unit_test(test_float_rows_overlap),
        cmocka_unit_test(test_row_groups),
        cmocka_unit_test(test_short_groups_flat),
        cmocka_unit_test(test_planes_gathered_once),
        cmocka_unit_test(test_medium_rows_leaves),
        cmocka_unit_test(test_float_hoisted),
        cmocka_unit_test(test_float_hoisted_functions),
        cmocka_unit_test(test_transposed_per_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
