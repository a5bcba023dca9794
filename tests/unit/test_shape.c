/* test_shape.c - shape text (every accepted and malformed form), shape
 * formatting, the broadcast rules (rank 0, sizes 0 and 1, many operands,
 * the limits, overflow, in-place, Paddle's axis, strict rank, the legacy
 * warning) with exact error messages, every example of the seed documents
 * (PyTorch's broadcasting notes in French and Chinese, Paddle's guide), and
 * the public bcg_broadcast_shapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* internal.h first: cmocka.h defines a fail() macro that would otherwise
 * mangle util.c's fail() declaration. */
#include "internal.h"

#include <cmocka.h>

/* ---- helpers -------------------------------------------------------------- */

static const char *const NAMES[] = {"a", "b", "c", "d", "e", "f"};

/* The outcome of the last broadcast: large, so not on each test's stack. */
static struct {
    broadcast_result out;
    bcg_error err;
} last;

static shape parse_ok(const char *text)
{
    shape s;
    bcg_error err;
    error_clear(&err);
    bcg_status status = shape_parse(text, (size_t)-1, &s, &err);
    if (status != BCG_OK)
        print_error("parsing \"%s\": %s\n", text, err.message);
    assert_int_equal(status, BCG_OK);
    return s;
}

/* Broadcasts the shapes written as text. */
static bcg_status run(const broadcast_rules *rules, size_t element_size,
                      const char *const *names, int count, const char *const *texts)
{
    static shape shapes[BCG_MAX_OPERANDS];
    assert_true(count <= BCG_MAX_OPERANDS);
    for (int i = 0; i < count; i++)
        shapes[i] = parse_ok(texts[i]);
    error_clear(&last.err);
    memset(&last.out, 0x5a, sizeof last.out);
    bcg_status status = shape_broadcast(count, shapes, names, rules, element_size,
                                        &last.out, &last.err);
    assert_int_equal(status, last.err.status);
    return status;
}

#define TEXTS(...) (const char *const[]){__VA_ARGS__}
#define TEXT_COUNT(...) ((int)(sizeof(TEXTS(__VA_ARGS__)) / sizeof(const char *)))
/* BROADCAST(rules, names, "5,3", "3") */
#define BROADCAST(rules, names, ...) \
    run(rules, 0, names, TEXT_COUNT(__VA_ARGS__), TEXTS(__VA_ARGS__))

static void expect_compact(const shape *s, const char *expected)
{
    char buf[2048];
    shape_format_compact(s, buf, sizeof buf);
    assert_string_equal(buf, expected);
}

/* The last broadcast succeeded with RESULT (compact form) and no warning. */
static void expect_result(bcg_status status, const char *result)
{
    if (status != BCG_OK)
        print_error("unexpected error: %s\n", last.err.message);
    assert_int_equal(status, BCG_OK);
    expect_compact(&last.out.result, result);
}

static void expect_error(bcg_status status, bcg_status want, const char *message)
{
    assert_int_equal(status, want);
    assert_string_equal(last.err.message, message);
}

static void expect_parse_error(const char *text, size_t len, const char *message)
{
    shape s;
    bcg_error err;
    error_clear(&err);
    assert_int_equal(shape_parse(text, len, &s, &err), BCG_ERR_SHAPE);
    assert_int_equal(err.status, BCG_ERR_SHAPE);
    assert_string_equal(err.message, message);
}

static broadcast_rules default_rules(void)
{
    broadcast_rules r = {BCG_AXIS_NONE, -1, false, false};
    return r;
}

/* ---- parsing ---------------------------------------------------------------- */

static void test_parse_accepted_forms(void **state)
{
    (void)state;
    static const struct { const char *text; const char *compact; } cases[] = {
        {"5,3,4,1", "(5,3,4,1)"},   {"[5,3,4,1]", "(5,3,4,1)"},
        {"(5,3,4,1)", "(5,3,4,1)"}, {"5x3x4x1", "(5,3,4,1)"},
        {"(5,)", "(5,)"},            {"[5,]", "(5,)"},
        {"(5)", "(5,)"},             {"5", "(5,)"},
        {"[]", "()"},               {"()", "()"},
        {"scalar", "()"},           {"[ ]", "()"},
        {"(  )", "()"},             {"  scalar\t", "()"},
        {" [ 5 , 3 ] ", "(5,3)"},   {"\t5,\t3\t", "(5,3)"},
        {"( 5 , 3 , )", "(5,3)"},   {"0", "(0,)"},
        {"0,0", "(0,0)"},           {"007,1", "(7,1)"},
        {"0x10", "(0,10)"},         {"(2x3)", "(2,3)"},
        {"5 x 3", "(5,3)"},         {"1,1,1,1,1", "(1,1,1,1,1)"},
        {"9223372036854775807", "(9223372036854775807,)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        shape s = parse_ok(cases[i].text);
        expect_compact(&s, cases[i].compact);
    }
}

static void test_parse_explicit_length(void **state)
{
    (void)state;
    shape s;
    bcg_error err;
    error_clear(&err);
    /* only the first 3 bytes count: "5,3" of "5,3,4" */
    assert_int_equal(shape_parse("5,3,4", 3, &s, &err), BCG_OK);
    expect_compact(&s, "(5,3)");
    /* not NUL-terminated at all */
    char buf[4] = {'(', '7', ')', '!'};
    assert_int_equal(shape_parse(buf, 3, &s, &err), BCG_OK);
    expect_compact(&s, "(7,)");
    /* a NUL byte inside the given length is a bad character */
    expect_parse_error("5,\0" "3", 4,
                       "bad shape \"5,?3\": unexpected byte 0x00 at character 3 (expected a size)");
}

static void test_parse_rank_limit(void **state)
{
    (void)state;
    char text[512] = "";
    for (int i = 0; i < BCG_MAX_RANK; i++)
        strcat(text, i ? ",1" : "1");
    shape s = parse_ok(text);
    assert_int_equal(s.rank, BCG_MAX_RANK);
    strcat(text, ",1");
    expect_parse_error(text, (size_t)-1,
                       "bad shape \"1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,...\": more than 64 "
                       "dimensions (the limit BCG_MAX_RANK)");
}

static void test_parse_malformed_messages(void **state)
{
    (void)state;
    static const struct { const char *text; const char *message; } cases[] = {
        {"", "bad shape \"\": empty shape text (write [], () or scalar for rank 0)"},
        {"   ", "bad shape \"   \": empty shape text (write [], () or scalar for rank 0)"},
        {"5,,3", "bad shape \"5,,3\": unexpected ',' at character 3 (expected a size)"},
        {"5,", "bad shape \"5,\": expected a size after ',' at character 2"},
        {"5x", "bad shape \"5x\": expected a size after 'x' at character 2"},
        {"(5x)", "bad shape \"(5x)\": expected a size after 'x' at character 3"},
        {"(5,3", "bad shape \"(5,3\": '(' at character 1 is never closed"},
        {"(", "bad shape \"(\": '(' at character 1 is never closed"},
        {"(5,3]", "bad shape \"(5,3]\": '(' at character 1 is closed by ']'"},
        {"[5)", "bad shape \"[5)\": '[' at character 1 is closed by ')'"},
        {"5)", "bad shape \"5)\": unexpected ')' at character 2 (expected ',' or 'x' between sizes)"},
        {"((5))", "bad shape \"((5))\": unexpected '(' at character 2 (expected a size)"},
        {"5 3", "bad shape \"5 3\": unexpected '3' at character 3 (expected ',' or 'x' between sizes)"},
        {"5;3", "bad shape \"5;3\": unexpected ';' at character 2 (expected ',' or 'x' between sizes)"},
        {"5,3x4", "bad shape \"5,3x4\": 'x' at character 4 mixes ',' and 'x' as separators"},
        {"a,b", "bad shape \"a,b\": unexpected 'a' at character 1 (expected a size)"},
        {"5.0", "bad shape \"5.0\": unexpected '.' at character 2 (expected ',' or 'x' between sizes)"},
        {"1e3", "bad shape \"1e3\": unexpected 'e' at character 2 (expected ',' or 'x' between sizes)"},
        {"+5", "bad shape \"+5\": unexpected '+' at character 1 (expected a size)"},
        {"-1,2", "bad shape \"-1,2\": negative size -1 at character 1"},
        {"3,-4", "bad shape \"3,-4\": negative size -4 at character 3"},
        {"(3, -40)", "bad shape \"(3, -40)\": negative size -40 at character 5"},
        {"-0", "bad shape \"-0\": negative size -0 at character 1"},
        {"-", "bad shape \"-\": unexpected '-' at character 1 (expected a size)"},
        {"- 1", "bad shape \"- 1\": unexpected '-' at character 1 (expected a size)"},
        {"Scalar", "bad shape \"Scalar\": unexpected 'S' at character 1 (expected a size)"},
        {"scalar,", "bad shape \"scalar,\": unexpected 's' at character 1 (expected a size)"},
        {"x5", "bad shape \"x5\": unexpected 'x' at character 1 (expected a size)"},
        {"5xx3", "bad shape \"5xx3\": unexpected 'x' at character 3 (expected a size)"},
        {"(,)", "bad shape \"(,)\": unexpected ',' at character 2 (expected a size)"},
        {"[,]", "bad shape \"[,]\": unexpected ',' at character 2 (expected a size)"},
        {"5,\x01", "bad shape \"5,?\": unexpected byte 0x01 at character 3 (expected a size)"},
        {"9223372036854775808",
         "bad shape \"9223372036854775808\": size 9223372036854775808 at character 1 is "
         "above INT64_MAX (9223372036854775807)"},
        {"2,99999999999999999999999",
         "bad shape \"2,99999999999999999999999\": size 99999999999999999999999 at "
         "character 3 is above INT64_MAX (9223372036854775807)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_parse_error(cases[i].text, (size_t)-1, cases[i].message);
}

static void test_parse_long_text_is_cut_in_message(void **state)
{
    (void)state;
    char text[200];
    memset(text, '7', 100);
    strcpy(text + 100, ",q");
    shape s;
    bcg_error err;
    error_clear(&err);
    assert_int_equal(shape_parse(text, (size_t)-1, &s, &err), BCG_ERR_SHAPE);
    /* the number is too large before 'q' is reached */
    assert_non_null(strstr(err.message, "7777777777...\": size 7777"));
    assert_non_null(strstr(err.message, "is above INT64_MAX"));
}

static void test_parse_null_arguments(void **state)
{
    (void)state;
    shape s;
    bcg_error err;
    error_clear(&err);
    assert_int_equal(shape_parse(NULL, 0, &s, &err), BCG_ERR_USAGE);
    error_clear(&err);
    assert_int_equal(shape_parse("5", 1, NULL, &err), BCG_ERR_USAGE);
    /* err may be NULL */
    assert_int_equal(shape_parse("5,,", (size_t)-1, &s, NULL), BCG_ERR_SHAPE);
}

/* ---- formatting ----------------------------------------------------------- */

static void test_format_numpy_style(void **state)
{
    (void)state;
    char buf[64];
    shape s = parse_ok("5,3,4,1");
    shape_format(&s, buf, sizeof buf);
    assert_string_equal(buf, "(5, 3, 4, 1)");
    s = parse_ok("5");
    shape_format(&s, buf, sizeof buf);
    assert_string_equal(buf, "(5,)");
    s = parse_ok("[]");
    shape_format(&s, buf, sizeof buf);
    assert_string_equal(buf, "()");
    s = parse_ok("0,9223372036854775807");
    shape_format(&s, buf, sizeof buf);
    assert_string_equal(buf, "(0, 9223372036854775807)");
}

static void test_format_compact(void **state)
{
    (void)state;
    char buf[64];
    shape s = parse_ok("5,3,4,1");
    shape_format_compact(&s, buf, sizeof buf);
    assert_string_equal(buf, "(5,3,4,1)");
    s = parse_ok("(5,)");
    shape_format_compact(&s, buf, sizeof buf);
    assert_string_equal(buf, "(5,)");
    s = parse_ok("scalar");
    shape_format_compact(&s, buf, sizeof buf);
    assert_string_equal(buf, "()");
}

static void test_format_round_trips(void **state)
{
    (void)state;
    static const char *const texts[] = {"()", "(5,)", "(5,3,4,1)", "(0,1,2)"};
    char buf[64];
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        shape s = parse_ok(texts[i]);
        shape_format(&s, buf, sizeof buf);
        shape t = parse_ok(buf);
        assert_int_equal(s.rank, t.rank);
        assert_memory_equal(s.dims, t.dims, (size_t)s.rank * sizeof s.dims[0]);
        shape_format_compact(&s, buf, sizeof buf);
        assert_string_equal(buf, texts[i]);
    }
}

static void test_format_truncates_safely(void **state)
{
    (void)state;
    shape s = parse_ok("5,3,4,1");
    char buf[16];
    memset(buf, 'Z', sizeof buf);
    shape_format(&s, buf, 8);
    assert_string_equal(buf, "(5,...)");
    assert_int_equal(buf[9], 'Z');
    shape_format(&s, buf, 3);
    assert_string_equal(buf, "(5");
    buf[0] = 'Q';
    shape_format(&s, buf, 0);   /* writes nothing */
    assert_int_equal(buf[0], 'Q');
    shape_format(&s, buf, 1);
    assert_string_equal(buf, "");
    /* exactly enough room */
    shape_format(&s, buf, 13);
    assert_string_equal(buf, "(5, 3, 4, 1)");
    shape_format(&s, buf, 12);
    assert_string_equal(buf, "(5, 3, ...)");
}

static void test_format_rank64_of_huge_sizes(void **state)
{
    (void)state;
    shape s;
    s.rank = BCG_MAX_RANK;
    for (int i = 0; i < s.rank; i++)
        s.dims[i] = INT64_MAX;
    char buf[2048];
    shape_format(&s, buf, sizeof buf);
    assert_int_equal(strlen(buf), 64 * 19 + 63 * 2 + 2);
    shape t = parse_ok(buf);
    assert_int_equal(t.rank, 64);
    assert_true(t.dims[63] == INT64_MAX);
}

static void test_elements(void **state)
{
    (void)state;
    int64_t n = -1;
    shape s = parse_ok("()");
    assert_true(shape_elements(&s, &n));
    assert_int_equal(n, 1);
    s = parse_ok("5,3,4,1");
    assert_true(shape_elements(&s, &n));
    assert_int_equal(n, 60);
    s = parse_ok("5,0,4");
    assert_true(shape_elements(&s, &n));
    assert_int_equal(n, 0);
    s = parse_ok("4294967296,4294967296");
    assert_false(shape_elements(&s, &n));
    /* a zero anywhere wins over sizes whose product would overflow */
    s = parse_ok("4294967296,4294967296,0");
    assert_true(shape_elements(&s, &n));
    assert_int_equal(n, 0);
    s = parse_ok("9223372036854775807,1");
    assert_true(shape_elements(&s, &n));
    assert_true(n == INT64_MAX);
    s = parse_ok("3074457345618258602,3");   /* 3 * that = INT64_MAX - 1 */
    assert_true(shape_elements(&s, &n));
    assert_true(n == INT64_MAX - 1);
    s = parse_ok("3074457345618258603,3");   /* INT64_MAX + 2 */
    assert_false(shape_elements(&s, &n));
}

/* ---- the plain rules ------------------------------------------------------------ */

static void test_same_shapes(void **state)
{
    (void)state;
    expect_result(BROADCAST(NULL, NAMES, "5,7,3", "5,7,3"), "(5,7,3)");
    assert_string_equal(last.out.warning, "");
}

static void test_right_alignment(void **state)
{
    (void)state;
    expect_result(BROADCAST(NULL, NAMES, "5,3,4,1", "3,1,1"), "(5,3,4,1)");
    expect_compact(&last.out.aligned[0], "(5,3,4,1)");
    expect_compact(&last.out.aligned[1], "(1,3,1,1)");
    expect_result(BROADCAST(NULL, NAMES, "3", "2,1"), "(2,3)");
    expect_compact(&last.out.aligned[0], "(1,3)");
    expect_compact(&last.out.aligned[1], "(2,1)");
}

static void test_size_one_expands_both_ways(void **state)
{
    (void)state;
    expect_result(BROADCAST(NULL, NAMES, "1,4", "3,1"), "(3,4)");
    expect_result(BROADCAST(NULL, NAMES, "1", "1"), "(1,)");
    expect_result(BROADCAST(NULL, NAMES, "1,1,1", "1"), "(1,1,1)");
}

static void test_rank0_broadcasts_like_numpy(void **state)
{
    (void)state;
    expect_result(BROADCAST(NULL, NAMES, "5,3", "()"), "(5,3)");
    expect_compact(&last.out.aligned[1], "(1,1)");
    expect_result(BROADCAST(NULL, NAMES, "()", "0"), "(0,)");
    expect_result(BROADCAST(NULL, NAMES, "()", "()"), "()");
    assert_int_equal(last.out.aligned[0].rank, 0);
    expect_result(BROADCAST(NULL, NAMES, "scalar"), "()");
    expect_result(BROADCAST(NULL, NAMES, "()", "5,3,4,1", "[]"), "(5,3,4,1)");
}

static void test_size_zero(void **state)
{
    (void)state;
    expect_result(BROADCAST(NULL, NAMES, "0", "1"), "(0,)");
    expect_result(BROADCAST(NULL, NAMES, "0,1", "1,5"), "(0,5)");
    expect_result(BROADCAST(NULL, NAMES, "0", "0"), "(0,)");
    expect_result(BROADCAST(NULL, NAMES, "2,0", "0"), "(2,0)");
    expect_error(BROADCAST(NULL, NAMES, "0", "3"), BCG_ERR_BROADCAST,
                 "cannot broadcast b (3,) against a (0,): dimension 0 has size 3 in b and 0 in a");
    expect_error(BROADCAST(NULL, NAMES, "2,2", "0"), BCG_ERR_BROADCAST,
                 "cannot broadcast b (0,) against a (2,2): dimension 1 has size 0 in b and 2 in a");
}

static void test_single_operand(void **state)
{
    (void)state;
    expect_result(BROADCAST(NULL, NAMES, "4,0,2"), "(4,0,2)");
    expect_compact(&last.out.aligned[0], "(4,0,2)");
}

static void test_error_message_and_fields(void **state)
{
    (void)state;
    expect_error(BROADCAST(NULL, NAMES, "5,2,4,1", "3,1,1"), BCG_ERR_BROADCAST,
                 "cannot broadcast b (3,1,1) against a (5,2,4,1): dimension 1 has size 3 "
                 "in b and 2 in a");
    assert_int_equal(last.err.operand, 1);
    assert_int_equal(last.err.dimension, 1);
    assert_int_equal(last.err.column, 0);
}

static void test_error_reports_rightmost_dimension(void **state)
{
    (void)state;
    expect_error(BROADCAST(NULL, NAMES, "2,3", "4,5"), BCG_ERR_BROADCAST,
                 "cannot broadcast b (4,5) against a (2,3): dimension 1 has size 5 in b and 3 in a");
    assert_int_equal(last.err.dimension, 1);
    expect_error(BROADCAST(NULL, NAMES, "2,3,1", "4,3,7"), BCG_ERR_BROADCAST,
                 "cannot broadcast b (4,3,7) against a (2,3,1): dimension 0 has size 4 in b and 2 in a");
    assert_int_equal(last.err.dimension, 0);
}

static void test_error_without_names(void **state)
{
    (void)state;
    expect_error(BROADCAST(NULL, NULL, "2", "3"), BCG_ERR_BROADCAST,
                 "cannot broadcast operand 1 (3,) against operand 0 (2,): dimension 0 has "
                 "size 3 in operand 1 and 2 in operand 0");
    static const char *const some[] = {"x", NULL};
    expect_error(BROADCAST(NULL, some, "2", "3"), BCG_ERR_BROADCAST,
                 "cannot broadcast operand 1 (3,) against x (2,): dimension 0 has size 3 in "
                 "operand 1 and 2 in x");
}

static void test_three_operands(void **state)
{
    (void)state;
    expect_result(BROADCAST(NULL, NAMES, "5,3,4,1", "3,1,1", "()"), "(5,3,4,1)");
    expect_compact(&last.out.aligned[2], "(1,1,1,1)");
    expect_result(BROADCAST(NULL, NAMES, "8,1,6,1", "7,1,5", "1,1"), "(8,7,6,5)");
    expect_result(BROADCAST(NULL, NAMES, "1,3", "2,1", "1", "2,3"), "(2,3)");
}

static void test_three_operands_first_conflicting_pair(void **state)
{
    (void)state;
    /* c is the first operand that does not fit those before it; a is the
     * first of those it conflicts with */
    expect_error(BROADCAST(NULL, NAMES, "2,1", "1,3", "4,1"), BCG_ERR_BROADCAST,
                 "cannot broadcast c (4,1) against a (2,1): dimension 0 has size 4 in c and 2 in a");
    assert_int_equal(last.err.operand, 2);
    assert_int_equal(last.err.dimension, 0);
    /* c fits a but not b */
    expect_error(BROADCAST(NULL, NAMES, "1,1", "2,3", "2,4"), BCG_ERR_BROADCAST,
                 "cannot broadcast c (2,4) against b (2,3): dimension 1 has size 4 in c and 3 in b");
    /* two conflicts: b/c comes before d */
    expect_error(BROADCAST(NULL, NAMES, "1", "2", "3", "4"), BCG_ERR_BROADCAST,
                 "cannot broadcast c (3,) against b (2,): dimension 0 has size 3 in c and 2 in b");
    /* the pair is found even when the running result came from another operand */
    expect_error(BROADCAST(NULL, NAMES, "1,3", "2,1", "2,4"), BCG_ERR_BROADCAST,
                 "cannot broadcast c (2,4) against a (1,3): dimension 1 has size 4 in c and 3 in a");
}

static void test_sixty_four_operands(void **state)
{
    (void)state;
    /* operand i: rank 64, size (i % 5) + 2 at dimension i, 1 elsewhere */
    static shape shapes[BCG_MAX_OPERANDS];
    for (int i = 0; i < BCG_MAX_OPERANDS; i++) {
        shapes[i].rank = BCG_MAX_RANK;
        for (int d = 0; d < BCG_MAX_RANK; d++)
            shapes[i].dims[d] = d == i ? (i % 5) + 2 : 1;
    }
    error_clear(&last.err);
    assert_int_equal(shape_broadcast(BCG_MAX_OPERANDS, shapes, NULL, NULL, 0, &last.out,
                                     &last.err), BCG_ERR_LIMIT);
    /* 2*3*4*5*6 repeated ~13 times overflows; shrink to sizes 1 and 2 at the ends */
    for (int i = 0; i < BCG_MAX_OPERANDS; i++)
        shapes[i].dims[i] = (i % 8 == 0) ? 2 : 1;
    error_clear(&last.err);
    assert_int_equal(shape_broadcast(BCG_MAX_OPERANDS, shapes, NULL, NULL, 0, &last.out,
                                     &last.err), BCG_OK);
    assert_int_equal(last.out.result.rank, 64);
    for (int d = 0; d < BCG_MAX_RANK; d++)
        assert_int_equal(last.out.result.dims[d], d % 8 == 0 ? 2 : 1);
    for (int i = 0; i < BCG_MAX_OPERANDS; i++)
        assert_memory_equal(last.out.aligned[i].dims, shapes[i].dims, sizeof shapes[i].dims);

    /* the last operand conflicts with operand 0 at dimension 0 */
    shapes[63].dims[0] = 3;
    error_clear(&last.err);
    assert_int_equal(shape_broadcast(BCG_MAX_OPERANDS, shapes, NULL, NULL, 0, &last.out,
                                     &last.err), BCG_ERR_BROADCAST);
    assert_int_equal(last.err.operand, 63);
    assert_int_equal(last.err.dimension, 0);
    assert_non_null(strstr(last.err.message, "cannot broadcast operand 63 (3,1,1,"));
    assert_non_null(strstr(last.err.message, "...) against operand 0 (2,1,1,"));
    /* the message keeps its end even with rank-64 shapes */
    assert_non_null(strstr(last.err.message,
                           "...): dimension 0 has size 3 in operand 63 and 2 in operand 0"));
}

static void test_sixty_four_rank0_operands(void **state)
{
    (void)state;
    static shape shapes[BCG_MAX_OPERANDS];
    for (int i = 0; i < BCG_MAX_OPERANDS; i++)
        shapes[i].rank = 0;
    shapes[40].rank = 2;
    shapes[40].dims[0] = 3;
    shapes[40].dims[1] = 0;
    error_clear(&last.err);
    assert_int_equal(shape_broadcast(BCG_MAX_OPERANDS, shapes, NULL, NULL, 8, &last.out,
                                     &last.err), BCG_OK);
    expect_compact(&last.out.result, "(3,0)");
    expect_compact(&last.out.aligned[0], "(1,1)");
}

static void test_operand_count_limits(void **state)
{
    (void)state;
    static shape shapes[BCG_MAX_OPERANDS + 1];
    error_clear(&last.err);
    assert_int_equal(shape_broadcast(BCG_MAX_OPERANDS + 1, shapes, NULL, NULL, 0, &last.out,
                                     &last.err), BCG_ERR_USAGE);
    assert_string_equal(last.err.message,
                        "65 operands: broadcasting takes 1 to 64 (BCG_MAX_OPERANDS)");
    error_clear(&last.err);
    assert_int_equal(shape_broadcast(0, shapes, NULL, NULL, 0, &last.out, &last.err),
                     BCG_ERR_USAGE);
    error_clear(&last.err);
    assert_int_equal(shape_broadcast(1, NULL, NULL, NULL, 0, &last.out, &last.err),
                     BCG_ERR_USAGE);
    error_clear(&last.err);
    assert_int_equal(shape_broadcast(1, shapes, NULL, NULL, 0, NULL, &last.err),
                     BCG_ERR_USAGE);
}

static void test_invalid_shapes_in_structs(void **state)
{
    (void)state;
    shape shapes[2] = {{.rank = 1, .dims = {3}}, {.rank = 65}};
    error_clear(&last.err);
    assert_int_equal(shape_broadcast(2, shapes, NAMES, NULL, 0, &last.out, &last.err),
                     BCG_ERR_SHAPE);
    assert_string_equal(last.err.message, "b has rank 65; ranks go from 0 to 64 (BCG_MAX_RANK)");
    assert_int_equal(last.err.operand, 1);
    shapes[1].rank = -1;
    error_clear(&last.err);
    assert_int_equal(shape_broadcast(2, shapes, NAMES, NULL, 0, &last.out, &last.err),
                     BCG_ERR_SHAPE);
    shapes[1].rank = 2;
    shapes[1].dims[0] = 1;
    shapes[1].dims[1] = -3;
    error_clear(&last.err);
    assert_int_equal(shape_broadcast(2, shapes, NAMES, NULL, 0, &last.out, &last.err),
                     BCG_ERR_SHAPE);
    assert_string_equal(last.err.message, "b has negative size -3 at dimension 1");
}

/* ---- overflow ------------------------------------------------------------------- */

static void test_overflow_of_elements(void **state)
{
    (void)state;
    expect_error(BROADCAST(NULL, NAMES, "4294967296,1", "1,4294967296"), BCG_ERR_LIMIT,
                 "broadcast result (4294967296,4294967296) has more elements than INT64_MAX");
    /* an operand that cannot exist */
    expect_error(BROADCAST(NULL, NAMES, "2", "4294967296,4294967296"), BCG_ERR_LIMIT,
                 "b (4294967296,4294967296) has more elements than INT64_MAX");
    assert_int_equal(last.err.operand, 1);
    /* zero elements: no overflow however large the other sizes */
    expect_result(BROADCAST(NULL, NAMES, "0,1", "1,9223372036854775807"),
                  "(0,9223372036854775807)");
}

static void test_overflow_of_bytes(void **state)
{
    (void)state;
    const char *const big[] = {"1152921504606846976"};   /* 2^60 */
    assert_int_equal(run(NULL, 8, NAMES, 1, big), BCG_ERR_LIMIT);
    assert_string_equal(last.err.message,
                        "broadcast result (1152921504606846976,) has 1152921504606846976 "
                        "elements of 8 bytes: more than INT64_MAX bytes");
    assert_int_equal(run(NULL, 4, NAMES, 1, big), BCG_OK);    /* 2^62 bytes */
    assert_int_equal(run(NULL, 0, NAMES, 1, big), BCG_OK);    /* not checked */
    const char *const edge[] = {"1152921504606846975", "1"};  /* INT64_MAX / 8 */
    assert_int_equal(run(NULL, 8, NAMES, 2, edge), BCG_OK);
    const char *const bytes1[] = {"9223372036854775807"};
    assert_int_equal(run(NULL, 1, NAMES, 1, bytes1), BCG_OK);
    assert_int_equal(run(NULL, 2, NAMES, 1, bytes1), BCG_ERR_LIMIT);
}

/* ---- in-place ------------------------------------------------------------------- */

static void test_inplace_ok(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.inplace = 0;
    expect_result(BROADCAST(&r, NAMES, "5,3,4,1", "3,1,1"), "(5,3,4,1)");
    expect_result(BROADCAST(&r, NAMES, "5,7,3", "5,7,3"), "(5,7,3)");
    expect_result(BROADCAST(&r, NAMES, "()", "()"), "()");
    expect_result(BROADCAST(&r, NAMES, "0,3", "1,3", "()"), "(0,3)");
    r.inplace = 2;
    expect_result(BROADCAST(&r, NAMES, "3", "2,1", "2,3"), "(2,3)");
}

static void test_inplace_shape_change(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.inplace = 0;
    expect_error(BROADCAST(&r, NAMES, "3,1", "3,4"), BCG_ERR_BROADCAST,
                 "in-place result cannot change the shape of a (3,1): broadcast result is "
                 "(3,4), dimension 1 has size 1 in a and 4 in the result");
    assert_int_equal(last.err.operand, 0);
    assert_int_equal(last.err.dimension, 1);
    /* PyTorch: x (1,3,1).add_(y (3,1,7)) fails at dimension 2 */
    expect_error(BROADCAST(&r, NAMES, "1,3,1", "3,1,7"), BCG_ERR_BROADCAST,
                 "in-place result cannot change the shape of a (1,3,1): broadcast result is "
                 "(3,3,7), dimension 2 has size 1 in a and 7 in the result");
    assert_int_equal(last.err.dimension, 2);
    /* y.add_(x) where x.add_(y) works */
    r.inplace = 1;
    expect_error(BROADCAST(&r, NAMES, "5,3,4,1", "3,1,1"), BCG_ERR_BROADCAST,
                 "in-place result cannot change the shape of b (3,1,1): broadcast result is "
                 "(5,3,4,1), dimension 2 has size 1 in b and 4 in the result");
}

static void test_inplace_rank_change(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.inplace = 0;
    expect_error(BROADCAST(&r, NAMES, "3,4", "1,3,4"), BCG_ERR_BROADCAST,
                 "in-place result cannot change the shape of a (3,4): broadcast result is "
                 "(1,3,4), which has rank 3 where a has rank 2");
    assert_int_equal(last.err.dimension, -1);
    expect_error(BROADCAST(&r, NAMES, "()", "1"), BCG_ERR_BROADCAST,
                 "in-place result cannot change the shape of a (): broadcast result is "
                 "(1,), which has rank 1 where a has rank 0");
    /* a size difference is reported before the rank difference */
    expect_error(BROADCAST(&r, NAMES, "3,1", "2,3,4"), BCG_ERR_BROADCAST,
                 "in-place result cannot change the shape of a (3,1): broadcast result is "
                 "(2,3,4), dimension 2 has size 1 in a and 4 in the result");
}

static void test_inplace_broadcast_error_comes_first(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.inplace = 0;
    expect_error(BROADCAST(&r, NAMES, "3,1", "2,4"), BCG_ERR_BROADCAST,
                 "cannot broadcast b (2,4) against a (3,1): dimension 0 has size 2 in b and 3 in a");
}

static void test_inplace_operand_out_of_range(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.inplace = 2;
    expect_error(BROADCAST(&r, NAMES, "3", "3"), BCG_ERR_USAGE,
                 "in-place operand 2 does not exist: there are 2 operands");
    r.inplace = -2;
    assert_int_equal(BROADCAST(&r, NAMES, "3"), BCG_ERR_USAGE);
}

/* ---- Paddle's axis ------------------------------------------------------------------ */

static void test_axis_paddle_examples(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.axis = 1;
    expect_result(BROADCAST(&r, NAMES, "2,1,4", "3,1"), "(2,3,4)");
    expect_compact(&last.out.aligned[0], "(2,1,4)");
    expect_compact(&last.out.aligned[1], "(1,3,1)");
    expect_error(BROADCAST(&r, NAMES, "2,3,4,5", "4,5"), BCG_ERR_BROADCAST,
                 "cannot broadcast b (4,5) at axis 1 against a (2,3,4,5): dimension 2 has "
                 "size 5 in b and 4 in a");
    assert_int_equal(last.err.operand, 1);
    assert_int_equal(last.err.dimension, 2);
    expect_result(BROADCAST(&r, NAMES, "2,3,4,5", "3"), "(2,3,4,5)");
    expect_compact(&last.out.aligned[1], "(1,3,1,1)");
}

static void test_axis_minus_one_is_right_alignment(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.axis = -1;
    expect_result(BROADCAST(&r, NAMES, "2,3,4,5", "4,5"), "(2,3,4,5)");
    expect_compact(&last.out.aligned[1], "(1,1,4,5)");
    expect_error(BROADCAST(&r, NAMES, "2,3,4,5", "3"), BCG_ERR_BROADCAST,
                 "cannot broadcast b (3,) against a (2,3,4,5): dimension 3 has size 3 in b and 5 in a");
    /* y first: the lower rank is y whatever the order */
    expect_result(BROADCAST(&r, NAMES, "3,1", "2,1,4"), "(2,3,4)");
}

static void test_axis_lower_rank_first(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.axis = 1;
    expect_result(BROADCAST(&r, NAMES, "3,1", "2,1,4"), "(2,3,4)");
    expect_compact(&last.out.aligned[0], "(1,3,1)");
    expect_compact(&last.out.aligned[1], "(2,1,4)");
    /* y is still named first in the error */
    expect_error(BROADCAST(&r, NAMES, "4,5", "2,3,4,5"), BCG_ERR_BROADCAST,
                 "cannot broadcast a (4,5) at axis 1 against b (2,3,4,5): dimension 2 has "
                 "size 5 in a and 4 in b");
    assert_int_equal(last.err.operand, 0);
}

static void test_axis_both_directions(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.axis = 0;
    /* y (3,4) at axis 0 of x (1,4,5): x's 1 takes y's 3, y's padding takes 5 */
    expect_result(BROADCAST(&r, NAMES, "1,4,5", "3,4"), "(3,4,5)");
    expect_compact(&last.out.aligned[1], "(3,4,1)");
    r.axis = 2;
    expect_result(BROADCAST(&r, NAMES, "2,3,1", "7"), "(2,3,7)");
    expect_compact(&last.out.aligned[1], "(1,1,7)");
}

static void test_axis_drops_trailing_ones(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.axis = 2;
    expect_result(BROADCAST(&r, NAMES, "2,3,4,5", "4,5,1"), "(2,3,4,5)");
    expect_compact(&last.out.aligned[1], "(1,1,4,5)");
    r.axis = 3;
    expect_result(BROADCAST(&r, NAMES, "2,3,4,5", "5,1,1"), "(2,3,4,5)");
    expect_compact(&last.out.aligned[1], "(1,1,1,5)");
}

static void test_axis_equal_ranks_other_axis(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.axis = 1;
    expect_error(BROADCAST(&r, NAMES, "2,3", "3,1"), BCG_ERR_BROADCAST,
                 "axis 1 needs operands of different ranks, but a (2,3) and b (3,1) both "
                 "have rank 2 (with equal ranks the axis must be -1 or 0)");
    assert_int_equal(last.err.operand, 1);
    r.axis = 2;
    assert_int_equal(BROADCAST(&r, NAMES, "2,3,4", "2,3,4"), BCG_ERR_BROADCAST);
    /* out of range stays the out-of-range message */
    r.axis = 3;
    expect_error(BROADCAST(&r, NAMES, "2,3,4", "2,3,4"), BCG_ERR_BROADCAST,
                 "axis 3 is out of range for a (2,3,4): the axis must be -1 or 0 to 2");
}

static void test_axis_does_not_fit(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.axis = 2;
    expect_error(BROADCAST(&r, NAMES, "2,3,4", "4,5"), BCG_ERR_BROADCAST,
                 "b (4,5) does not fit into a (2,3,4) at axis 2: its dimension 1 (size 5) "
                 "would be past the end, and only trailing 1s can be dropped");
    assert_int_equal(last.err.operand, 1);
    expect_error(BROADCAST(&r, NAMES, "4,1,5", "2,3,4,5"), BCG_ERR_BROADCAST,
                 "a (4,1,5) does not fit into b (2,3,4,5) at axis 2: its dimension 2 (size 5) "
                 "would be past the end, and only trailing 1s can be dropped");
    assert_int_equal(last.err.operand, 0);
}

static void test_axis_equal_ranks_zero_and_minus_one(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.axis = 0;
    expect_result(BROADCAST(&r, NAMES, "2,1", "1,3"), "(2,3)");
    expect_compact(&last.out.aligned[1], "(1,3)");
    expect_error(BROADCAST(&r, NAMES, "2,1", "3,3"), BCG_ERR_BROADCAST,
                 "cannot broadcast b (3,3) at axis 0 against a (2,1): dimension 0 has size 3 "
                 "in b and 2 in a");
    r.axis = -1;
    expect_result(BROADCAST(&r, NAMES, "2,1", "1,3"), "(2,3)");
}

static void test_axis_out_of_range(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.axis = 3;
    expect_error(BROADCAST(&r, NAMES, "2,3,4", "3"), BCG_ERR_BROADCAST,
                 "axis 3 is out of range for a (2,3,4): the axis must be -1 or 0 to 2");
    r.axis = -2;
    expect_error(BROADCAST(&r, NAMES, "2,3,4", "3"), BCG_ERR_BROADCAST,
                 "axis -2 is out of range for a (2,3,4): the axis must be -1 or 0 to 2");
    r.axis = 0;
    expect_error(BROADCAST(&r, NAMES, "()", "()"), BCG_ERR_BROADCAST,
                 "axis 0 is out of range: a () has rank 0, so the axis must be -1");
    r.axis = -1;
    expect_result(BROADCAST(&r, NAMES, "()", "()"), "()");
    r.axis = 1;
    expect_result(BROADCAST(&r, NAMES, "2,3", "()"), "(2,3)");
}

static void test_axis_needs_two_operands(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.axis = 1;
    expect_error(BROADCAST(&r, NAMES, "2,3,4", "3", "4"), BCG_ERR_USAGE,
                 "axis 1 needs exactly two operands (x and y), not 3");
    expect_error(BROADCAST(&r, NAMES, "2,3,4"), BCG_ERR_USAGE,
                 "axis 1 needs exactly two operands (x and y), not 1");
    r.axis = -1;
    assert_int_equal(BROADCAST(&r, NAMES, "2,3,4", "3", "4"), BCG_ERR_USAGE);
}

static void test_axis_with_inplace(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.axis = 1;
    r.inplace = 0;
    expect_result(BROADCAST(&r, NAMES, "2,3,4", "3"), "(2,3,4)");
    r.inplace = 1;
    expect_error(BROADCAST(&r, NAMES, "2,3,4", "3"), BCG_ERR_BROADCAST,
                 "in-place result cannot change the shape of b (3,): broadcast result is "
                 "(2,3,4), dimension 2 has size 1 in b and 4 in the result");
}

/* ---- strict rank and the legacy warning ------------------------------------------- */

static void test_strict_rank(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.strict_rank = true;
    expect_error(BROADCAST(&r, NAMES, "3", "()"), BCG_ERR_BROADCAST,
                 "b is rank 0 (a scalar); strict rank requires every operand to have at "
                 "least one dimension");
    assert_int_equal(last.err.operand, 1);
    assert_int_equal(last.err.dimension, -1);
    expect_error(BROADCAST(&r, NULL, "()", "3"), BCG_ERR_BROADCAST,
                 "operand 0 is rank 0 (a scalar); strict rank requires every operand to "
                 "have at least one dimension");
    expect_result(BROADCAST(&r, NAMES, "3", "1"), "(3,)");
    /* (0,) has one dimension: strict rank accepts it, the sizes then decide */
    expect_result(BROADCAST(&r, NAMES, "0", "1"), "(0,)");
}

static void test_legacy_warning(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.warn_legacy = true;
    expect_result(BROADCAST(&r, NAMES, "4,1", "4"), "(4,4)");
    assert_string_equal(last.out.warning,
                        "a (4,1) and b (4,) have different shapes but the same number of "
                        "elements (4): they broadcast to (4,4) (16 elements), where the old "
                        "pointwise (1-D) behaviour paired them element by element into (4,1)");
    /* the old rule gave the first operand's shape: a different shape only */
    expect_result(BROADCAST(&r, NAMES, "4", "1,4"), "(1,4)");
    assert_string_equal(last.out.warning,
                        "a (4,) and b (1,4) have different shapes but the same number of "
                        "elements (4): they broadcast to (1,4), where the old pointwise (1-D) "
                        "behaviour gave the same elements in a's shape (4,)");
    expect_result(BROADCAST(&r, NULL, "6,1", "6,1", "1,6", "6"), "(6,6)");
    assert_non_null(strstr(last.out.warning, "operand 0 (6,1) and operand 2 (1,6) have"));
}

static void test_legacy_warning_not_given(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.warn_legacy = true;
    expect_result(BROADCAST(&r, NAMES, "4,4", "4,4"), "(4,4)");   /* same shapes */
    assert_string_equal(last.out.warning, "");
    expect_result(BROADCAST(&r, NAMES, "4,1", "3"), "(4,3)");     /* 4 vs 3 elements */
    assert_string_equal(last.out.warning, "");
    expect_result(BROADCAST(&r, NAMES, "4,1", "4", "2,1,1"), "(2,4,4)");
    assert_string_equal(last.out.warning, "");                    /* not all equal */
    /* the old pointwise rule gives the same result: nothing to warn about */
    expect_result(BROADCAST(&r, NAMES, "1,4", "4"), "(1,4)");
    assert_string_equal(last.out.warning, "");
    expect_result(BROADCAST(&r, NAMES, "2,3", "1,2,3", "2,3"), "(1,2,3)");
    assert_true(last.out.warning[0] != 0);                        /* (2,3) became (1,2,3) */
    expect_result(BROADCAST(&r, NAMES, "1,2,3", "2,3"), "(1,2,3)");
    assert_string_equal(last.out.warning, "");
    r.warn_legacy = false;
    expect_result(BROADCAST(&r, NAMES, "4,1", "4"), "(4,4)");
    assert_string_equal(last.out.warning, "");
    expect_result(BROADCAST(NULL, NAMES, "4,1", "4"), "(4,4)");
    assert_string_equal(last.out.warning, "");
}

static void test_legacy_warning_long_shapes_are_cut(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    r.warn_legacy = true;
    char a[200] = "", b[200] = "";
    for (int i = 0; i < 40; i++) {
        strcat(a, i ? ",1" : "7");
        strcat(b, i ? ",1" : "1");
    }
    strcat(b, ",7");
    assert_int_equal(BROADCAST(&r, NAMES, a, b), BCG_OK);
    assert_true(strlen(last.out.warning) < sizeof last.out.warning);
    assert_non_null(strstr(last.out.warning, "same number of elements (7)"));
}

/* ---- the seed documents ------------------------------------------------------------- */

typedef struct seed_case {
    const char *x, *y;
    const char *result;   /* NULL: an error */
    int dimension;        /* for errors: the reported dimension */
} seed_case;

static void test_seed_examples(void **state)
{
    (void)state;
    static const seed_case cases[] = {
        /* PyTorch notes (French) and the Chinese write-ups of them */
        {"5,7,3", "5,7,3", "(5,7,3)", 0},
        {"0", "2,2", NULL, 1},            /* torch.empty((0,)) vs (2,2) */
        {"0", "5,7,3", NULL, 2},          /* "... at non-singleton dimension 2" */
        {"5,3,4,1", "3,1,1", "(5,3,4,1)", 0},
        {"5,2,4,1", "3,1,1", NULL, 1},    /* "... at non-singleton dimension 1" */
        {"5,1,4,1", "3,1,1", "(5,3,4,1)", 0},
        {"1", "3,1,7", "(3,1,7)", 0},
        {"5,2,4,1", "1,1", "(5,2,4,1)", 0},
        {"4,1", "4", "(4,4)", 0},         /* the backwards-compatibility example */
        {"3,3", "3", "(3,3)", 0},
        {"3,3", "1,3", "(3,3)", 0},
        {"2,1,2,2", "3,2,1", "(2,3,2,2)", 0},
        {"3,2,2", "2", "(3,2,2)", 0},     /* example 3: y aligned as (1,1,2) */
        {"3,2,3", "3", "(3,2,3)", 0},
        {"5,2,4", "5,2", NULL, 2},        /* example 5: right alignment, 4 vs 2 */
        /* Paddle's guide */
        {"2,3,4", "2,3,4", "(2,3,4)", 0},
        {"2,3,1,5", "3,4,1", "(2,3,4,5)", 0},
        {"2,3,4", "2,3,6", NULL, 2},
        {"2,1,4", "3,1", "(2,3,4)", 0},
        {"2,1,4", "3,2", NULL, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const seed_case *c = &cases[i];
        bcg_status status = BROADCAST(NULL, NAMES, c->x, c->y);
        if (c->result) {
            expect_result(status, c->result);
        } else {
            assert_int_equal(status, BCG_ERR_BROADCAST);
            assert_int_equal(last.err.dimension, c->dimension);
            assert_int_equal(last.err.operand, 1);
        }
    }
    /* the exact PyTorch-style wording for the documented failure */
    expect_error(BROADCAST(NULL, NAMES, "5,2,4,1", "3,1,1"), BCG_ERR_BROADCAST,
                 "cannot broadcast b (3,1,1) against a (5,2,4,1): dimension 1 has size 3 "
                 "in b and 2 in a");
    expect_error(BROADCAST(NULL, NAMES, "2,1,4", "3,2"), BCG_ERR_BROADCAST,
                 "cannot broadcast b (3,2) against a (2,1,4): dimension 2 has size 2 in b "
                 "and 4 in a");
}

static void test_seed_strict_rank_and_inplace(void **state)
{
    (void)state;
    broadcast_rules r = default_rules();
    /* "each tensor has at least one dimension": a scalar is refused */
    r.strict_rank = true;
    assert_int_equal(BROADCAST(&r, NAMES, "()", "5,7,3"), BCG_ERR_BROADCAST);
    expect_result(BROADCAST(&r, NAMES, "5,7,3", "5,7,3"), "(5,7,3)");
    r.strict_rank = false;
    /* in-place: x.add_(y) works, y.add_(x) does not */
    r.inplace = 0;
    expect_result(BROADCAST(&r, NAMES, "5,3,4,1", "3,1,1"), "(5,3,4,1)");
    expect_result(BROADCAST(&r, NAMES, "5,7,3", "5,7,3"), "(5,7,3)");
    expect_result(BROADCAST(&r, NAMES, "3,2,2", "2"), "(3,2,2)");
    assert_int_equal(BROADCAST(&r, NAMES, "1,3,1", "3,1,7"), BCG_ERR_BROADCAST);
    assert_int_equal(last.err.dimension, 2);
    r.inplace = 1;
    assert_int_equal(BROADCAST(&r, NAMES, "3,2,2", "2"), BCG_ERR_BROADCAST);
    assert_int_equal(last.err.dimension, 1);
    /* backcompat warning */
    r = default_rules();
    r.warn_legacy = true;
    expect_result(BROADCAST(&r, NAMES, "4,1", "4"), "(4,4)");
    assert_true(last.out.warning[0] != 0);
    /* Paddle's axis examples */
    r = default_rules();
    r.axis = 1;
    expect_result(BROADCAST(&r, NAMES, "2,1,4", "3,1"), "(2,3,4)");
    assert_int_equal(BROADCAST(&r, NAMES, "2,3,4,5", "4,5"), BCG_ERR_BROADCAST);
    expect_result(BROADCAST(&r, NAMES, "2,3,4,5", "3"), "(2,3,4,5)");
}

/* ---- bcg_broadcast_shapes ----------------------------------------------------------- */

static void test_public_success(void **state)
{
    (void)state;
    int64_t a[] = {5, 3, 4, 1}, b[] = {3, 1, 1};
    const int64_t *shapes[] = {a, b, NULL};
    int ranks[] = {4, 3, 0};
    int64_t result[BCG_MAX_RANK];
    int rank = -1;
    char warning[64] = "junk";
    bcg_error err;
    assert_int_equal(bcg_broadcast_shapes(3, shapes, ranks, NULL, NULL, result, &rank,
                                          warning, sizeof warning, &err), BCG_OK);
    assert_int_equal(err.status, BCG_OK);
    assert_int_equal(rank, 4);
    int64_t want[] = {5, 3, 4, 1};
    assert_memory_equal(result, want, sizeof want);
    assert_string_equal(warning, "");
    /* err may be NULL, warning may be NULL */
    assert_int_equal(bcg_broadcast_shapes(2, shapes, ranks, NULL, NULL, result, &rank,
                                          NULL, 0, NULL), BCG_OK);
}

static void test_public_error_clears_previous(void **state)
{
    (void)state;
    int64_t a[] = {2}, b[] = {3};
    const int64_t *shapes[] = {a, b};
    int ranks[] = {1, 1};
    const char *names[] = {"x", "y"};
    int64_t result[BCG_MAX_RANK];
    int rank;
    bcg_error err;
    error_clear(&err);
    err.status = BCG_ERR_JIT;   /* left over from an earlier call */
    assert_int_equal(bcg_broadcast_shapes(2, shapes, ranks, names, NULL, result, &rank,
                                          NULL, 0, &err), BCG_ERR_BROADCAST);
    assert_string_equal(err.message,
                        "cannot broadcast y (3,) against x (2,): dimension 0 has size 3 in y and 2 in x");
    assert_int_equal(err.operand, 1);
    assert_int_equal(err.dimension, 0);
}

static void test_public_options(void **state)
{
    (void)state;
    int64_t x[] = {2, 1, 4}, y[] = {3, 1}, s4[] = {4}, s41[] = {4, 1};
    int64_t result[BCG_MAX_RANK];
    int rank;
    bcg_error err;
    bcg_options options = {.inplace = -1, .axis = 1, .strict_rank = 0, .warn_legacy = 0,
                           .unroll_limit = 0, .unroll_factor = 1};
    const int64_t *shapes[] = {x, y};
    int ranks[] = {3, 2};
    assert_int_equal(bcg_broadcast_shapes(2, shapes, ranks, NULL, &options, result, &rank,
                                          NULL, 0, &err), BCG_OK);
    int64_t want[] = {2, 3, 4};
    assert_int_equal(rank, 3);
    assert_memory_equal(result, want, sizeof want);

    options.axis = BCG_AXIS_NONE;
    options.inplace = 0;
    assert_int_equal(bcg_broadcast_shapes(2, shapes, ranks, NULL, &options, result, &rank,
                                          NULL, 0, &err), BCG_ERR_BROADCAST);
    assert_non_null(strstr(err.message, "in-place result cannot change the shape of operand 0"));

    options.inplace = -1;
    options.warn_legacy = 1;
    const int64_t *legacy[] = {s41, s4};
    int legacy_ranks[] = {2, 1};
    char warning[256], small[16];
    assert_int_equal(bcg_broadcast_shapes(2, legacy, legacy_ranks, NULL, &options, result,
                                          &rank, warning, sizeof warning, &err), BCG_OK);
    assert_non_null(strstr(warning, "operand 0 (4,1) and operand 1 (4,) have different shapes"));
    assert_int_equal(bcg_broadcast_shapes(2, legacy, legacy_ranks, NULL, &options, result,
                                          &rank, small, sizeof small, &err), BCG_OK);
    assert_string_equal(small, "operand 0 (4,1)");

    options.warn_legacy = 0;
    options.strict_rank = 1;
    int scalar_ranks[] = {2, 0};
    assert_int_equal(bcg_broadcast_shapes(2, legacy, scalar_ranks, NULL, &options, result,
                                          &rank, NULL, 0, &err), BCG_ERR_BROADCAST);
    assert_non_null(strstr(err.message, "operand 1 is rank 0"));
}

static void test_public_argument_checks(void **state)
{
    (void)state;
    int64_t a[] = {2, 3}, negative[] = {2, -1};
    const int64_t *shapes[BCG_MAX_OPERANDS + 1];
    int ranks[BCG_MAX_OPERANDS + 1];
    for (int i = 0; i <= BCG_MAX_OPERANDS; i++) {
        shapes[i] = a;
        ranks[i] = 2;
    }
    int64_t result[BCG_MAX_RANK];
    int rank;
    bcg_error err;
    assert_int_equal(bcg_broadcast_shapes(BCG_MAX_OPERANDS, shapes, ranks, NULL, NULL,
                                          result, &rank, NULL, 0, &err), BCG_OK);
    assert_int_equal(bcg_broadcast_shapes(BCG_MAX_OPERANDS + 1, shapes, ranks, NULL, NULL,
                                          result, &rank, NULL, 0, &err), BCG_ERR_USAGE);
    assert_string_equal(err.message,
                        "bcg_broadcast_shapes: count is 65; it must be 1 to 64 (BCG_MAX_OPERANDS)");
    assert_int_equal(bcg_broadcast_shapes(0, shapes, ranks, NULL, NULL, result, &rank,
                                          NULL, 0, &err), BCG_ERR_USAGE);
    assert_int_equal(bcg_broadcast_shapes(-3, shapes, ranks, NULL, NULL, result, &rank,
                                          NULL, 0, &err), BCG_ERR_USAGE);
    assert_int_equal(bcg_broadcast_shapes(1, NULL, ranks, NULL, NULL, result, &rank,
                                          NULL, 0, &err), BCG_ERR_USAGE);
    assert_int_equal(bcg_broadcast_shapes(1, shapes, NULL, NULL, NULL, result, &rank,
                                          NULL, 0, &err), BCG_ERR_USAGE);
    assert_int_equal(bcg_broadcast_shapes(1, shapes, ranks, NULL, NULL, NULL, &rank,
                                          NULL, 0, &err), BCG_ERR_USAGE);
    assert_int_equal(bcg_broadcast_shapes(1, shapes, ranks, NULL, NULL, result, NULL,
                                          NULL, 0, &err), BCG_ERR_USAGE);

    const char *names[] = {"p", "q"};
    ranks[1] = 65;
    assert_int_equal(bcg_broadcast_shapes(2, shapes, ranks, names, NULL, result, &rank,
                                          NULL, 0, &err), BCG_ERR_SHAPE);
    assert_string_equal(err.message, "q has rank 65; ranks go from 0 to 64 (BCG_MAX_RANK)");
    ranks[1] = -1;
    assert_int_equal(bcg_broadcast_shapes(2, shapes, ranks, names, NULL, result, &rank,
                                          NULL, 0, &err), BCG_ERR_SHAPE);
    ranks[1] = 2;
    shapes[1] = negative;
    assert_int_equal(bcg_broadcast_shapes(2, shapes, ranks, names, NULL, result, &rank,
                                          NULL, 0, &err), BCG_ERR_SHAPE);
    assert_string_equal(err.message, "q has negative size -1 at dimension 1");
    shapes[1] = NULL;
    assert_int_equal(bcg_broadcast_shapes(2, shapes, ranks, names, NULL, result, &rank,
                                          NULL, 0, &err), BCG_ERR_USAGE);
    assert_string_equal(err.message, "bcg_broadcast_shapes: the shape of q (rank 2) is NULL");
    ranks[1] = 0;   /* NULL is fine for rank 0 */
    assert_int_equal(bcg_broadcast_shapes(2, shapes, ranks, names, NULL, result, &rank,
                                          NULL, 0, &err), BCG_OK);

    bcg_options options = {.inplace = 5, .axis = BCG_AXIS_NONE, .unroll_factor = 1};
    assert_int_equal(bcg_broadcast_shapes(2, shapes, ranks, names, &options, result, &rank,
                                          NULL, 0, &err), BCG_ERR_USAGE);
}

static void test_public_allocation_failure(void **state)
{
    (void)state;
    int64_t a[] = {2, 3};
    const int64_t *shapes[] = {a};
    int ranks[] = {2};
    int64_t result[BCG_MAX_RANK];
    int rank;
    bcg_error err;
    mem_fail_after(1);
    assert_int_equal(bcg_broadcast_shapes(1, shapes, ranks, NULL, NULL, result, &rank,
                                          NULL, 0, &err), BCG_ERR_NOMEM);
    mem_fail_after(0);
    assert_int_equal(bcg_broadcast_shapes(1, shapes, ranks, NULL, NULL, result, &rank,
                                          NULL, 0, &err), BCG_OK);
    /* exactly one allocation, freed */
    assert_int_equal(mem_fail_after(0), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_accepted_forms),
        cmocka_unit_test(test_parse_explicit_length),
        cmocka_unit_test(test_parse_rank_limit),
        cmocka_unit_test(test_parse_malformed_messages),
        cmocka_unit_test(test_parse_long_text_is_cut_in_message),
        cmocka_unit_test(test_parse_null_arguments),
        cmocka_unit_test(test_format_numpy_style),
        cmocka_unit_test(test_format_compact),
        cmocka_unit_test(test_format_round_trips),
        cmocka_unit_test(test_format_truncates_safely),
        cmocka_unit_test(test_format_rank64_of_huge_sizes),
        cmocka_unit_test(test_elements),
        cmocka_unit_test(test_same_shapes),
        cmocka_unit_test(test_right_alignment),
        cmocka_unit_test(test_size_one_expands_both_ways),
        cmocka_unit_test(test_rank0_broadcasts_like_numpy),
        cmocka_unit_test(test_size_zero),
        cmocka_unit_test(test_single_operand),
        cmocka_unit_test(test_error_message_and_fields),
        cmocka_unit_test(test_error_reports_rightmost_dimension),
        cmocka_unit_test(test_error_without_names),
        cmocka_unit_test(test_three_operands),
        cmocka_unit_test(test_three_operands_first_conflicting_pair),
        cmocka_unit_test(test_sixty_four_operands),
        cmocka_unit_test(test_sixty_four_rank0_operands),
        cmocka_unit_test(test_operand_count_limits),
        cmocka_unit_test(test_invalid_shapes_in_structs),
        cmocka_unit_test(test_overflow_of_elements),
        cmocka_unit_test(test_overflow_of_bytes),
        cmocka_unit_test(test_inplace_ok),
        cmocka_unit_test(test_inplace_shape_change),
        cmocka_unit_test(test_inplace_rank_change),
        cmocka_unit_test(test_inplace_broadcast_error_comes_first),
        cmocka_unit_test(test_inplace_operand_out_of_range),
        cmocka_unit_test(test_axis_paddle_examples),
        cmocka_unit_test(test_axis_minus_one_is_right_alignment),
        cmocka_unit_test(test_axis_lower_rank_first),
        cmocka_unit_test(test_axis_both_directions),
        cmocka_unit_test(test_axis_drops_trailing_ones),
        cmocka_unit_test(test_axis_equal_ranks_other_axis),
        cmocka_unit_test(test_axis_does_not_fit),
        cmocka_unit_test(test_axis_equal_ranks_zero_and_minus_one),
        cmocka_unit_test(test_axis_out_of_range),
        cmocka_unit_test(test_axis_needs_two_operands),
        cmocka_unit_test(test_axis_with_inplace),
        cmocka_unit_test(test_strict_rank),
        cmocka_unit_test(test_legacy_warning),
        cmocka_unit_test(test_legacy_warning_not_given),
        cmocka_unit_test(test_legacy_warning_long_shapes_are_cut),
        cmocka_unit_test(test_seed_examples),
        cmocka_unit_test(test_seed_strict_rank_and_inplace),
        cmocka_unit_test(test_public_success),
        cmocka_unit_test(test_public_error_clears_previous),
        cmocka_unit_test(test_public_options),
        cmocka_unit_test(test_public_argument_checks),
        cmocka_unit_test(test_public_allocation_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
