/* test_hostile.c - no injected code (issue 6): text from the user never
 * reaches libtcc verbatim.
 *
 *  - Hostile expressions (C fragments, preprocessor lines, comments,
 *    __asm__, backslash-newlines, string and character quotes, non-ASCII
 *    and control bytes) are rejected by the parser with BCG_ERR_PARSE and
 *    the 1-based column of the first offending byte, from both bcg_emit and
 *    bcg_compile, and produce no source and no kernel.
 *  - Hostile operand names and function names (bcg_emit's) are rejected
 *    before anything is generated.
 *  - Valid but suggestive names (C keywords, `__asm__`, `include`, the
 *    kernel's own locals `out` and `in0`) are accepted and never appear in
 *    the source: the source depends only on the operands' positions, so it
 *    is byte for byte the one generated for plain names.
 *  - Literals are re-printed from their values: `1.50` and `1.5`, `0x10`
 *    and `16` give the same source.
 *  - The API takes C strings: bytes after a NUL are never read, so
 *    "a\0; system(...)" is exactly the expression "a".
 *  - After all of it the baseline kernel is generated unchanged and runs.
 *  - Regression: the kernel cache key cannot be forged by a name holding
 *    the key's separators (it used to alias a two-operand kernel). */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

static const int64_t shape4[] = {4};

static char *emit_with(const char *expr, const char *name_a, const char *name_b,
                       const char *function, bcg_status *status, bcg_error *err)
{
    bcg_operand ops[2] = {{name_a, BCG_F32, 1, shape4, NULL}, {name_b, BCG_F32, 1, shape4, NULL}};
    char *source = NULL;
    *status = bcg_emit(expr, ops, 2, NULL, function, &source, err);
    return source;
}

static char *baseline_source(void)
{
    bcg_status s;
    bcg_error err;
    char *source = emit_with("a * b + 1", "a", "b", NULL, &s, &err);
    assert_int_equal(s, BCG_OK);
    assert_non_null(source);
    return source;
}

/* ---- hostile expressions -------------------------------------------------------- */

typedef struct hostile_case {
    const char *expr;
    int column; /* where the parser must point */
} hostile_case;

static const hostile_case hostile_expressions[] = {
    {"a; system(\"sh\")", 2},
    {"a + b; }", 6},
    {"a } void evil() { ", 3},
    {"#include <stdio.h>", 1},
    {"a\n#include \"/etc/passwd\"", 2},
    {"#define a b", 1},
    {"a /* comment */ + b", 4},
    {"a // b /* c */", 9},
    {"a + b // comment\n", 17},
    {"a + b \\\n+ b", 7},
    {"a\\\n", 2},
    {"__asm__(\"int3\")", 1},
    {"asm(\"ud2\")", 1},
    {"a + 'x'", 5},
    {"\"string\"", 1},
    {"a ? b : a", 3},
    {"a = b", 3},
    {"a += 1", 4},
    {"a[0]", 2},
    {"a.b", 2},
    {"a->b", 3},
    {"&a", 1},
    {"*a", 1},
    {"a, b", 2},
    {"sizeof(a)", 1},
    {"(float)a", 2},
    {"a @ b", 3},
    {"a $ b", 3},
    {"a ` b", 3},
    {"a\tb", 3},
    {"a\rb", 2},
    {"a\x01", 2},
    {"a\x7f", 2},
    {"a + \xc3\xa9", 5},
    {"\xef\xbb\xbf" "a", 1},
    {"a + b\x0c", 6},
    {"a\x1b[31m", 2},
    {"main(a)", 1},
    {"system(a)", 1},
    {"printf(a)", 1},
    {"_Pragma(\"once\") + a", 1},
    {"a + b\n", 6},
    {"?\?=define", 1}, /* a trigraph, split so this file has none */
    {"<%a%>", 1},
    {"a ## b", 3},
    {"abs(a) {", 8},
    {"exp(a, \"x\")", 8},
    {"0x", 1},
    {"1.5f", 1},
    {"010", 1},
    {"1e", 1},
    {"a + 1u", 5},
    {"a + 1L", 5},
    {"c", 1},
    {"where(a, b)", 1},
};

static void test_hostile_expressions_rejected_with_column(void **state)
{
    (void)state;
    char *before = baseline_source();
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    long tcc_before = compile_tcc_count(ctx);
    size_t count = sizeof hostile_expressions / sizeof hostile_expressions[0];
    int wrong = 0;
    for (size_t i = 0; i < count; i++) {
        const hostile_case *h = &hostile_expressions[i];
        bcg_status s;
        bcg_error err;
        char *source = emit_with(h->expr, "a", "b", NULL, &s, &err);
        bool ok = (s == BCG_ERR_PARSE || s == BCG_ERR_TYPE) && source == NULL &&
                  err.status == s && err.column == h->column && err.message[0];
        if (!ok) {
            print_message("# expression %zu \"%s\": status %d column %d (want %d): %s\n", i,
                          h->expr, (int)s, err.column, h->column, err.message);
            wrong++;
        }
        bcg_free(source);

        bcg_operand ops[2] = {{"a", BCG_F32, 1, shape4, NULL}, {"b", BCG_F32, 1, shape4, NULL}};
        bcg_kernel *k = (bcg_kernel *)&ok; /* must be reset to NULL */
        bcg_status cs = bcg_compile(ctx, h->expr, ops, 2, NULL, &k, &err);
        if (cs != s || k != NULL || err.column != h->column) {
            print_message("# bcg_compile \"%s\": status %d column %d\n", h->expr, (int)cs,
                          err.column);
            wrong++;
        }
    }
    assert_int_equal(wrong, 0);
    /* Nothing hostile reached libtcc. */
    assert_int_equal(compile_tcc_count(ctx), tcc_before);
    bcg_context_free(ctx);
    char *after = baseline_source();
    assert_string_equal(before, after);
    bcg_free(before);
    bcg_free(after);
}

/* Bytes after a NUL are never read: the expression is what precedes it. */
static void test_nul_ends_the_expression(void **state)
{
    (void)state;
    static const char with_nul[] = "a * b + 1\0; } int evil(void) { return system(\"sh\"); ";
    bcg_status s;
    bcg_error err;
    char *source = emit_with(with_nul, "a", "b", NULL, &s, &err);
    assert_int_equal(s, BCG_OK);
    char *plain = baseline_source();
    assert_string_equal(source, plain);
    assert_null(strstr(source, "evil"));
    assert_null(strstr(source, "system"));
    bcg_free(source);
    bcg_free(plain);
}

/* ---- names --------------------------------------------------------------------------- */

static const char *const hostile_names[] = {
    "",
    "a b",
    "a;",
    "a;system",
    "#include",
    "a\n",
    "a\\",
    "a/*",
    "1a",
    "a-b",
    "a.b",
    "\xc3\xa9",
    "a\x01",
    "(a)",
    "a[0]",
    "\"a\"",
    "a,b",
    "x0123456789012345678901234567890123456789012345678901234567890123", /* 64 bytes */
};

static void test_hostile_operand_names_rejected(void **state)
{
    (void)state;
    char *before = baseline_source();
    size_t count = sizeof hostile_names / sizeof hostile_names[0];
    int wrong = 0;
    for (size_t i = 0; i < count; i++) {
        bcg_status s;
        bcg_error err;
        char *source = emit_with("a * b + 1", "a", hostile_names[i], NULL, &s, &err);
        if ((s != BCG_ERR_USAGE && s != BCG_ERR_LIMIT) || source || err.operand != 1) {
            print_message("# operand name %zu: status %d operand %d: %s\n", i, (int)s,
                          err.operand, err.message);
            wrong++;
        }
        bcg_free(source);
    }
    assert_int_equal(wrong, 0);
    char *after = baseline_source();
    assert_string_equal(before, after);
    bcg_free(before);
    bcg_free(after);
}

static void test_hostile_function_names_rejected(void **state)
{
    (void)state;
    static const char *const functions[] = {
        "f(void){} void g", "f;", "f g", "", "1f", "f\n", "#f", "f/**/", "\xc3\xa9",
        "f-g", "f()", "x0123456789012345678901234567890123456789012345678901234567890123",
    };
    for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++) {
        bcg_status s;
        bcg_error err;
        char *source = emit_with("a * b + 1", "a", "b", functions[i], &s, &err);
        assert_int_equal(s, BCG_ERR_USAGE);
        assert_null(source);
        assert_non_null(strstr(err.message, "function name"));
    }
    /* The longest valid name is accepted and used as given. */
    char longest[BCG_MAX_NAME + 1];
    memset(longest, 'f', BCG_MAX_NAME);
    longest[BCG_MAX_NAME] = 0;
    bcg_status s;
    bcg_error err;
    char *source = emit_with("a * b + 1", "a", "b", longest, &s, &err);
    assert_int_equal(s, BCG_OK);
    assert_non_null(strstr(source, longest));
    bcg_free(source);
}

/* C keywords and the kernel's own identifiers are fine operand names; they
 * never reach the source, which is the one for `a` and `b`. */
static void test_suggestive_names_never_reach_source(void **state)
{
    (void)state;
    static const char *const pairs[][2] = {
        {"int", "return"}, {"__asm__", "asm"}, {"include", "define"}, {"out", "in0"},
        {"inputs", "output"}, {"bcg_kernel", "main"}, {"system", "exit"},
        {"_Pragma", "__attribute__"}, {"sqrt", "f32"}, {"goto", "volatile"},
    };
    char *plain = baseline_source();
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char expr[160];
        snprintf(expr, sizeof expr, "%s * %s + 1", pairs[i][0], pairs[i][1]);
        bcg_status s;
        bcg_error err;
        char *source = emit_with(expr, pairs[i][0], pairs[i][1], NULL, &s, &err);
        if (s != BCG_OK)
            print_message("# %s: %s\n", expr, err.message);
        assert_int_equal(s, BCG_OK);
        assert_string_equal(source, plain);
        bcg_free(source);
    }
    bcg_free(plain);

    /* ... and such a kernel computes what it says. */
    bcg_context *ctx = bcg_context_new();
    bcg_operand ops[2] = {{"__asm__", BCG_F32, 1, shape4, NULL},
                          {"return", BCG_F32, 1, shape4, NULL}};
    bcg_kernel *k;
    bcg_error err;
    assert_int_equal(bcg_compile(ctx, "__asm__ * return + 1", ops, 2, NULL, &k, &err), BCG_OK);
    float x[4] = {1, 2, 3, 4}, y[4] = {5, 6, 7, 8}, out[4];
    const void *in[] = {x, y};
    assert_int_equal(bcg_run(k, out, in, &err), BCG_OK);
    for (int i = 0; i < 4; i++)
        assert_true(out[i] == x[i] * y[i] + 1);
    bcg_context_free(ctx);
}

/* Literals reach the source as bcgen prints their values, never as typed. */
static void test_literals_are_reprinted(void **state)
{
    (void)state;
    static const char *const same[][2] = {
        {"a * b + 1", "a * b + 0x1"},
        {"a * b + 1", "a * b + 1.0"},
        {"a * b + 1", "a * b + 1.000000000000000000000000000001"},
        {"a * b + 1", "a*b+1"},
        {"a * b + 1", "((a) * (b)) + (1)"},
        {"a * b + 1", "a * b + 10e-1"},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        bcg_status s1, s2;
        bcg_error err;
        char *one = emit_with(same[i][0], "a", "b", NULL, &s1, &err);
        char *two = emit_with(same[i][1], "a", "b", NULL, &s2, &err);
        assert_int_equal(s1, BCG_OK);
        assert_int_equal(s2, BCG_OK);
        /* Only the comment line echoing the expression may differ, and it
         * is itself re-printed from the tree. */
        assert_string_equal(one, two);
        bcg_free(one);
        bcg_free(two);
    }
}

/* Regression (found for issue 6): the cache key was the names and sizes
 * joined with ':' and '\n', so an invalid name holding those characters
 * produced the key of a valid two-operand kernel and bcg_compile returned
 * that kernel (which reads two inputs) for a one-operand call. */
static void test_cache_key_cannot_be_forged(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    int64_t three[] = {3};
    bcg_operand two_ops[2] = {{"a", BCG_F32, 1, three, NULL}, {"b", BCG_F32, 1, three, NULL}};
    bcg_kernel *k;
    bcg_error err;
    assert_int_equal(bcg_compile(ctx, "a", two_ops, 2, NULL, &k, &err), BCG_OK);
    char forged[64];
    snprintf(forged, sizeof forged, "a:%d:1:3,@\nb", (int)BCG_F32);
    bcg_operand one_op[1] = {{forged, BCG_F32, 1, three, NULL}};
    assert_int_equal(bcg_compile(ctx, "a", one_op, 1, NULL, &k, &err), BCG_ERR_USAGE);
    assert_null(k);
    bcg_context_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_expressions_rejected_with_column),
        cmocka_unit_test(test_nul_ends_the_expression),
        cmocka_unit_test(test_hostile_operand_names_rejected),
        cmocka_unit_test(test_hostile_function_names_rejected),
        cmocka_unit_test(test_suggestive_names_never_reach_source),
        cmocka_unit_test(test_literals_are_reprinted),
        cmocka_unit_test(test_cache_key_cannot_be_forged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
