/* test_emit.c - the emitter: the text it writes (hand-built trees and plans,
 * so these tests do not depend on the parser or the planner), that the text
 * compiles warning-free under gcc and clang -std=c99 -Wall -Wextra -Werror
 * -pedantic, that gcc-compiled kernels compute hand-checked results, and a
 * differential sweep of every operator over every dtype: emitted kernel
 * through libtcc against the reference evaluator, bit for bit. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* before cmocka.h, whose fail() macro would otherwise rewrite util.c's fail */
#include "internal.h"
#include "kir.h"
#include "vex.h"

#include <setjmp.h>
#include <cmocka.h>

/* ---- hand-built compiles ------------------------------------------------- */

typedef struct fixture {
    arena *arena;
    compile c;
    bcg_error err;
    broadcast_result broadcast;
    plan plan;
    compile_operand operands[4];
} fixture;

static void fx_init(fixture *f, int input_count)
{
    memset(f, 0, sizeof *f);
    f->arena = arena_new();
    assert_non_null(f->arena);
    error_clear(&f->err);
    f->c.arena = f->arena;
    f->c.err = &f->err;
    bcg_options_init(&f->c.options);
    f->c.operand_count = input_count;
    f->c.operands = f->operands;
    f->c.broadcast = &f->broadcast;
    f->c.plan = &f->plan;
    f->plan.operand_count = input_count + 1;
    f->plan.stride = arena_alloc(f->arena, sizeof *f->plan.stride * (size_t)(input_count + 1));
    assert_non_null(f->plan.stride);
    for (int i = 0; i < input_count; i++) {
        f->operands[i].name = "secret_name";
        f->operands[i].dtype = BCG_F32;
    }
}

static void fx_free(fixture *f) { arena_free(f->arena); }

/* Input I: dtype and shape (C-contiguous strides). */
static void fx_input(fixture *f, int i, bcg_dtype t, int rank, const int64_t *dims)
{
    compile_operand *op = &f->operands[i];
    op->dtype = t;
    op->shape.rank = rank;
    int64_t step = 1;
    for (int d = rank - 1; d >= 0; d--) {
        op->shape.dims[d] = dims[d];
        op->strides[d] = step;
        step *= dims[d];
    }
}

/* The result shape and the plan's loops; strides are set with fx_strides. */
static void fx_loops(fixture *f, int rank, const int64_t *dims, int loop_count,
                     const int64_t *extents)
{
    f->broadcast.result.rank = rank;
    int64_t elements = 1;
    for (int d = 0; d < rank; d++) {
        f->broadcast.result.dims[d] = dims[d];
        elements *= dims[d];
    }
    f->plan.loop_count = loop_count;
    f->plan.elements = elements;
    f->plan.empty = elements == 0;
    for (int l = 0; l < loop_count; l++) {
        f->plan.extent[l] = extents[l];
        f->plan.dim_first[l] = l;
        f->plan.dim_count[l] = 1;
        f->plan.order[l] = l;
    }
}

/* Plan operand K (0 = output) strides, one per loop. */
static void fx_strides(fixture *f, int k, const int64_t *strides)
{
    for (int l = 0; l < f->plan.loop_count; l++)
        f->plan.stride[k][l] = strides[l];
}

static expr_node *new_node(fixture *f, expr_op op, bcg_dtype t)
{
    expr_node *n = arena_alloc(f->arena, sizeof *n);
    assert_non_null(n);
    n->op = op;
    n->dtype = t;
    n->column = 1;
    return n;
}

static expr_node *operand(fixture *f, int k)
{
    expr_node *n = new_node(f, OP_OPERAND, f->operands[k].dtype);
    n->operand = k;
    return n;
}

static expr_node *float_literal(fixture *f, double v, bcg_dtype t)
{
    expr_node *n = new_node(f, OP_LITERAL, t);
    n->literal_is_float = true;
    n->value.f = v;
    return n;
}

static expr_node *int_literal(fixture *f, int64_t v, bcg_dtype t)
{
    expr_node *n = new_node(f, OP_LITERAL, t);
    n->value.i = v;
    return n;
}

static expr_node *unary(fixture *f, expr_op op, bcg_dtype t, expr_node *a)
{
    expr_node *n = new_node(f, op, t);
    n->arg_count = 1;
    n->args[0] = a;
    return n;
}

static expr_node *binary(fixture *f, expr_op op, bcg_dtype t, expr_node *a, expr_node *b)
{
    expr_node *n = new_node(f, op, t);
    n->arg_count = 2;
    n->args[0] = a;
    n->args[1] = b;
    return n;
}

static const char *fx_emit(fixture *f, expr_node *root)
{
    f->c.root = root;
    bcg_status s = emit_kernel(&f->c);
    if (s != BCG_OK)
        print_error("emit_kernel: %s\n", f->err.message);
    assert_int_equal(s, BCG_OK);
    assert_non_null(f->c.source);
    return f->c.source;
}

static int count_of(const char *text, const char *needle)
{
    int count = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        count++;
    return count;
}

#define assert_contains(text, needle)                                                   \
    do {                                                                                \
        if (!strstr((text), (needle))) {                                                \
            fprintf(stderr, "missing \"%s\" in:\n%s\n", (needle), (text));              \
            fail();                                                                     \
        }                                                                               \
    } while (0)

#define assert_lacks(text, needle)                                                      \
    do {                                                                                \
        if (strstr((text), (needle))) {                                                 \
            fprintf(stderr, "unexpected \"%s\" in:\n%s\n", (needle), (text));           \
            fail();                                                                     \
        }                                                                               \
    } while (0)

/* a: f32 (2,3), b: f32 (3,), the expression a * b + 1.0 */
static const char *emit_small(fixture *f, int unroll_limit, int unroll_factor)
{
    fx_init(f, 2);
    fx_input(f, 0, BCG_F32, 2, (int64_t[]){2, 3});
    fx_input(f, 1, BCG_F32, 1, (int64_t[]){3});
    fx_loops(f, 2, (int64_t[]){2, 3}, 2, (int64_t[]){2, 3});
    fx_strides(f, 0, (int64_t[]){3, 1});
    fx_strides(f, 1, (int64_t[]){3, 1});
    fx_strides(f, 2, (int64_t[]){0, 1});
    f->c.options.unroll_limit = unroll_limit;
    f->c.options.unroll_factor = unroll_factor;
    expr_node *root = binary(f, OP_ADD, BCG_F32,
                             binary(f, OP_MUL, BCG_F32, operand(f, 0), operand(f, 1)),
                             float_literal(f, 1.0, BCG_F32));
    return fx_emit(f, root);
}

/* ---- text ----------------------------------------------------------------- */

static void test_small_output_is_fully_unrolled(void **state)
{
    (void)state;
    fixture f;
    const char *src = emit_small(&f, 16, 4);
    assert_lacks(src, "for (");
    assert_contains(src, "out[0] = ((in0[0] * in1[0]) + 1.0f);");
    assert_contains(src, "out[5] = ((in0[5] * in1[2]) + 1.0f);");
    assert_int_equal(count_of(src, "out["), 6);
    assert_contains(src, "void bcg_kernel(void *output, const void *const *inputs)");
    fx_free(&f);
}

static void test_hermetic_and_no_user_names(void **state)
{
    (void)state;
    fixture f;
    const char *src = emit_small(&f, 0, 4);
    assert_lacks(src, "#");
    assert_lacks(src, "secret_name");
    assert_lacks(src, "include");
    fx_free(&f);
}

static void test_header_describes_kernel(void **state)
{
    (void)state;
    fixture f;
    const char *src = emit_small(&f, 16, 4);
    assert_contains(src, "out = ((in0 * in1) + 1.0)");
    assert_contains(src, "in0:  f32 (2,3), strides (3,1)");
    assert_contains(src, "in1:  f32 (3), strides (1)");
    assert_contains(src, "out:  f32 (2,3), 6 elements");
    assert_contains(src, "loop 0");
    assert_contains(src, "fully unrolled");
    fx_free(&f);
}

static void test_limit_zero_gives_loops(void **state)
{
    (void)state;
    fixture f;
    const char *src = emit_small(&f, 0, 4);
    assert_contains(src, "for (long i0 = 0; i0 < 2; i0++) {");
    /* the inner loop (3 trips) is shorter than 2 groups: written out */
    assert_lacks(src, "long i1");
    assert_contains(src, "out[out_pos + 2] = ((in0[in0_pos + 2] * in1[2]) + 1.0f);");
    assert_contains(src, "out_pos += 3;");
    /* in1 does not move along loop 0: no position for it */
    assert_lacks(src, "in1_pos");
    fx_free(&f);
}

/* one loop of 10 trips with factor 4: 2 groups in a loop, 2 statements after */
static const char *emit_vector(fixture *f, int64_t extent, int factor)
{
    fx_init(f, 1);
    fx_input(f, 0, BCG_F64, 1, (int64_t[]){extent});
    fx_loops(f, 1, (int64_t[]){extent}, 1, (int64_t[]){extent});
    fx_strides(f, 0, (int64_t[]){1});
    fx_strides(f, 1, (int64_t[]){-2}); /* a reversed, strided view */
    f->c.options.unroll_limit = 0;
    f->c.options.unroll_factor = factor;
    return fx_emit(f, unary(f, OP_SQRT, BCG_F64, operand(f, 0)));
}

static void test_unroll_factor_with_static_remainder(void **state)
{
    (void)state;
    fixture f;
    const char *src = emit_vector(&f, 10, 4);
    assert_contains(src, "for (long i0 = 0; i0 < 2; i0++) {");
    assert_contains(src, "out[out_pos + 3] = sqrt(in0[in0_pos - 6]);");
    assert_contains(src, "in0_pos -= 8;");
    assert_contains(src, "out_pos += 4;");
    /* 4 statements in the loop, 2 after it; no remainder branch */
    assert_int_equal(count_of(src, "out[out_pos"), 6);
    assert_lacks(src, "if (");
    assert_contains(src, "double sqrt(double);");
    fx_free(&f);

    src = emit_vector(&f, 10, 1);
    assert_contains(src, "for (long i0 = 0; i0 < 10; i0++) {");
    assert_int_equal(count_of(src, "out[out_pos"), 1);
    fx_free(&f);
}

/* out (4,8) = a (4,8) * b (4,1) + c ():  b is loaded once per row, c once */
static void test_broadcast_operands_are_hoisted(void **state)
{
    (void)state;
    fixture f;
    fx_init(&f, 3);
    fx_input(&f, 0, BCG_F32, 2, (int64_t[]){4, 8});
    fx_input(&f, 1, BCG_F32, 2, (int64_t[]){4, 1});
    fx_input(&f, 2, BCG_F32, 0, NULL);
    fx_loops(&f, 2, (int64_t[]){4, 8}, 2, (int64_t[]){4, 8});
    fx_strides(&f, 0, (int64_t[]){8, 1});
    fx_strides(&f, 1, (int64_t[]){8, 1});
    fx_strides(&f, 2, (int64_t[]){1, 0});
    fx_strides(&f, 3, (int64_t[]){0, 0});
    f.c.options.unroll_limit = 0;
    /* (a * b) + (c * 2.0) : the right side is invariant everywhere */
    expr_node *root = binary(&f, OP_ADD, BCG_F32,
                             binary(&f, OP_MUL, BCG_F32, operand(&f, 0), operand(&f, 1)),
                             binary(&f, OP_MUL, BCG_F32, operand(&f, 2),
                                    float_literal(&f, 2.0, BCG_F32)));
    const char *src = fx_emit(&f, root);
    assert_contains(src, "const float shared0 = (in2[0] * 2.0f);");
    assert_contains(src, "const float in1_value = in1[in1_pos];");
    assert_contains(src, "out[out_pos + 3] = ((in0[in0_pos + 3] * in1_value) + shared0);");
    assert_lacks(src, "in1[in1_pos +");
    /* shared0 before the loops, in1_value inside loop 0 before loop 1 */
    const char *shared = strstr(src, "shared0 =");
    const char *outer = strstr(src, "for (long i0");
    const char *load = strstr(src, "in1_value =");
    const char *inner = strstr(src, "for (long i1");
    assert_true(shared && outer && load && inner);
    assert_true(shared < outer && outer < load && load < inner);
    fx_free(&f);
}

/* In place with a zero-stride output: loads of the aliased input must stay
 * inside the loop, since every trip writes what the next one reads. */
static void test_inplace_operand_is_never_hoisted(void **state)
{
    (void)state;
    fixture f;
    fx_init(&f, 1);
    fx_input(&f, 0, BCG_F32, 1, (int64_t[]){8});
    f.operands[0].strides[0] = 0;
    fx_loops(&f, 1, (int64_t[]){8}, 1, (int64_t[]){8});
    fx_strides(&f, 0, (int64_t[]){0});
    fx_strides(&f, 1, (int64_t[]){0});
    f.c.options.inplace = 0;
    f.c.options.unroll_limit = 0;
    const char *src = fx_emit(&f, binary(&f, OP_ADD, BCG_F32, operand(&f, 0),
                                        float_literal(&f, 1.0, BCG_F32)));
    assert_lacks(src, "in0_value");
    /* 2 groups of 4 statements, each reading the element it writes */
    assert_contains(src, "for (long i0 = 0; i0 < 2; i0++) {");
    assert_int_equal(count_of(src, "out[0] = (in0[0] + 1.0f);"), 4);
    assert_contains(src, "also the output");
    fx_free(&f);
}

static void test_empty_output_does_nothing(void **state)
{
    (void)state;
    fixture f;
    fx_init(&f, 1);
    fx_input(&f, 0, BCG_I32, 2, (int64_t[]){0, 3});
    fx_loops(&f, 2, (int64_t[]){0, 3}, 0, NULL);
    const char *src = fx_emit(&f, binary(&f, OP_FLOORDIV, BCG_I32, operand(&f, 0),
                                        int_literal(&f, 2, BCG_I32)));
    assert_contains(src, "(void)output;");
    assert_contains(src, "(void)inputs;");
    assert_lacks(src, "out[");
    assert_lacks(src, "static ");
    fx_free(&f);
}

static const char *emit_binary_i32(fixture *f, expr_op op)
{
    fx_init(f, 2);
    fx_input(f, 0, BCG_I32, 1, (int64_t[]){3});
    fx_input(f, 1, BCG_I32, 1, (int64_t[]){3});
    fx_loops(f, 1, (int64_t[]){3}, 1, (int64_t[]){3});
    for (int k = 0; k < 3; k++)
        fx_strides(f, k, (int64_t[]){1});
    return fx_emit(f, binary(f, op, BCG_I32, operand(f, 0), operand(f, 1)));
}

static void test_helpers_only_when_used(void **state)
{
    (void)state;
    fixture f;
    const char *src = emit_binary_i32(&f, OP_ADD);
    assert_lacks(src, "static ");
    assert_contains(src, "(bcg_i32)((unsigned int)in0[0] + (unsigned int)in1[0])");
    fx_free(&f);

    src = emit_binary_i32(&f, OP_FLOORDIV);
    assert_contains(src, "static bcg_i32 bcg_floordiv_i32(bcg_i32 a, bcg_i32 b)");
    assert_contains(src, "bcg_floordiv_i32(in0[2], in1[2])");
    assert_lacks(src, "bcg_mod_");
    assert_lacks(src, "bcg_pow_");
    assert_int_equal(count_of(src, "static "), 1);
    fx_free(&f);

    src = emit_binary_i32(&f, OP_SHR);
    assert_contains(src, "static bcg_i32 bcg_shr_i32(");
    assert_lacks(src, "bcg_shl_");
    assert_lacks(src, "double ");
    fx_free(&f);
}

static void test_math_prototypes_only_when_used(void **state)
{
    (void)state;
    fixture f;
    fx_init(&f, 1);
    fx_input(&f, 0, BCG_F32, 1, (int64_t[]){2});
    fx_loops(&f, 1, (int64_t[]){2}, 1, (int64_t[]){2});
    fx_strides(&f, 0, (int64_t[]){1});
    fx_strides(&f, 1, (int64_t[]){1});
    const char *src = fx_emit(&f, binary(&f, OP_MOD, BCG_F32, operand(&f, 0),
                                        unary(&f, OP_EXP, BCG_F32, operand(&f, 0))));
    assert_contains(src, "float expf(float);");
    assert_contains(src, "float fmodf(float, float);");
    assert_contains(src, "float copysignf(float, float);");
    assert_contains(src, "static float bcg_mod_f32(float a, float b)");
    assert_lacks(src, "double exp(");
    assert_lacks(src, "floorf");
    assert_lacks(src, "sqrt");
    fx_free(&f);
}

static void test_function_name(void **state)
{
    (void)state;
    fixture f;
    fx_init(&f, 1);
    fx_input(&f, 0, BCG_F64, 0, NULL);
    fx_loops(&f, 0, NULL, 0, NULL);
    expr_node *root = operand(&f, 0);
    f.c.function_name = "my_kernel_7";
    const char *src = fx_emit(&f, root);
    assert_contains(src, "void my_kernel_7(void *output");
    assert_contains(src, "out[0] = in0[0];");
    const char *bad[] = {"int", "1abc", "__fixunsdfdi", "_Bool", "sqrtf", "bcg_to_i8",
                         "bcg_u8", "a-b", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        error_clear(&f.err);
        f.c.function_name = bad[i];
        assert_int_equal(emit_kernel(&f.c), BCG_ERR_USAGE);
    }
    fx_free(&f);
}

static void test_literal_spellings(void **state)
{
    (void)state;
    fixture f;
    fx_init(&f, 1);
    fx_input(&f, 0, BCG_F64, 0, NULL);
    fx_loops(&f, 0, NULL, 0, NULL);
    expr_node *sum = binary(&f, OP_ADD, BCG_F64, operand(&f, 0), float_literal(&f, 0.1, BCG_F64));
    sum = binary(&f, OP_ADD, BCG_F64, sum, float_literal(&f, HUGE_VAL, BCG_F64));
    sum = binary(&f, OP_ADD, BCG_F64, sum, float_literal(&f, -2.5e-320, BCG_F64));
    sum = binary(&f, OP_ADD, BCG_F64, sum, float_literal(&f, -0.0, BCG_F64));
    sum = binary(&f, OP_ADD, BCG_F64, sum, float_literal(&f, 1e300, BCG_F64));
    const char *src = fx_emit(&f, sum);
    assert_contains(src, " + 0.1)");
    assert_contains(src, "bcg_f64_from_bits(0x7ff0000000000000ULL)");
    assert_contains(src, "(-0x");          /* a subnormal, exact in hex */
    assert_contains(src, "(-0.0)");
    assert_contains(src, "1e+300");
    assert_contains(src, "inf");           /* in the header comment */
    fx_free(&f);

    fx_init(&f, 1);
    fx_input(&f, 0, BCG_I64, 0, NULL);
    fx_loops(&f, 0, NULL, 0, NULL);
    src = fx_emit(&f, binary(&f, OP_SUB, BCG_I64, operand(&f, 0),
                             int_literal(&f, INT64_MIN, BCG_I64)));
    assert_contains(src, "((-9223372036854775807LL) - 1)"); /* MISRA 12.1: parenthesised */
    fx_free(&f);
}

/* Integer literals in comparisons go through const locals, and an integer
 * compared with itself is folded; both keep compilers from warning. */
static void test_comparisons_avoid_decidable_forms(void **state)
{
    (void)state;
    fixture f;
    fx_init(&f, 1);
    fx_input(&f, 0, BCG_U8, 1, (int64_t[]){2});
    fx_loops(&f, 1, (int64_t[]){2}, 1, (int64_t[]){2});
    fx_strides(&f, 0, (int64_t[]){1});
    fx_strides(&f, 1, (int64_t[]){1});
    expr_node *root = binary(&f, OP_AND, BCG_BOOL,
                             binary(&f, OP_GE, BCG_BOOL, operand(&f, 0),
                                    int_literal(&f, 0, BCG_U8)),
                             binary(&f, OP_LT, BCG_BOOL, operand(&f, 0), operand(&f, 0)));
    const char *src = fx_emit(&f, root);
    /* x < x is 0, so the && is decided (fold.c) */
    assert_contains(src, "out[1] = 0;");
    fx_free(&f);

    fx_init(&f, 1);
    fx_input(&f, 0, BCG_U8, 1, (int64_t[]){2});
    fx_loops(&f, 1, (int64_t[]){2}, 1, (int64_t[]){2});
    fx_strides(&f, 0, (int64_t[]){1});
    fx_strides(&f, 1, (int64_t[]){1});
    root = binary(&f, OP_AND, BCG_BOOL,
                  binary(&f, OP_GE, BCG_BOOL, operand(&f, 0), int_literal(&f, 0, BCG_U8)),
                  binary(&f, OP_LT, BCG_BOOL, operand(&f, 0), int_literal(&f, 9, BCG_U8)));
    src = fx_emit(&f, root);
    assert_contains(src, "const bcg_u8 literal0 = 0;");
    assert_contains(src, "out[1] = ((int)(in0[1] >= literal0) & (in0[1] < literal1));");
    fx_free(&f);
}

/* ---- compiling and running -------------------------------------------------- */

/* Whether gcc or clang is installed, asked once per tool. */
static bool have_tool(const char *tool)
{
    static int known[2]; /* 0 unknown, 1 yes, -1 no; [0] gcc, [1] clang */
    int *answer = &known[strcmp(tool, "gcc") != 0];
    if (*answer == 0) {
        char command[128];
        snprintf(command, sizeof command, "%s --version >/dev/null 2>&1", tool);
        *answer = system(command) == 0 ? 1 : -1;
    }
    return *answer > 0;
}

static char *write_temp_source(const char *source)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/bcg_emit_%ld_XXXXXX.c", (long)getpid());
    int fd = mkstemps(path, 2);
    assert_true(fd >= 0);
    size_t n = strlen(source);
    assert_int_equal(write(fd, source, n), (ssize_t)n);
    close(fd);
    return path;
}

/* Compiles SOURCE with CC and the strict flags (plus EXTRA) into OUTPUT;
 * prints the diagnostics and the source when it fails. */
static bool compile_strict(const char *cc, const char *source, const char *extra,
                           const char *output)
{
    char *path = write_temp_source(source);
    char command[512], log[80];
    snprintf(log, sizeof log, "%s.log", path);
    snprintf(command, sizeof command,
             "%s -std=c99 -Wall -Wextra -Werror -pedantic %s -o %s %s >%s 2>&1", cc, extra,
             output, path, log);
    bool ok = system(command) == 0;
    if (!ok) {
        char text[2048] = "";
        FILE *f = fopen(log, "r");
        if (f) {
            text[fread(text, 1, sizeof text - 1, f)] = 0;
            fclose(f);
        }
        fprintf(stderr, "%s failed:\n%s\n--- source ---\n%s\n", cc, text, source);
    }
    unlink(path);
    unlink(log);
    return ok;
}

typedef struct built {
    arena *arena;
    compile *c;
    bcg_error err;
} built;

/* The front end and the emitter on EXPR; false (and no source) when the
 * front end rejects it (a type error, say). */
static bool build(built *b, const char *expr, const bcg_operand *ops, int count,
                  const bcg_options *options)
{
    b->arena = arena_new();
    assert_non_null(b->arena);
    b->c = arena_alloc(b->arena, sizeof *b->c);
    assert_non_null(b->c);
    error_clear(&b->err);
    b->c->arena = b->arena;
    b->c->err = &b->err;
    if (compile_front(b->c, expr, ops, count, options) != BCG_OK)
        return false;
    if (emit_kernel(b->c) != BCG_OK) {
        print_error("emit_kernel(%s): %s\n", expr, b->err.message);
        fail();
    }
    return true;
}

static void built_free(built *b) { arena_free(b->arena); }

/* Runs the kernel for EXPR compiled by gcc into a shared object. */
static void run_with_gcc(const char *expr, const bcg_operand *ops, int count, void *out,
                         const void *const *in)
{
    built b;
    assert_true(build(&b, expr, ops, count, NULL));
    char so[64];
    snprintf(so, sizeof so, "/tmp/bcg_emit_%ld.so", (long)getpid());
    assert_true(compile_strict("gcc", b.c->source, "-shared -fPIC -lm", so));
    void *library = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(library);
    kernel_fn fn;
    *(void **)&fn = dlsym(library, "bcg_kernel");
    assert_non_null(fn);
    fn(out, in);
    dlclose(library);
    unlink(so);
    built_free(&b);
}

static void test_runs_integer_division_and_shifts(void **state)
{
    (void)state;
    if (!have_tool("gcc"))
        skip();
    int64_t six[] = {6};
    bcg_operand ops[] = {{"a", BCG_I32, 1, six, NULL}, {"b", BCG_I32, 1, six, NULL}};
    int32_t a[] = {7, -7, 7, -7, INT32_MIN, 5}, b[] = {2, 2, -2, -2, -1, 0}, out[6];
    const void *in[] = {a, b};

    run_with_gcc("a // b", ops, 2, out, in);
    int32_t floordiv[] = {3, -4, -4, 3, INT32_MIN, 0};
    assert_memory_equal(out, floordiv, sizeof out);

    run_with_gcc("a % b", ops, 2, out, in);
    int32_t mod[] = {1, 1, -1, -1, 0, 0};
    assert_memory_equal(out, mod, sizeof out);

    int32_t base[] = {2, 3, -1, -1, 2, 1}, exponent[] = {10, 3, 3, -3, -1, -5};
    const void *pow_in[] = {base, exponent};
    run_with_gcc("a ** b", ops, 2, out, pow_in);
    int32_t power[] = {1024, 27, -1, -1, 0, 1};
    assert_memory_equal(out, power, sizeof out);

    bcg_operand ops8[] = {{"a", BCG_I8, 1, six, NULL}, {"b", BCG_I8, 1, six, NULL}};
    int8_t x[] = {1, 1, 1, 1, -1, -16}, y[] = {1, 7, 8, -1, 0, 3}, out8[6];
    const void *in8[] = {x, y};
    run_with_gcc("a << b", ops8, 2, out8, in8);
    int8_t shl[] = {2, -128, 0, 0, -1, -128};
    assert_memory_equal(out8, shl, sizeof out8);

    int8_t p[] = {-16, -16, 16, -1, 100, -128}, q[] = {2, 8, 9, -1, 1, 7};
    const void *shr_in[] = {p, q};
    run_with_gcc("a >> b", ops8, 2, out8, shr_in);
    int8_t shr[] = {-4, -1, 0, -1, 50, -1};
    assert_memory_equal(out8, shr, sizeof out8);

    bcg_operand opsu[] = {{"a", BCG_U8, 1, six, NULL}, {"b", BCG_U8, 1, six, NULL}};
    uint8_t u[] = {0, 5, 200, 255, 1, 0}, v[] = {1, 10, 100, 255, 0, 0}, outu[6];
    const void *inu[] = {u, v};
    run_with_gcc("a - b", opsu, 2, outu, inu);
    uint8_t difference[] = {255, 251, 100, 0, 1, 0};
    assert_memory_equal(outu, difference, sizeof outu);
}

static void test_runs_float_conversions_and_extremes(void **state)
{
    (void)state;
    if (!have_tool("gcc"))
        skip();
    int64_t six[] = {6};
    bcg_operand f64[] = {{"a", BCG_F64, 1, six, NULL}, {"b", BCG_F64, 1, six, NULL}};
    double a[] = {NAN, 1e10, -1e10, -2.7, 2.7, -0.5};
    int32_t out[6];
    const void *in[] = {a, a};
    run_with_gcc("i32(a)", f64, 2, out, in);
    int32_t truncated[] = {0, INT32_MAX, INT32_MIN, -2, 2, 0};
    assert_memory_equal(out, truncated, sizeof out);

    uint8_t bytes[6];
    double c[] = {-1.5, 300, 255.9, NAN, 0.99, -0.99};
    const void *in_c[] = {c, c};
    run_with_gcc("u8(a)", f64, 2, bytes, in_c);
    uint8_t saturated[] = {0, 255, 255, 0, 0, 0};
    assert_memory_equal(bytes, saturated, sizeof bytes);

    double x[] = {7, -7, 1, 0, 7, -7}, y[] = {2, 2, 0, 0, -2, -2}, result[6];
    const void *xy[] = {x, y};
    run_with_gcc("a // b", f64, 2, result, xy);
    assert_true(result[0] == 3 && result[1] == -4 && isinf(result[2]) && isnan(result[3]));
    assert_true(result[4] == -4 && result[5] == 3);
    run_with_gcc("a % b", f64, 2, result, xy);
    assert_true(result[0] == 1 && result[1] == 1 && isnan(result[2]) && isnan(result[3]));
    assert_true(result[4] == -1 && result[5] == -1);

    double m[] = {NAN, 1, -0.0, 2, 5, -3}, n[] = {1, NAN, 0.0, 1, 5, -4};
    const void *mn[] = {m, n};
    run_with_gcc("minimum(a, b)", f64, 2, result, mn);
    assert_true(isnan(result[0]) && isnan(result[1]));
    assert_true(result[2] == 0 && !signbit(result[2])); /* B when equal, as NumPy */
    assert_true(result[3] == 1 && result[4] == 5 && result[5] == -4);

    uint8_t flags[6];
    run_with_gcc("a < b || a != a", f64, 2, flags, mn);
    uint8_t expected[] = {1, 0, 0, 0, 0, 0};
    assert_memory_equal(flags, expected, sizeof flags);
}

/* Bool inputs are read as "non-zero" and bool outputs are exactly 0 or 1. */
static void test_runs_bool_normalisation(void **state)
{
    (void)state;
    if (!have_tool("gcc"))
        skip();
    int64_t four[] = {4};
    bcg_operand ops[] = {{"a", BCG_BOOL, 1, four, NULL}, {"b", BCG_BOOL, 1, four, NULL}};
    uint8_t a[] = {0, 2, 255, 1}, b[] = {7, 0, 128, 0}, out[4];
    const void *in[] = {a, b};
    run_with_gcc("a & b", ops, 2, out, in);
    uint8_t both[] = {0, 0, 1, 0};
    assert_memory_equal(out, both, sizeof out);
    run_with_gcc("~a", ops, 2, out, in);
    uint8_t negated[] = {1, 0, 0, 0};
    assert_memory_equal(out, negated, sizeof out);
    run_with_gcc("where(a, b, a)", ops, 2, out, in);
    uint8_t chosen[] = {0, 0, 1, 0};
    assert_memory_equal(out, chosen, sizeof out);
}

/* ---- every operator over every dtype ---------------------------------------------- */

static const char *const sweep_expressions[] = {
    "a + b", "a - b * c", "a * b", "a / b", "a // b", "a % c", "a ** b", "-a", "+a", "~a",
    "!a", "a && b", "a || c", "a == b", "a != b", "a < b", "a <= c", "a > b", "a >= b",
    "a | b", "a ^ c", "a & b", "a << b", "a >> b", "abs(a)", "sqrt(a)", "exp(a)", "log(a)",
    "sin(a)", "cos(a)", "tanh(a)", "floor(a)", "ceil(a)", "minimum(a, b)", "maximum(a, c)",
    "where(a, b, c)", "clip(a, b, c)", "f32(a)", "f64(a)", "i8(a)", "i16(a)", "i32(a)",
    "i64(a)", "u8(a)", "u16(a)", "u32(a)", "u64(a)", "bool(a)", "a * 2 + 1", "(a & 1) == 0",
    "a < a", "a == a", "b * c + c", "a < 1", "a >= 0", "where(a > b, a - b, b - a)",
    "f16(a)", "bf16(a)", "a * 0.1 + 65504", "a * b + c", "sqrt(a) + 1e-4",
};

static uint64_t random_state = 0x9e3779b97f4a7c15ULL;

static uint64_t random_bits(void)
{
    random_state ^= random_state << 13;
    random_state ^= random_state >> 7;
    random_state ^= random_state << 17;
    return random_state;
}

/* Values that find edge cases: small numbers, raw bit patterns, specials. */
static void fill_random(void *data, bcg_dtype t, int64_t count)
{
    static const double specials[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e10, -1e10, 300.0,
                                      -129.0, 65536.0, 4294967296.5, 1e20, NAN, INFINITY,
                                      -INFINITY, 3.0, 7.0, 2.0, 1e-300};
    for (int64_t i = 0; i < count; i++) {
        uint64_t r = random_bits();
        uint64_t small = (uint64_t)(int64_t)((int)(r % 17) - 8);
        uint64_t bits = (r >> 60) < 8 ? small : random_bits();
        switch (t) {
        case BCG_F32: case BCG_F64: {
            double v = (r >> 60) < 6 ? specials[(r >> 8) % 20]
                                     : ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 200.0;
            if (t == BCG_F32)
                ((float *)data)[i] = (float)v;
            else
                ((double *)data)[i] = v;
            break;
        }
        default:
            memcpy((char *)data + (size_t)i * bcg_dtype_size(t), &bits, bcg_dtype_size(t));
            break;
        }
    }
}

static bool same_element(const void *x, const void *y, bcg_dtype t)
{
    if (t == BCG_F16 || t == BCG_BF16) { /* any NaN matches any NaN, as for f32 */
        uint16_t a, b;
        memcpy(&a, x, 2);
        memcpy(&b, y, 2);
        bool a_nan = t == BCG_F16 ? (a & 0x7fff) > 0x7c00 : (a & 0x7fff) > 0x7f80;
        bool b_nan = t == BCG_F16 ? (b & 0x7fff) > 0x7c00 : (b & 0x7fff) > 0x7f80;
        return (a_nan && b_nan) || a == b;
    }
    if (t == BCG_F32) {
        float a, b;
        memcpy(&a, x, 4);
        memcpy(&b, y, 4);
        return (isnan(a) && isnan(b)) || memcmp(&a, &b, 4) == 0;
    }
    if (t == BCG_F64) {
        double a, b;
        memcpy(&a, x, 8);
        memcpy(&b, y, 8);
        return (isnan(a) && isnan(b)) || memcmp(&a, &b, 8) == 0;
    }
    return memcmp(x, y, bcg_dtype_size(t)) == 0;
}

/* One expression and dtype pair: emit, JIT through libtcc, compare with
 * eval_run on random data.  Returns false when the front end rejects it. */
static bool differential_case(const char *expr, bcg_dtype ta, bcg_dtype tb, int unroll_limit)
{
    /* a (3,5,11) with a transposed, strided layout; b (5,1); c scalar.  The
     * inner extent 11 gives 2 groups of 4 and 3 trips after them. */
    int64_t a_shape[] = {3, 5, 11}, a_strides[] = {1, 3 * 11, 3}, b_shape[] = {5, 1};
    bcg_operand ops[] = {{"a", ta, 3, a_shape, a_strides},
                         {"b", tb, 2, b_shape, NULL},
                         {"c", tb, 0, NULL, NULL}};
    bcg_options options;
    bcg_options_init(&options);
    options.unroll_limit = unroll_limit;
    built b;
    if (!build(&b, expr, ops, 3, &options)) {
        built_free(&b);
        return false;
    }
    enum { ELEMENTS = 3 * 5 * 11 };
    static uint64_t a_data[ELEMENTS], b_data[5], c_data[1], expected[ELEMENTS], actual[ELEMENTS];
    fill_random(a_data, ta, ELEMENTS);
    fill_random(b_data, tb, 5);
    fill_random(c_data, tb, 1);
    const void *in[] = {a_data, b_data, c_data};
    memset(expected, 0xa5, sizeof expected);
    memset(actual, 0x5a, sizeof actual);
    assert_int_equal(eval_run(b.c, expected, in, &b.err), BCG_OK);

    jit_code *code = NULL;
    kernel_fn fn = NULL;
    const vex_function *vex = b.c->ir ? b.c->ir->vex : NULL;
    if (jit_compile(b.c->source, "bcg_kernel", vex ? vex->code : NULL, vex ? vex->size : 0,
                    &code, &fn, &b.err) != BCG_OK) {
        fprintf(stderr, "jit_compile(%s): %s\n%s\n", expr, b.err.message, b.c->source);
        fail();
    }
    fn(actual, in);
    jit_free(code);

    bcg_dtype out = b.c->root->dtype;
    size_t size = bcg_dtype_size(out);
    /* an expression that does not read a has a smaller result */
    assert_true(b.c->plan->elements <= ELEMENTS);
    for (int64_t i = 0; i < b.c->plan->elements; i++) {
        const char *x = (const char *)expected + (size_t)i * size;
        const char *y = (const char *)actual + (size_t)i * size;
        if (!same_element(x, y, out)) {
            fprintf(stderr, "%s with a %s, b %s: element %lld differs from eval\n%s\n", expr,
                        bcg_dtype_name(ta), bcg_dtype_name(tb), (long long)i, b.c->source);
            fail();
        }
    }
    built_free(&b);
    return true;
}

static void test_differential_every_operator_and_dtype(void **state)
{
    (void)state;
    int compiled = 0;
    size_t count = sizeof sweep_expressions / sizeof sweep_expressions[0];
    for (int t = 0; t < BCG_DTYPE_COUNT; t++)
        for (size_t e = 0; e < count; e++)
            compiled += differential_case(sweep_expressions[e], (bcg_dtype)t, (bcg_dtype)t, 0);
    /* mixed pairs exercise the conversions and promotions */
    static const bcg_dtype pairs[][2] = {
        {BCG_I8, BCG_U8}, {BCG_I64, BCG_U64}, {BCG_F32, BCG_I16}, {BCG_F32, BCG_I32},
        {BCG_BOOL, BCG_F64}, {BCG_U32, BCG_I32}, {BCG_U64, BCG_F32}, {BCG_I16, BCG_BOOL},
        {BCG_F16, BCG_I8}, {BCG_F16, BCG_I16}, {BCG_F16, BCG_F32}, {BCG_BF16, BCG_F16},
        {BCG_F64, BCG_F16}, {BCG_BF16, BCG_U8}, {BCG_I64, BCG_BF16}, {BCG_F16, BCG_BOOL},
    };
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++)
        for (size_t e = 0; e < count; e++)
            compiled += differential_case(sweep_expressions[e], pairs[p][0], pairs[p][1], 0);
    print_message("# %d kernels matched the evaluator\n", compiled);
    assert_true(compiled >= 500);
}

static void test_differential_fully_unrolled(void **state)
{
    (void)state;
    int compiled = 0;
    for (int t = 0; t < BCG_DTYPE_COUNT; t++)
        compiled += differential_case("where(a > b, a // c, a * b + c)", (bcg_dtype)t,
                                      (bcg_dtype)t, 1000);
    assert_true(compiled >= 8);
}

/* Issue 9, finding 1: libtcc dropped the whole store of kernels whose
 * conditions were constants after the emitter folded a self-comparison
 * (`((m) ? 0 : 0) ? x : y`, `(0 && m) ? x : y`).  fold.c now folds every
 * operand-free subtree and every decided where/&&/||; these are the
 * reported forms and their relatives, unrolled and looped, on every dtype. */
static const char *const folded_expressions[] = {
    "where(where(b, a < a, a < a), a, b) + 1", "where((a < a) && b, a, b)",
    "where(b && (a < a), a, b)", "where((a == a) || b, a, b)", "where(b || (a != a), a, b)",
    "where(bool(a < a), a, b)", "where(abs(a < a), a, b)", "where((a + 1) != (a + 1), a, b)",
    "where(b, a <= a, a < a)", "where(b, c, c) + a", "where(where(b, 1, 1), a, b)",
    "where(i8(3) > 2, a, b)", "where(!(a >= a), a, b) * 2", "(a < a) + (b == b) + c",
    "where(where(a > b, a < a, b > b), c, a)", "-(a < a) + where(b, 2, 2) * a",
    "where(f32(1) / f32(0) > 0, a, b)", "clip(a, 1, 1) + (2 ** 3)", "!(a > a) && b",
    "where((a * b) - (a * b) != 0, a, b)",
    /* fuzz_jit_diff: libtcc mistyped && and || and c ? 1 : 0 under ~ */
    "f64(~u32(a && b))", "f64(~u32(a || b)) + a", "f64(~where(b, u32(1), u32(0)))",
    "f64(-where(b, u32(0), u32(1)))", "~u32(where(a > b, 1, 0))", "f32(~u32(b && (a > 0)))",
    /* fuzz_jit_diff: libtcc folded 0 & a into a constant inside a condition */
    "where(where(a < a, a < a, b && bool(i32(f32(sqrt(-1.0))) & a)), -i8(a), i8(a))",
    "where(b && ((a * 0) != 0), a, c)", "where((0 & a) == 0, b, a) + (a * 0)",
    /* identities, same-dtype casts and clip (written as minimum(maximum())) */
    "a + 0", "0 + a * 1", "(a - 0) * 1 + (c | 0)", "a * 1.0 - 0.0", "a / 1 + (c << 0)",
    "(a ^ 0) >> 0", "1 * (0 ^ a) + 0.0", "-0.0 + a", "clip(a, b, c)", "clip(a, c, 2) + i32(a)",
    "clip(b, 0, 1) * a", "clip(a, 2.5, c)", "f32(f32(a)) * f64(1)", "maximum(a, a) * 2",
    "minimum(c, c) + abs(a) + abs(b)", "+a - (+c)", "minimum(a + 1, a + 1) / maximum(b, b)",
    /* selects of compared values (fold.c, select_of_compared) */
    "where(a == 3, a, 3)", "where(3 != a, a, 3) + 1", "where(a > b, a, b)", "where(a >= c, c, a)",
    "where(b < a, a, b) - where(a <= 2, a, 2)", "where(a == b, b, a) * 2", "where(c > a, c, a)",
};

static void test_differential_folded_constants(void **state)
{
    (void)state;
    int compiled = 0;
    size_t count = sizeof folded_expressions / sizeof folded_expressions[0];
    for (int t = 0; t < BCG_DTYPE_COUNT; t++)
        for (size_t e = 0; e < count; e++)
            for (int unroll = 0; unroll < 2; unroll++)
                compiled += differential_case(folded_expressions[e], (bcg_dtype)t,
                                              t == BCG_F64 ? BCG_BOOL : (bcg_dtype)t,
                                              unroll ? 1000 : 0);
    print_message("# %d folded kernels matched the evaluator\n", compiled);
    assert_true(compiled >= 200);
}

/* What fold.c leaves: no literal condition, no literal argument of && or
 * ||, no operator over literals only, anywhere in the tree. */
static bool has_decided_constant(const expr_node *n)
{
    bool all_literal = n->arg_count > 0;
    for (int k = 0; k < n->arg_count; k++) {
        if (has_decided_constant(n->args[k]))
            return true;
        all_literal &= n->args[k]->op == OP_LITERAL;
    }
    if (all_literal)
        return true;
    if (n->op == OP_WHERE && n->args[0]->op == OP_LITERAL)
        return true;
    if ((n->op == OP_AND || n->op == OP_OR) &&
        (n->args[0]->op == OP_LITERAL || n->args[1]->op == OP_LITERAL))
        return true;
    return false;
}

static void test_fold_leaves_no_decided_constant(void **state)
{
    (void)state;
    size_t count = sizeof folded_expressions / sizeof folded_expressions[0];
    size_t checked = 0;
    for (size_t e = 0; e < count; e++) {
        int64_t a_shape[] = {4};
        bcg_operand ops[] = {{"a", BCG_I32, 1, a_shape, NULL},
                             {"b", BCG_BOOL, 1, a_shape, NULL},
                             {"c", BCG_I32, 0, NULL, NULL}};
        built b;
        if (!build(&b, folded_expressions[e], ops, 3, NULL)) { /* -(bool) is a type error */
            built_free(&b);
            continue;
        }
        checked++;
        expr_node *folded;
        assert_int_equal(fold_tree(b.arena, b.c->root, &folded, &b.err), BCG_OK);
        if (has_decided_constant(folded)) {
            fprintf(stderr, "fold left a decided constant in %s\n", folded_expressions[e]);
            fail();
        }
        built_free(&b);
    }
    assert_true(checked + 2 >= count);
    /* and the whole tree folds when it reads no operand */
    int64_t a_shape[] = {4};
    bcg_operand ops[] = {{"a", BCG_I32, 1, a_shape, NULL}};
    built b;
    assert_true(build(&b, "where(a < a, 1, 2) + (a == a)", ops, 1, NULL));
    expr_node *folded;
    assert_int_equal(fold_tree(b.arena, b.c->root, &folded, &b.err), BCG_OK);
    assert_int_equal(folded->op, OP_LITERAL);
    assert_int_equal(folded->value.i, 3);
    assert_int_not_equal(b.c->root->op, OP_LITERAL); /* the input tree is kept */
    built_free(&b);
    /* identities and same-dtype casts leave the operand; clip is gone */
    static const char *const to_operand[] = {"a + 0", "0 | a", "(a * 1) - 0", "i32(a) << 0",
                                             "(a ^ 0) * 1", "maximum(a, a)", "+minimum(a, a)"};
    for (size_t e = 0; e < sizeof to_operand / sizeof to_operand[0]; e++) {
        assert_true(build(&b, to_operand[e], ops, 1, NULL));
        assert_int_equal(fold_tree(b.arena, b.c->root, &folded, &b.err), BCG_OK);
        assert_int_equal(folded->op, OP_OPERAND);
        built_free(&b);
    }
    assert_true(build(&b, "clip(a, 1, 5) + 0", ops, 1, NULL));
    assert_int_equal(fold_tree(b.arena, b.c->root, &folded, &b.err), BCG_OK);
    assert_int_equal(folded->op, OP_MINIMUM);
    assert_int_equal(folded->args[0]->op, OP_MAXIMUM);
    built_free(&b);
    /* x + 0.0 is not x (-0.0 + 0.0 is +0.0) */
    bcg_operand f_ops[] = {{"a", BCG_F32, 1, a_shape, NULL}};
    assert_true(build(&b, "a + 0.0", f_ops, 1, NULL));
    assert_int_equal(fold_tree(b.arena, b.c->root, &folded, &b.err), BCG_OK);
    assert_int_equal(folded->op, OP_ADD);
    built_free(&b);
}

/* Absorption (fold.c): maximum(x, minimum(x, y)), minimum(x, maximum(x,
 * y)) and their mirrors on every pair of dtypes: the JIT of the folded
 * tree matches the evaluator of the tree as written, and the inner
 * operation is gone exactly when both are on integers or bool (a NaN y
 * keeps them over floats). */
static const char *const absorption_expressions[] = {
    "maximum(a, minimum(a, b))", "minimum(a, maximum(b, a))", "maximum(minimum(b, a), a)",
    "minimum(maximum(a, 3), a)", "maximum(a + 1, minimum(b, a + 1)) - c",
};

static int count_op(const expr_node *n, expr_op op)
{
    int found = n->op == op;
    for (int k = 0; k < n->arg_count; k++)
        found += count_op(n->args[k], op);
    return found;
}

static void test_fold_absorption(void **state)
{
    (void)state;
    int compiled = 0, folded_count = 0, kept_count = 0;
    size_t count = sizeof absorption_expressions / sizeof absorption_expressions[0];
    for (int ta = 0; ta < BCG_DTYPE_COUNT; ta++)
        for (int tb = 0; tb < BCG_DTYPE_COUNT; tb++)
            for (size_t e = 0; e < count; e++) {
                const char *expr = absorption_expressions[e];
                if (!differential_case(expr, (bcg_dtype)ta, (bcg_dtype)tb, 0))
                    continue;
                compiled++;
                int64_t a_shape[] = {4}, b_shape[] = {1};
                bcg_operand ops[] = {{"a", (bcg_dtype)ta, 1, a_shape, NULL},
                                     {"b", (bcg_dtype)tb, 1, b_shape, NULL},
                                     {"c", (bcg_dtype)tb, 0, NULL, NULL}};
                built b;
                assert_true(build(&b, expr, ops, 3, NULL));
                const expr_node *outer = b.c->root;
                while (outer->op != OP_MINIMUM && outer->op != OP_MAXIMUM) /* the - c */
                    outer = outer->args[0];
                const expr_node *inner = outer->args[0]->op == OP_MINIMUM ||
                                                 outer->args[0]->op == OP_MAXIMUM
                                             ? outer->args[0]
                                             : outer->args[1];
                bool integers = dtype_kind_of(outer->dtype) != KIND_FLOAT &&
                                dtype_kind_of(inner->dtype) != KIND_FLOAT &&
                                dtype_kind_of(b.c->root->dtype) != KIND_FLOAT;
                expr_node *folded;
                assert_int_equal(fold_tree(b.arena, b.c->root, &folded, &b.err), BCG_OK);
                int extremes = count_op(folded, OP_MINIMUM) + count_op(folded, OP_MAXIMUM);
                if (integers && extremes != 0) {
                    fprintf(stderr, "%s with a %s, b %s: not absorbed\n", expr,
                            bcg_dtype_name((bcg_dtype)ta), bcg_dtype_name((bcg_dtype)tb));
                    fail();
                }
                folded_count += extremes == 0;
                kept_count += extremes != 0;
                built_free(&b);
            }
    print_message("# %d absorptions matched the evaluator, %d folded, %d kept\n", compiled,
                  folded_count, kept_count);
    assert_true(folded_count >= 200 && kept_count >= 100);
}

/* where(p CMP q, p, q) and its mirrors (fold.c, select_of_compared) on
 * every pair of dtypes: the JIT of the folded tree matches the evaluator of
 * the tree as written (fill_random draws half of the integers from -8..8,
 * so equal values and ties are frequent), and the select is gone exactly
 * when the comparison and the select are on integers or bool. */
static const char *const select_expressions[] = {
    "where(a == 3, a, 3)", "where(a != 3, 3, a)", "where(3 == a, 3, a)", "where(a != b, a, b)",
    "where(a == b, b, a)", "where(a > b, a, b)", "where(a >= b, b, a)", "where(a < b, a, b)",
    "where(b <= a, b, a)", "where(a > 2, a, 2)", "where(-3 >= a, -3, a)", "where(a < c, c, a)",
    "where(a <= 7, 7, a) + b",
};

static bool has_where(const expr_node *n) { return count_op(n, OP_WHERE) > 0; }

static void test_fold_compared_selects(void **state)
{
    (void)state;
    int compiled = 0, folded_count = 0, kept_count = 0;
    size_t count = sizeof select_expressions / sizeof select_expressions[0];
    for (int ta = 0; ta < BCG_DTYPE_COUNT; ta++)
        for (int tb = 0; tb < BCG_DTYPE_COUNT; tb++)
            for (size_t e = 0; e < count; e++) {
                const char *expr = select_expressions[e];
                if (!differential_case(expr, (bcg_dtype)ta, (bcg_dtype)tb, 0))
                    continue; /* a literal that does not fit, a bool operator */
                compiled++;
                int64_t a_shape[] = {4}, b_shape[] = {1};
                bcg_operand ops[] = {{"a", (bcg_dtype)ta, 1, a_shape, NULL},
                                     {"b", (bcg_dtype)tb, 1, b_shape, NULL},
                                     {"c", (bcg_dtype)tb, 0, NULL, NULL}};
                built b;
                assert_true(build(&b, expr, ops, 3, NULL));
                const expr_node *select = b.c->root;
                while (select->op != OP_WHERE) /* the + b */
                    select = select->args[0];
                bool integers =
                    dtype_kind_of(expr_operation_type(select->args[0])) != KIND_FLOAT &&
                    dtype_kind_of(select->dtype) != KIND_FLOAT;
                expr_node *folded;
                assert_int_equal(fold_tree(b.arena, b.c->root, &folded, &b.err), BCG_OK);
                if (has_where(folded) == integers) {
                    fprintf(stderr, "%s with a %s, b %s: the select %s\n", expr,
                            bcg_dtype_name((bcg_dtype)ta), bcg_dtype_name((bcg_dtype)tb),
                            integers ? "was kept" : "was folded");
                    fail();
                }
                folded_count += integers;
                kept_count += !integers;
                built_free(&b);
            }
    print_message("# %d selects matched the evaluator, %d folded, %d kept\n", compiled,
                  folded_count, kept_count);
    assert_true(folded_count >= 500 && kept_count >= 500);
    /* the shapes: a literal, an operand, maximum and minimum */
    int64_t a_shape[] = {4};
    bcg_operand ops[] = {{"a", BCG_I16, 1, a_shape, NULL}, {"b", BCG_U8, 1, a_shape, NULL}};
    static const struct { const char *expr; expr_op op; } shapes[] = {
        {"where(a == 3, a, 3)", OP_LITERAL}, {"where(a != 3, a, 3)", OP_OPERAND},
        {"where(3 == a, a, 3)", OP_LITERAL}, {"where(a == b, b, a)", OP_OPERAND},
        {"where(a > b, a, b)", OP_MAXIMUM},  {"where(a >= 3, a, 3)", OP_MAXIMUM},
        {"where(a < b, b, a)", OP_MAXIMUM},  {"where(3 <= a, 3, a)", OP_MINIMUM},
        {"where(a < 3, a, 3)", OP_MINIMUM},  {"where(b > a, a, b)", OP_MINIMUM},
        {"where(a > b, b, b)", OP_OPERAND},     {"where(a > 3, 3, b)", OP_WHERE},
        {"where(a > 3, a, 4)", OP_WHERE},    {"where(a + 1 > a, a + 1, a)", OP_MAXIMUM},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        built b;
        assert_true(build(&b, shapes[s].expr, ops, 2, NULL));
        expr_node *folded;
        assert_int_equal(fold_tree(b.arena, b.c->root, &folded, &b.err), BCG_OK);
        if (folded->op != shapes[s].op) {
            fprintf(stderr, "%s folded to op %d, not %d\n", shapes[s].expr, (int)folded->op,
                    (int)shapes[s].op);
            fail();
        }
        if (folded->op == OP_LITERAL)
            assert_int_equal(folded->value.i, 3);
        built_free(&b);
    }
}

/* Every operator on every dtype through gcc and clang with -Werror; several
 * operators share a kernel so the compilers run a few dozen times only. */
static void test_strict_compilers_accept_every_kernel(void **state)
{
    (void)state;
    const char *compilers[] = {"gcc", "clang"};
    static const char *const groups[] = {
        "a + b - c * a + (-a) + (+b) + a / b + a // b + a % c + a ** b",
        "(a | b) ^ (a & c) ^ (a << b) ^ (a >> c) ^ ~a",
        "abs(a) + sqrt(a) + exp(a) + log(a) + sin(a) + cos(a) + tanh(a) + floor(a) + ceil(a)",
        "where(!a && b || c, minimum(a, b), maximum(a, c)) + clip(a, b, c)",
        "(a == b) & (a != c) & (a < b) & (a <= 1) & (a > 0) & (a >= c) & (a < a) & (a == a)",
        "f32(a) + f64(a) + i8(a) + i16(a) + i32(a) + i64(a) + u8(a) + u16(a) + u32(a) + u64(a)",
        "bool(a)", "a * 2 + 1", "(a & 1) == 0", "b * c + c",
    };
    int compiled = 0;
    for (int t = 0; t < BCG_DTYPE_COUNT; t++) {
        for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
            int64_t a_shape[] = {3, 9}, b_shape[] = {9};
            bcg_operand ops[] = {{"a", (bcg_dtype)t, 2, a_shape, NULL},
                                 {"b", (bcg_dtype)t, 1, b_shape, NULL},
                                 {"c", (bcg_dtype)t, 0, NULL, NULL}};
            bcg_options options;
            bcg_options_init(&options);
            options.unroll_limit = 0;
            built b;
            if (!build(&b, groups[g], ops, 3, &options)) {
                built_free(&b);
                continue;
            }
            for (int k = 0; k < 2; k++) {
                if (!have_tool(compilers[k]))
                    continue;
                if (!compile_strict(compilers[k], b.c->source, "-c", "/dev/null")) {
                    print_error("%s on %s\n", groups[g], bcg_dtype_name((bcg_dtype)t));
                    fail();
                }
            }
            compiled++;
            built_free(&b);
        }
    }
    print_message("# %d kernels compiled warning-free\n", compiled);
    assert_true(compiled >= 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_output_is_fully_unrolled),
        cmocka_unit_test(test_hermetic_and_no_user_names),
        cmocka_unit_test(test_header_describes_kernel),
        cmocka_unit_test(test_limit_zero_gives_loops),
        cmocka_unit_test(test_unroll_factor_with_static_remainder),
        cmocka_unit_test(test_broadcast_operands_are_hoisted),
        cmocka_unit_test(test_inplace_operand_is_never_hoisted),
        cmocka_unit_test(test_empty_output_does_nothing),
        cmocka_unit_test(test_helpers_only_when_used),
        cmocka_unit_test(test_math_prototypes_only_when_used),
        cmocka_unit_test(test_function_name),
        cmocka_unit_test(test_literal_spellings),
        cmocka_unit_test(test_comparisons_avoid_decidable_forms),
        cmocka_unit_test(test_runs_integer_division_and_shifts),
        cmocka_unit_test(test_runs_float_conversions_and_extremes),
        cmocka_unit_test(test_runs_bool_normalisation),
        cmocka_unit_test(test_differential_every_operator_and_dtype),
        cmocka_unit_test(test_differential_fully_unrolled),
        cmocka_unit_test(test_differential_folded_constants),
        cmocka_unit_test(test_fold_leaves_no_decided_constant),
        cmocka_unit_test(test_fold_compared_selects),
        cmocka_unit_test(test_fold_absorption),
        cmocka_unit_test(test_strict_compilers_accept_every_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
