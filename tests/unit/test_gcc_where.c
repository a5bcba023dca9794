/* test_gcc_where.c - the plain C (bcg_emit's, which the cc backend and the
 * AOT form share) compiled by the system gcc at -O3 with AVX2
 * (-march=x86-64-v3) and, where the CPU has AVX-512, -march=native, against
 * the reference evaluator bit for bit (compare.h: any NaN for a NaN).
 *
 * gcc 12.2 vectorised `c ? x[j] : y` wrongly when c read an operand
 * backwards and the loop body held two or more such statements (a masked
 * load whose mask was not reversed: tests/gcc/gcc12_masked_load.c); the
 * plain form now writes where as bcg_select_T (gen/cexpr.c put_select).  The
 * cases: seeded random trees of where, minimum, maximum, clip, abs, sign,
 * casts and arithmetic with comparisons as conditions, over every numeric
 * dtype, operands reversed, strided, broadcast and read against a page that
 * faults (guarded.h), in loops unrolled by 2 to 6.  All the kernels of a
 * batch are compiled by one gcc command into one shared object. */
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* before cmocka.h, whose fail() macro would otherwise rewrite util.c's fail */
#include "internal.h"
#include "aot.h"

#include <setjmp.h>
#include <cmocka.h>

#include "compare.h"
#include "guarded.h"

enum { CASES = 32, OPERANDS = 4 };

typedef void (*kernel_fn)(void *, const void *const *);
/* an AOT kernel: out, a, b, c, d (its parameters are typed pointers to the
 * operands' elements; all pointers alike in the x86-64 ABI) */
typedef void (*aot_fn)(void *, const void *, const void *, const void *, const void *);

static uint64_t random_state = 0x2545f4914f6cdd1dull;
static uint64_t next(void) { return xorshift64(&random_state); }
static int below(int n) { return (int)(next() % (uint64_t)n); }

static const bcg_dtype value_dtypes[] = {
    BCG_F64, BCG_F32, BCG_I64, BCG_I32, BCG_I16, BCG_I8,
    BCG_U64, BCG_U32, BCG_U16, BCG_U8, BCG_F16, BCG_BF16,
};
enum { VALUE_DTYPES = (int)(sizeof value_dtypes / sizeof value_dtypes[0]) };

/* ---- random trees ---- */

typedef struct text {
    char s[768];
    size_t n;
} text;

static void put(text *t, const char *s)
{
    size_t len = strlen(s);
    if (t->n + len < sizeof t->s) {
        memcpy(t->s + t->n, s, len + 1);
        t->n += len;
    }
}

static void leaf(text *t)
{
    static const char *const leaves[] = {"a", "b", "c", "d", "a", "b", "c", "d", "3"};
    put(t, leaves[below((int)(sizeof leaves / sizeof leaves[0]))]);
}

static void value_tree(text *t, int depth);

static void condition_tree(text *t, int depth)
{
    static const char *const compare[] = {" != ", " < ", " == ", " >= ", " > "};
    if (depth >= 2 && below(4) == 0) { /* the AOT form's && and || */
        put(t, "(");
        condition_tree(t, depth - 1);
        put(t, below(2) ? " & " : " | ");
        condition_tree(t, depth - 1);
        put(t, ")");
        return;
    }
    put(t, "(");
    value_tree(t, depth - 1 - below(2));
    put(t, compare[below(5)]);
    if (below(2))
        leaf(t);
    else
        put(t, below(2) ? "3" : "2");
    put(t, ")");
}

/* Mostly where, minimum and maximum, as the gcc bug needs a load in a
 * side of a ?: (after inlining: minimum's helper is one too). */
static void value_tree(text *t, int depth)
{
    if (depth <= 0) {
        leaf(t);
        return;
    }
    switch (below(24)) {
    case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 10:
        put(t, "where(");
        condition_tree(t, depth);
        put(t, ", ");
        value_tree(t, depth - 1 - below(2));
        put(t, ", ");
        value_tree(t, depth - 1 - below(2));
        put(t, ")");
        return;
    case 11: case 12: case 13: case 14: case 15: case 16: case 17:
        put(t, below(2) ? "minimum(" : "maximum(");
        value_tree(t, depth - 1 - below(2));
        put(t, ", ");
        value_tree(t, depth - 1 - below(2));
        put(t, ")");
        return;
    case 18: case 19:
        put(t, "clip(");
        value_tree(t, depth - 1);
        put(t, ", 1, 5)");
        return;
    case 20:
        put(t, below(2) ? "abs(" : "sign(");
        value_tree(t, depth - 1);
        put(t, ")");
        return;
    case 21: { /* a conversion */
        const char *name = bcg_dtype_name(value_dtypes[below(VALUE_DTYPES)]);
        put(t, name);
        put(t, "(");
        value_tree(t, depth - 1);
        put(t, ")");
        return;
    }
    default:
        put(t, "(");
        value_tree(t, depth - 1);
        put(t, below(2) ? " + " : " * ");
        value_tree(t, depth - 1);
        put(t, ")");
        return;
    }
}

/* ---- cases ---- */

typedef struct gcc_case {
    text expr;
    bcg_dtype dtype[OPERANDS];
    int64_t shape[OPERANDS][2];
    int64_t strides[OPERANDS][2];
    bool at_end[OPERANDS];
    uint64_t fill_seed;
    bool emitted, reversed, selects, looped;
} gcc_case;

static void make_case(gcc_case *k)
{
    memset(k, 0, sizeof *k);
    int depth = below(6);
    value_tree(&k->expr, depth < 3 ? 1 : depth < 5 ? 2 : 3);
    if (!strstr(k->expr.s, "where(")) { /* a where at the root then */
        text inner = k->expr;
        k->expr.n = 0;
        k->expr.s[0] = 0;
        put(&k->expr, "where(a != 3, ");
        put(&k->expr, inner.s);
        put(&k->expr, ", b)");
    }
    bcg_dtype t = value_dtypes[below(VALUE_DTYPES)];
    int64_t m = 2 + below(4), n = 40 + below(100);
    /* mostly reversed runs (the bug's), and forward, strided and
     * reversed-strided ones */
    static const int64_t inner[] = {-1, -1, -1, -1, 1, 1, -2, 2};
    for (int i = 0; i < OPERANDS; i++) {
        k->dtype[i] = below(16) ? t : value_dtypes[below(VALUE_DTYPES)];
        int kind = below(8); /* 0..5 full, 6 a row, 7 a column */
        int64_t s = inner[below(8)], reach = (s < 0 ? -s : s) * n + below(3);
        k->shape[i][0] = kind == 6 ? 1 : m;
        k->shape[i][1] = kind == 7 ? 1 : n;
        k->strides[i][0] = below(4) ? reach : -reach;
        k->strides[i][1] = s;
        /* (not against the page after them when read backwards with gaps,
         * stride -2: gcc 12.2 -O3 then loads a vector past the run's first
         * element, whatever the expression, a + b too; another gcc bug,
         * tests/gcc/gcc12_reversed_gap_overread.c) */
        k->at_end[i] = below(2) && s != -2;
        k->reversed |= s < 0 && kind != 7;
    }
    if (below(2) == 0) { /* the reduction's shape (tests/gcc): reversed a, forward rest */
        static const char *const shapes[] = {
            "where(a %s 3, b, c)", "where(a %s 3, minimum(c, b), b)",
            "where(a %s 3, maximum(b, c), a)", "where(a %s 2, where(b %s 3, c, d), a)",
            "minimum(where(a %s b, b, c), d)", "where(a %s 3, clip(b, 1, 5), c)",
            "where((a %s 3) | (b > 2), c, d)",
        };
        static const char *const compare[] = {"!=", "<", "==", ">=", ">"};
        const char *op = compare[below(5)];
        k->expr.n = (size_t)snprintf(k->expr.s, sizeof k->expr.s, shapes[below(7)], op, op);
        for (int i = 0; i < OPERANDS; i++) {
            k->dtype[i] = t;
            k->shape[i][0] = m;
            k->shape[i][1] = n;
            k->strides[i][1] = i == 0 ? -1 : 1;
            k->strides[i][0] = n + below(2);
        }
        k->reversed = true;
    }
    k->fill_seed = next() | 1;
}

static void operands_of(const gcc_case *k, bcg_operand *ops)
{
    static const char *const names[OPERANDS] = {"a", "b", "c", "d"};
    for (int i = 0; i < OPERANDS; i++)
        ops[i] = (bcg_operand){names[i], k->dtype[i], 2, k->shape[i], k->strides[i]};
}

static void options_of(int index, bcg_options *options)
{
    bcg_options_init(options);
    options->unroll_limit = 0; /* loops, which gcc's loop vectoriser sees */
    options->unroll_factor = 2 + index % 5;
}

/* Fills COUNT elements of dtype T with small numbers (and some NaN and -0.0
 * for floats), so that the conditions go both ways. */
static void fill(char *p, bcg_dtype t, int64_t count, uint64_t *state)
{
    size_t size = bcg_dtype_size(t);
    for (int64_t i = 0; i < count; i++) {
        uint64_t r = xorshift64(state);
        double v = (double)(int)(r % 9) - (dtype_kind_of(t) == KIND_UINT ? 0 : 3);
        if (dtype_kind_of(t) == KIND_FLOAT && r % 17 == 0)
            v = r % 2 ? NAN : -0.0;
        char *at = p + (size_t)i * size;
        switch (t) {
        case BCG_F64: memcpy(at, &v, 8); break;
        case BCG_F32: { float f = (float)v; memcpy(at, &f, 4); break; }
        case BCG_F16: { uint16_t h = bcg_f16_from_f64(v); memcpy(at, &h, 2); break; }
        case BCG_BF16: { uint16_t h = bcg_bf16_from_f32((float)v); memcpy(at, &h, 2); break; }
        default: { int64_t x = (int64_t)v; memcpy(at, &x, size); break; } /* little-endian */
        }
    }
}

/* Writes the C of every even case (of those bcg_emit takes) into UNIT,
 * kernel I as the function kI; returns how many bcg_emit took. */
static int emit_cases(gcc_case *cases, FILE *unit)
{
    int emitted = 0;
    for (int i = 0; i < CASES; i++) {
        gcc_case *k = &cases[i];
        bcg_operand ops[OPERANDS];
        bcg_options options;
        operands_of(k, ops);
        options_of(i, &options);
        char name[16], *source = NULL;
        snprintf(name, sizeof name, "k%d", i);
        if (bcg_emit(k->expr.s, ops, OPERANDS, &options, name, &source, NULL) != BCG_OK)
            continue;
        k->emitted = true;
        k->selects = strstr(source, "bcg_select_") != NULL;
        k->looped = strstr(source, "for (") != NULL;
        emitted++;
        if (i % 2) { /* the odd cases go into the AOT pair instead */
            bcg_free(source);
            continue;
        }
        /* one translation unit for all: each kernel's bcg_ names (types,
         * helpers) made its own, kI_ */
        for (const char *p = source; *p; p++) {
            if (strncmp(p, "bcg_", 4) == 0) {
                fprintf(unit, "%s_", name);
                p += 3;
            } else {
                fputc(*p, unit);
            }
        }
        bcg_free(source);
    }
    return emitted;
}

/* Writes the AOT pair of every odd case bcg_emit took (kernel I as aotI)
 * into DIR/pair.c and DIR/pair.h. */
static void emit_aot_pair(const gcc_case *cases, const char *dir)
{
    static aot_kernel kernels[CASES];
    static bcg_operand ops[CASES][OPERANDS];
    static char names[CASES][16];
    int count = 0;
    for (int i = 0; i < CASES; i++) {
        if (!cases[i].emitted || i % 2 == 0)
            continue;
        aot_kernel *a = &kernels[count++];
        memset(a, 0, sizeof *a);
        operands_of(&cases[i], ops[i]);
        snprintf(names[i], sizeof names[i], "aot%d", i);
        a->name = names[i];
        a->expression = cases[i].expr.s;
        a->operands = ops[i];
        a->operand_count = OPERANDS;
        options_of(i, &a->options);
    }
    aot_request request = {count, kernels, false, 64, "test_gcc_where", "pair.c", "pair.h"};
    char *source = NULL, *header = NULL;
    bcg_error err;
    if (aot_generate(&request, &source, &header, &err) != BCG_OK)
        print_error("aot_generate: %s\n", err.message);
    assert_true(source && header);
    const char *texts[2] = {source, header}, *files[2] = {"pair.c", "pair.h"};
    for (int f = 0; f < 2; f++) {
        char path[96];
        snprintf(path, sizeof path, "%s/%s", dir, files[f]);
        FILE *out = fopen(path, "w");
        assert_non_null(out);
        fputs(texts[f], out);
        fclose(out);
    }
    mem_free(source);
    mem_free(header);
}

static guarded operand_memory[OPERANDS];

/* Runs case I of LIBRARY against the reference evaluator; false (and a
 * message) when they differ. */
static bool check_case(void *library, bool aot, const gcc_case *k, int i, const char *march)
{
    bcg_operand ops[OPERANDS];
    bcg_options options;
    operands_of(k, ops);
    options_of(i, &options);
    arena *a = arena_new();
    compile *front = a ? arena_alloc(a, sizeof *front) : NULL;
    assert_non_null(front);
    bcg_error err;
    front->arena = a;
    front->err = &err;
    assert_int_equal(compile_front(front, k->expr.s, ops, OPERANDS, &options), BCG_OK);
    front->err = NULL;

    uint64_t state = k->fill_seed;
    const void *inputs[OPERANDS];
    for (int j = 0; j < OPERANDS; j++) {
        int64_t low = 0, high = 0;
        for (int d = 0; d < 2; d++) {
            int64_t reach = k->strides[j][d] * (k->shape[j][d] - 1);
            *(reach < 0 ? &low : &high) += reach;
        }
        size_t size = bcg_dtype_size(k->dtype[j]);
        char *data = guarded_alloc(&operand_memory[j], (size_t)(high - low + 1) * size,
                                   k->at_end[j]);
        fill(data, k->dtype[j], high - low + 1, &state);
        inputs[j] = data + (size_t)(-low) * size;
    }
    bcg_dtype t = front->out_dtype;
    int64_t elements = front->plan->elements;
    size_t bytes = (size_t)elements * bcg_dtype_size(t) + 1;
    char *want = malloc(bytes), *got = malloc(bytes);
    assert_true(want && got);
    memset(got, 0x5a, bytes);
    assert_int_equal(eval_run(front, want, inputs, NULL), BCG_OK);

    char name[16];
    snprintf(name, sizeof name, aot ? "aot%d" : "k%d", i);
    if (aot) {
        aot_fn fn;
        *(void **)&fn = dlsym(library, name);
        assert_non_null(fn);
        fn(got, inputs[0], inputs[1], inputs[2], inputs[3]);
    } else {
        kernel_fn fn;
        *(void **)&fn = dlsym(library, name);
        assert_non_null(fn);
        fn(got, inputs);
    }
    int64_t at = first_difference(got, want, t, elements, false);
    if (at >= 0) {
        uint64_t g = 0, w = 0;
        memcpy(&g, got + at * (int64_t)bcg_dtype_size(t), bcg_dtype_size(t));
        memcpy(&w, want + at * (int64_t)bcg_dtype_size(t), bcg_dtype_size(t));
        print_error("gcc -O3 -march=%s, %s case %d: %s over", march, aot ? "AOT" : "plain", i,
                    k->expr.s);
        for (int j = 0; j < OPERANDS; j++)
            print_error(" %s=%s[%lld,%lld]@[%lld,%lld]", ops[j].name,
                        bcg_dtype_name(k->dtype[j]), (long long)k->shape[j][0],
                        (long long)k->shape[j][1], (long long)k->strides[j][0],
                        (long long)k->strides[j][1]);
        print_error(" (unroll %d, %s): element %lld of %lld is 0x%llx, the reference "
                    "evaluator's 0x%llx\n", options.unroll_factor, bcg_dtype_name(t),
                    (long long)at, (long long)elements, (unsigned long long)g,
                    (unsigned long long)w);
    }
    free(want);
    free(got);
    arena_free(a);
    return at < 0;
}

static bool have_gcc(void) { return system("gcc --version >/dev/null 2>&1") == 0; }

static void test_gcc_o3_where_trees(void **state)
{
    (void)state;
    if (!have_gcc())
        skip();
    static gcc_case cases[CASES];
    for (int i = 0; i < CASES; i++)
        make_case(&cases[i]);
    char dir[] = "/tmp/bcg_gcc_where_XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/kernels.c", dir);
    FILE *unit = fopen(path, "w");
    assert_non_null(unit);
    int emitted = emit_cases(cases, unit);
    fclose(unit);
    emit_aot_pair(cases, dir);

    /* the share of cases that hold what the test is about: emitted, looped,
     * a where as a select and an operand read backwards */
    int subject = 0;
    for (int i = 0; i < CASES; i++)
        subject += cases[i].emitted && cases[i].looped && cases[i].selects && cases[i].reversed;
    print_message("gcc where trees: %d cases, %d emitted, %d looped selects over reversed "
                  "operands\n", CASES, emitted, subject);
    assert_true(emitted >= CASES * 9 / 10);
    assert_true(subject >= CASES / 2);

    __builtin_cpu_init();
    const char *marches[2] = {"x86-64-v3", "native"};
    int march_count = __builtin_cpu_supports("avx512f") ? 2 : 1;
    if (!__builtin_cpu_supports("avx2"))
        march_count = 0; /* (a v3 library would not run here) */
    /* both libraries by one command, the two gcc runs side by side */
    char command[640] = "", so[2][80];
    size_t used = 0;
    for (int v = 0; v < march_count; v++) {
        snprintf(so[v], sizeof so[v], "%s/%s.so", dir, marches[v]);
        used += (size_t)snprintf(command + used, sizeof command - used,
                                 "%sgcc -std=c11 -O3 -march=%s -w -shared -fPIC -o %s %s %s/pair.c "
                                 "-lm%s", v ? " " : "(", marches[v], so[v], path, dir,
                                 v + 1 < march_count ? " & " : "; wait)");
        assert_true(used < sizeof command);
    }
    if (march_count > 0)
        assert_int_equal(system(command), 0);
    int failures = 0;
    for (int v = 0; v < march_count; v++) {
        void *library = dlopen(so[v], RTLD_NOW | RTLD_LOCAL);
        assert_non_null(library);
        for (int i = 0; i < CASES; i++)
            if (cases[i].emitted)
                failures += !check_case(library, i % 2, &cases[i], i, marches[v]);
        dlclose(library);
        unlink(so[v]);
    }
    unlink(path);
    const char *pair[2] = {"pair.c", "pair.h"};
    for (int f = 0; f < 2; f++) {
        snprintf(path, sizeof path, "%s/%s", dir, pair[f]);
        unlink(path);
    }
    rmdir(dir);
    for (int j = 0; j < OPERANDS; j++)
        guarded_free(&operand_memory[j]);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gcc_o3_where_trees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
