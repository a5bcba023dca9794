/* test_cnames.c - the table of names C already means (gen/cnames.c): it is
 * sorted (bsearch finds every entry), it holds the names a firmware project
 * meets in the standard headers and keywords, the reserved patterns match,
 * ordinary names pass, and bcg_emit rejects such function names with a
 * message saying where the name comes from. */
#include "internal.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

static void test_table_is_sorted_and_found(void **state)
{
    (void)state;
    size_t count = 0;
    const char *previous = NULL;
    for (const char *name; (name = cnames_entry(count)); count++) {
        if (previous && strcmp(previous, name) >= 0)
            fail_msg("the table is not strictly sorted at %s, %s", previous, name);
        if (!cnames_reserved(name))
            fail_msg("bsearch does not find %s", name);
        previous = name;
    }
    assert_true(count > 600);
}

static void test_header_names_are_reserved(void **state)
{
    (void)state;
    static const struct {
        const char *name, *origin;
    } cases[] = {
        {"round", "<math.h>"}, {"trunc", "<math.h>"}, {"log10", "<math.h>"},
        {"exp2", "<math.h>"}, {"hypot", "<math.h>"}, {"fmax", "<math.h>"},
        {"fmin", "<math.h>"}, {"roundf", "<math.h>"}, {"roundl", "<math.h>"},
        {"nextafterf", "<math.h>"}, {"isnan", "<math.h>"}, {"signbit", "<math.h>"},
        {"fpclassify", "<math.h>"}, {"HUGE_VAL", "<math.h>"}, {"NAN", "<math.h>"},
        {"offsetof", "<stddef.h>"}, {"NULL", "<stddef.h>"}, {"size_t", "<stddef.h>"},
        {"memcpy", "<string.h>"}, {"strlen", "<string.h>"}, {"abs", "<stdlib.h>"},
        {"labs", "<stdlib.h>"}, {"free", "<stdlib.h>"}, {"exit", "<stdlib.h>"},
        {"div", "<stdlib.h>"}, {"RAND_MAX", "<stdlib.h>"}, {"EOF", "<stdio.h>"},
        {"FILE", "<stdio.h>"}, {"printf", "<stdio.h>"}, {"stdout", "<stdio.h>"},
        {"errno", "<errno.h>"}, {"EDOM", "<errno.h>"}, {"int8_t", "<stdint.h>"},
        {"uint_fast16_t", "<stdint.h>"}, {"INT8_MAX", "<stdint.h>"},
        {"SIZE_MAX", "<stdint.h>"}, {"intptr_t", "<stdint.h>"}, {"UINT64_C", "<stdint.h>"},
        {"CHAR_BIT", "<limits.h>"}, {"INT_MAX", "<limits.h>"}, {"FLT_EPSILON", "<float.h>"},
        {"DBL_MAX", "<float.h>"}, {"assert", "<assert.h>"}, {"NDEBUG", "<assert.h>"},
        {"bool", "<stdbool.h>"}, {"true", "<stdbool.h>"}, {"false", "<stdbool.h>"},
        {"I", "<complex.h>"}, {"complex", "<complex.h>"}, {"csqrtf", "<complex.h>"},
        {"cabsl", "<complex.h>"}, {"isdigit", "<ctype.h>"}, {"va_list", "<stdarg.h>"},
        {"PRId32", "<inttypes.h>"}, {"SCNx8", "<inttypes.h>"}, {"EFOO", "<errno.h>"},
        {"E2BIG", "<errno.h>"}, {"FE_ROUND", "<fenv.h>"}, {"SIGFOO", "<signal.h>"},
        {"INT24_MAX", "<stdint.h>"}, {"uint24_t", "<stdint.h>"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *why = cnames_reserved(cases[i].name);
        if (!why || !strstr(why, cases[i].origin))
            fail_msg("%s: expected %s, got %s", cases[i].name, cases[i].origin,
                     why ? why : "(not reserved)");
    }
    static const char *const keywords[] = {
        "int", "restrict", "inline", "_Bool", "class", "new", "delete", "template", "this",
        "operator", "namespace", "typename", "nullptr", "constexpr", "typeof", "and",
    };
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++) {
        const char *why = cnames_reserved(keywords[i]);
        if (!why || !(strstr(why, "keyword") || strstr(why, "<iso646.h>")))
            fail_msg("%s: expected a keyword, got %s", keywords[i], why ? why : "(not reserved)");
    }
    assert_non_null(strstr(cnames_reserved("__x"), "implementation"));
    assert_non_null(strstr(cnames_reserved("_Foo"), "implementation"));
}

static void test_ordinary_names_pass(void **state)
{
    (void)state;
    /* 7.26's prefixes for future functions (to, is, str, mem) and the
     * lower-case or '_'-separated forms of the macro prefixes are not
     * enforced: see cnames.c */
    static const char *const free_names[] = {
        "x", "a", "scale", "gain", "bias", "total", "torque", "stride", "memory", "isolate",
        "ema", "fp", "Ex", "e1", "sub_t", "roundish", "sig", "accel", "y0", "y1", "_x",
        "INTERNAL", "FLOAT", "mag", "lc", "pri", "bcg_kernel",
    };
    for (size_t i = 0; i < sizeof free_names / sizeof free_names[0]; i++)
        if (cnames_reserved(free_names[i]))
            fail_msg("%s is rejected: %s", free_names[i], cnames_reserved(free_names[i]));
    assert_null(cnames_reserved(NULL));
}

static void test_emit_rejects_reserved_function_names(void **state)
{
    (void)state;
    static const int64_t shape[] = {4};
    bcg_operand operand = {"a", BCG_F32, 1, shape, NULL};
    static const struct {
        const char *name, *message;
    } cases[] = {
        {"round", "'round' is a name from <math.h>; pick another function name"},
        {"class", "'class' is a C++ keyword; pick another function name"},
        {"EOF", "'EOF' is a name from <stdio.h>; pick another function name"},
        {"memcpy", "'memcpy' is a name from <string.h>; pick another function name"},
        {"main", "'main' is the program's entry point, which has a signature of its own; "
                 "pick another function name"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *source = NULL;
        bcg_error err;
        assert_int_equal(bcg_emit("a + 1", &operand, 1, NULL, cases[i].name, &source, &err),
                         BCG_ERR_USAGE);
        assert_null(source);
        assert_string_equal(err.message, cases[i].message);
    }
    char *source = NULL;
    bcg_error err;
    assert_int_equal(bcg_emit("a + 1", &operand, 1, NULL, "total", &source, &err), BCG_OK);
    assert_non_null(strstr(source, "void total("));
    bcg_free(source);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_is_sorted_and_found),
        cmocka_unit_test(test_header_names_are_reserved),
        cmocka_unit_test(test_ordinary_names_pass),
        cmocka_unit_test(test_emit_rejects_reserved_function_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
