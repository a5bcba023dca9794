/* test_tmpl.c - the template engine: substitution, scopes, conditionals,
 * loops, standalone-line removal, every error message, speed on large lists
 * and behaviour when allocations fail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* before cmocka.h, whose fail() macro would clash with util.c's fail() */
#include "internal.h"

#include <cmocka.h>

/* ---- helpers ---------------------------------------------------------------- */

typedef struct fixture {
    arena *arena;
    tmpl_scope *root;
} fixture;

static int setup(void **state)
{
    static fixture f;
    f.arena = arena_new();
    if (!f.arena)
        return -1;
    f.root = tmpl_scope_new(f.arena, NULL);
    if (!f.root)
        return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    arena_free(f->arena);
    return 0;
}

/* Renders TEXT and checks it succeeds with exactly EXPECTED. */
static void check_render(const tmpl_scope *s, const char *text, const char *expected)
{
    strbuf sb;
    sb_init(&sb);
    bcg_error err;
    error_clear(&err);
    bcg_status status = tmpl_render(&sb, "t.tmpl", text, s, &err);
    if (status != BCG_OK)
        print_error("unexpected error: %s\n", err.message);
    assert_int_equal(status, BCG_OK);
    assert_int_equal(err.status, BCG_OK);
    char *out = sb_finish(&sb);
    assert_non_null(out);
    assert_string_equal(out, expected);
    mem_free(out);
}

/* Renders TEXT and checks it fails with STATUS and exactly MESSAGE, leaving
 * the buffer's earlier content alone. */
static void check_error(const tmpl_scope *s, const char *text, bcg_status status,
                        const char *message)
{
    strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "before|");
    bcg_error err;
    error_clear(&err);
    assert_int_equal(tmpl_render(&sb, "kernel.c.tmpl", text, s, &err), status);
    assert_int_equal(err.status, status);
    assert_string_equal(err.message, message);
    assert_int_equal(sb.len, strlen("before|"));
    assert_string_equal(sb.data, "before|");
    sb_free(&sb);
}

#define ROOT (((fixture *)*state)->root)
#define ARENA (((fixture *)*state)->arena)

/* ---- substitution ----------------------------------------------------------- */

static void test_substitute_string(void **state)
{
    tmpl_set_str(ROOT, "name", "bcg_kernel");
    tmpl_set_str(ROOT, "empty", "");
    check_render(ROOT, "void {{name}}(void);[{{empty}}]", "void bcg_kernel(void);[]");
    check_render(ROOT, "{{name}}{{name}}", "bcg_kernelbcg_kernel");
    check_render(ROOT, "no tags at all\n", "no tags at all\n");
    check_render(ROOT, "", "");
}

static void test_substitute_integers(void **state)
{
    tmpl_set_int(ROOT, "zero", 0);
    tmpl_set_int(ROOT, "count", 60);
    tmpl_set_int(ROOT, "negative", -3);
    tmpl_set_int(ROOT, "big", INT64_MAX);
    tmpl_set_int(ROOT, "small", INT64_MIN);
    check_render(ROOT, "{{zero}} {{count}} {{negative}}", "0 60 -3");
    check_render(ROOT, "{{big}} {{small}}", "9223372036854775807 -9223372036854775808");
}

static void test_blanks_inside_braces(void **state)
{
    tmpl_set_str(ROOT, "x", "X");
    tmpl_set_bool(ROOT, "yes", true);
    check_render(ROOT, "{{ x }}{{\tx\t}}{{#if  yes }}y{{ /if }}", "XXy");
    check_render(ROOT, "{{#if  ! yes}}n{{#else}}e{{/if}}", "e");
}

static void test_last_set_wins(void **state)
{
    tmpl_set_str(ROOT, "v", "first");
    tmpl_set_str(ROOT, "v", "second");
    check_render(ROOT, "{{v}}", "second");
    tmpl_set_int(ROOT, "v", 7);
    check_render(ROOT, "{{v}}", "7");
    tmpl_set_bool(ROOT, "v", false);
    check_render(ROOT, "{{#if v}}t{{#else}}f{{/if}}", "f");
    tmpl_list_add(ROOT, "v");
    check_render(ROOT, "{{#each v}}i{{/each}}", "i");
    tmpl_set_str(ROOT, "v", "text again");
    check_render(ROOT, "{{v}}", "text again");
}

static void test_string_is_copied(void **state)
{
    char buffer[16];
    strcpy(buffer, "original");
    tmpl_set_str(ROOT, "v", buffer);
    char name[8];
    strcpy(name, "nm");
    tmpl_set_str(ROOT, name, "by name");
    strcpy(buffer, "changed");
    strcpy(name, "zz");
    check_render(ROOT, "{{v}} {{nm}}", "original by name");
}

static void test_value_is_not_a_template(void **state)
{
    tmpl_set_str(ROOT, "v", "{{v}} {{#if}} {{{{");
    check_render(ROOT, "<{{v}}>", "<{{v}} {{#if}} {{{{>");
}

static void test_escape_and_lone_braces(void **state)
{
    tmpl_set_int(ROOT, "n", 2);
    check_render(ROOT, "int a[2][2] = {{{{1, {{n}}}, {3, 4}};",
                 "int a[2][2] = {{1, 2}, {3, 4}};");
    check_render(ROOT, "}} } { {x}", "}} } { {x}");
    check_render(ROOT, "{{{{{{{{", "{{{{");
}

static void test_comments(void **state)
{
    tmpl_set_int(ROOT, "n", 1);
    check_render(ROOT, "a{{! dropped }}b{{!}}c", "abc");
    check_render(ROOT, "x = {{n}}; {{! why: because }}\n", "x = 1; \n");
    /* a comment may span lines and holds anything but "}}" */
    check_render(ROOT, "a{{! one\n two {{ { }\n three }}b\n", "ab\n");
    check_render(ROOT, "a{{! ends at the first }}}b", "a}b");
}

/* ---- scopes ----------------------------------------------------------------- */

static void test_child_falls_back_to_parent(void **state)
{
    tmpl_set_str(ROOT, "type", "float");
    tmpl_set_int(ROOT, "n", 1);
    tmpl_scope *child = tmpl_scope_new(ARENA, ROOT);
    assert_non_null(child);
    tmpl_set_int(child, "n", 2);
    tmpl_scope *grandchild = tmpl_scope_new(ARENA, child);
    assert_non_null(grandchild);
    tmpl_set_str(grandchild, "own", "g");
    check_render(grandchild, "{{type}} {{n}} {{own}}", "float 2 g");
    check_render(child, "{{type}} {{n}}", "float 2");
    check_render(ROOT, "{{type}} {{n}}", "float 1");
    /* the parent does not see its children */
    check_error(ROOT, "{{own}}", BCG_ERR_USAGE, "file kernel.c.tmpl line 1: unknown variable 'own'");
}

/* ---- conditionals ------------------------------------------------------------- */

static void test_if_bool(void **state)
{
    tmpl_set_bool(ROOT, "yes", true);
    tmpl_set_bool(ROOT, "no", false);
    check_render(ROOT, "[{{#if yes}}Y{{/if}}][{{#if no}}N{{/if}}]", "[Y][]");
    check_render(ROOT, "[{{#if !yes}}Y{{/if}}][{{#if !no}}N{{/if}}]", "[][N]");
    check_render(ROOT, "{{#if no}}a{{#else}}b{{/if}}", "b");
}

static void test_truthiness(void **state)
{
    tmpl_set_int(ROOT, "i0", 0);
    tmpl_set_int(ROOT, "i1", 1);
    tmpl_set_int(ROOT, "ineg", -5);
    tmpl_set_str(ROOT, "s0", "");
    tmpl_set_str(ROOT, "s1", "x");
    tmpl_set_str(ROOT, "szero", "0");
    tmpl_list_declare(ROOT, "l0");
    tmpl_list_add(ROOT, "l1");
    const char *text =
        "{{#if i0}}T{{#else}}F{{/if}}{{#if i1}}T{{#else}}F{{/if}}{{#if ineg}}T{{#else}}F{{/if}}"
        "{{#if s0}}T{{#else}}F{{/if}}{{#if s1}}T{{#else}}F{{/if}}{{#if szero}}T{{#else}}F{{/if}}"
        "{{#if l0}}T{{#else}}F{{/if}}{{#if l1}}T{{#else}}F{{/if}}";
    check_render(ROOT, text, "FTTFTTFT");
    const char *negated =
        "{{#if !i0}}T{{#else}}F{{/if}}{{#if !i1}}T{{#else}}F{{/if}}"
        "{{#if !s0}}T{{#else}}F{{/if}}{{#if !s1}}T{{#else}}F{{/if}}"
        "{{#if !l0}}T{{#else}}F{{/if}}{{#if !l1}}T{{#else}}F{{/if}}";
    check_render(ROOT, negated, "TFTFTF");
}

static void test_elif_chain(void **state)
{
    const char *text = "{{#if a}}A{{#elif b}}B{{#elif !c}}notC{{#else}}E{{/if}}";
    tmpl_set_bool(ROOT, "a", true);
    tmpl_set_bool(ROOT, "b", true);
    tmpl_set_bool(ROOT, "c", true);
    check_render(ROOT, text, "A");
    tmpl_set_bool(ROOT, "a", false);
    check_render(ROOT, text, "B");
    tmpl_set_bool(ROOT, "b", false);
    tmpl_set_bool(ROOT, "c", false);
    check_render(ROOT, text, "notC");
    tmpl_set_bool(ROOT, "c", true);
    check_render(ROOT, text, "E");
    check_render(ROOT, "[{{#if a}}A{{#elif b}}B{{/if}}]", "[]");
}

static void test_untaken_branch_is_not_checked(void **state)
{
    tmpl_set_bool(ROOT, "no", false);
    tmpl_set_bool(ROOT, "yes", true);
    check_render(ROOT, "{{#if no}}{{missing}}{{#elif yes}}ok{{#elif also_missing}}{{/if}}", "ok");
    tmpl_list_declare(ROOT, "none");
    check_render(ROOT, "[{{#each none}}{{missing}}{{/each}}]", "[]");
}

static void test_nested_if(void **state)
{
    tmpl_set_bool(ROOT, "a", true);
    tmpl_set_bool(ROOT, "b", false);
    check_render(ROOT, "{{#if a}}1{{#if b}}2{{#else}}3{{#if a}}4{{/if}}{{/if}}5{{#else}}6{{/if}}",
                 "1345");
}

/* ---- loops ---------------------------------------------------------------------- */

static void test_each_with_loop_variables(void **state)
{
    const char *names[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++)
        tmpl_set_str(tmpl_list_add(ROOT, "operands"), "name", names[i]);
    check_render(ROOT,
                 "{{#each operands}}{{@index}}={{name}}"
                 "{{#if @first}}(first){{/if}}{{#if @last}}(last){{#else}}, {{/if}}{{/each}}",
                 "0=a(first), 1=b, 2=c(last)");
    check_render(ROOT, "{{#each operands}}{{#if !@last}}{{name}},{{/if}}{{/each}}", "a,b,");
    check_render(ROOT, "{{#each operands}}{{#if @index}}+{{/if}}{{name}}{{/each}}", "a+b+c");
}

static void test_each_single_item_is_first_and_last(void **state)
{
    tmpl_set_int(tmpl_list_add(ROOT, "one"), "v", 9);
    check_render(ROOT, "{{#each one}}{{#if @first}}F{{/if}}{{#if @last}}L{{/if}}{{v}}{{/each}}",
                 "FL9");
}

static void test_empty_list(void **state)
{
    tmpl_list_declare(ROOT, "none");
    check_render(ROOT, "[{{#each none}}x{{/each}}]", "[]");
    /* declaring an existing list keeps its items */
    tmpl_list_add(ROOT, "some");
    tmpl_list_add(ROOT, "some");
    tmpl_list_declare(ROOT, "some");
    check_render(ROOT, "[{{#each some}}x{{/each}}]", "[xx]");
}

static void test_nested_each_and_lookup_order(void **state)
{
    tmpl_set_str(ROOT, "type", "float");
    tmpl_set_str(ROOT, "label", "root");
    for (int l = 0; l < 2; l++) {
        tmpl_scope *loop = tmpl_list_add(ROOT, "loops");
        tmpl_set_int(loop, "loop", l);
        tmpl_set_str(loop, "label", "loop");
        for (int k = 0; k < 3; k++) {
            tmpl_scope *op = tmpl_list_add(loop, "strides");
            tmpl_set_int(op, "stride", 10 * l + k);
            if (k == 1)
                tmpl_set_str(op, "label", "op");
        }
    }
    /* the inner loop sees its item, then the outer item, then the root;
     * @index is the inner loop's */
    check_render(ROOT,
                 "{{#each loops}}L{{loop}}:{{#each strides}} {{@index}}/{{stride}}/{{label}}"
                 "{{/each}} {{label}} {{type}};{{/each}}",
                 "L0: 0/0/loop 1/1/op 2/2/loop loop float;"
                 "L1: 0/10/loop 1/11/op 2/12/loop loop float;");
    check_render(ROOT, "{{label}}", "root");
}

static void test_items_keep_insertion_order(void **state)
{
    for (int i = 0; i < 5; i++)
        tmpl_set_int(tmpl_list_add(ROOT, "xs"), "x", i * i);
    check_render(ROOT, "{{#each xs}}{{x}} {{/each}}", "0 1 4 9 16 ");
}

/* ---- standalone lines ------------------------------------------------------------ */

static void test_standalone_lines_vanish(void **state)
{
    tmpl_set_bool(ROOT, "yes", true);
    tmpl_set_bool(ROOT, "no", false);
    for (int i = 0; i < 2; i++)
        tmpl_set_int(tmpl_list_add(ROOT, "xs"), "x", i);
    const char *text =
        "void f(void)\n"
        "{\n"
        "    {{#each xs}}\n"
        "    {{! one statement per item }}\n"
        "    a[{{x}}] = 0;\n"
        "    {{/each}}\n"
        "    {{#if no}}\n"
        "    never();\n"
        "    {{#elif yes}}\n"
        "    sometimes();\n"
        "\t{{#else}}  \n"
        "    otherwise();\n"
        "    {{/if}}\n"
        "}\n";
    check_render(ROOT, text,
                 "void f(void)\n"
                 "{\n"
                 "    a[0] = 0;\n"
                 "    a[1] = 0;\n"
                 "    sometimes();\n"
                 "}\n");
}

static void test_standalone_variants(void **state)
{
    tmpl_set_bool(ROOT, "yes", true);
    tmpl_set_int(ROOT, "n", 3);
    /* several directives on one line, and the last line without a newline */
    check_render(ROOT, "a\n  {{#if yes}} {{! c }}\nb\n{{/if}}", "a\nb\n");
    /* the first line, and CRLF line ends */
    check_render(ROOT, "{{#if yes}}\r\nb\r\n{{/if}}\r\n", "b\r\n");
    /* a multi-line comment alone on its lines */
    check_render(ROOT, "a\n  {{! one\n  two }}\nb\n", "a\nb\n");
    /* blank lines that hold no directive stay */
    check_render(ROOT, "a\n\n  \nb\n", "a\n\n  \nb\n");
}

static void test_inline_directives_keep_the_line(void **state)
{
    tmpl_set_bool(ROOT, "yes", true);
    tmpl_set_bool(ROOT, "no", false);
    tmpl_set_int(ROOT, "n", 3);
    check_render(ROOT, "  x{{#if no}}y{{/if}}\n", "  x\n");
    check_render(ROOT, "  {{#if yes}}y{{/if}} \n", "  y \n");
    /* a substitution makes the line content, not a directive line */
    check_render(ROOT, "  {{n}} {{#if no}}{{/if}}\nz\n", "  3 \nz\n");
    check_render(ROOT, "{{#if no}}\n{{/if}}{{n}}\n", "3\n");
    /* an escape is text */
    check_render(ROOT, "{{{{ {{#if yes}}\n{{/if}}\n", "{{ \n");
}

/* The example in templates/README.md. */
static void test_readme_example(void **state)
{
    tmpl_set_str(ROOT, "function_name", "bcg_kernel");
    tmpl_set_bool(ROOT, "empty", false);
    const char *types[] = {"float", "int8_t"};
    for (int i = 0; i < 2; i++)
        tmpl_set_str(tmpl_list_add(ROOT, "inputs"), "ctype", types[i]);
    check_render(ROOT,
                 "void {{function_name}}(void *out, const void *const *in)\n"
                 "{\n"
                 "    {{#each inputs}}\n"
                 "    const {{ctype}} *in{{@index}} = in[{{@index}}];   {{! typed views }}\n"
                 "    {{/each}}\n"
                 "    {{#if empty}}\n"
                 "    (void)out; (void)in;\n"
                 "    {{#else}}\n"
                 "    ...\n"
                 "    {{/if}}\n"
                 "}\n",
                 "void bcg_kernel(void *out, const void *const *in)\n"
                 "{\n"
                 "    const float *in0 = in[0];   \n"
                 "    const int8_t *in1 = in[1];   \n"
                 "    ...\n"
                 "}\n");
    check_render(ROOT, "{{{{0}}", "{{0}}");
}

/* ---- errors ------------------------------------------------------------------------ */

static void test_error_unknown_variable(void **state)
{
    tmpl_set_int(ROOT, "n", 1);
    check_error(ROOT, "a\nb\n  for (i = 0; i < {{trip_count}}; i++)\n", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 3: unknown variable 'trip_count'");
    check_error(ROOT, "{{#if\tmissing }}x{{/if}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: unknown variable 'missing'");
    check_error(ROOT, "\n{{#each missing}}x{{/each}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 2: unknown variable 'missing'");
    /* output made before the error is not left behind */
    check_error(ROOT, "{{n}}{{n}}\n{{nn}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 2: unknown variable 'nn'");
}

static void test_error_line_numbers_after_removed_lines(void **state)
{
    tmpl_set_bool(ROOT, "yes", true);
    tmpl_set_int(tmpl_list_add(ROOT, "xs"), "x", 0);
    check_error(ROOT,
                "{{! a comment\n   over two lines }}\n"
                "{{#if yes}}\n"
                "  {{#each xs}}\n"
                "  {{x}} {{y}}\n"
                "  {{/each}}\n"
                "{{/if}}\n",
                BCG_ERR_USAGE, "file kernel.c.tmpl line 5: unknown variable 'y'");
}

static void test_error_loop_variables(void **state)
{
    tmpl_list_add(ROOT, "xs");
    check_error(ROOT, "\n{{@index}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 2: @index used outside {{#each}}");
    check_error(ROOT, "{{#if @first}}{{/if}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: @first used outside {{#each}}");
    check_error(ROOT, "{{#each xs}}{{@count}}{{/each}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: unknown variable '@count'");
    check_error(ROOT, "{{#each xs}}{{@last}}{{/each}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: cannot substitute '@last': it is a bool");
}

static void test_error_wrong_types(void **state)
{
    tmpl_set_bool(ROOT, "flag", true);
    tmpl_list_add(ROOT, "xs");
    tmpl_set_str(ROOT, "s", "text");
    tmpl_set_int(ROOT, "n", 4);
    check_error(ROOT, "{{flag}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: cannot substitute 'flag': it is a bool");
    check_error(ROOT, "\n\n{{xs}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 3: cannot substitute 'xs': it is a list");
    check_error(ROOT, "{{#each s}}{{/each}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: {{#each}} needs a list but 's' is a string");
    check_error(ROOT, "{{#each n}}{{/each}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: {{#each}} needs a list but 'n' is an integer");
    check_error(ROOT, "{{#each flag}}{{/each}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: {{#each}} needs a list but 'flag' is a bool");
}

static void test_error_unclosed_blocks(void **state)
{
    tmpl_set_bool(ROOT, "x", true);
    check_error(ROOT, "a\nb\n{{#if x}}\nc\n", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 3: {{#if x}} is never closed");
    check_error(ROOT, "{{#each xs}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: {{#each xs}} is never closed");
    /* the innermost open block is named */
    check_error(ROOT, "{{#if x}}\n  {{#if !x}}\n{{/if}}{{#each ys}}\n", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 3: {{#each ys}} is never closed");
    check_error(ROOT, "{{#if x}}{{#else}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: {{#if x}} is never closed");
}

static void test_error_mismatched_blocks(void **state)
{
    tmpl_set_bool(ROOT, "x", true);
    check_error(ROOT, "{{#if x}}\n{{/each}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 2: {{/each}} does not close {{#if x}} opened on line 1");
    check_error(ROOT, "\n{{#each xs}}{{/if}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 2: {{/if}} does not close {{#each xs}} opened on line 2");
    check_error(ROOT, "{{#if x}}{{#each xs}}\n{{#else}}{{/each}}{{/if}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 2: {{#else}} inside {{#each xs}} opened on line 1");
    check_error(ROOT, "{{#each xs}}{{#elif x}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: {{#elif x}} inside {{#each xs}} opened on line 1");
    check_error(ROOT, "x\n{{/if}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 2: {{/if}} without a matching {{#if}}");
    check_error(ROOT, "{{/each}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: {{/each}} without a matching {{#each}}");
    check_error(ROOT, "{{#else}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: {{#else}} without a matching {{#if}}");
    check_error(ROOT, "{{#elif x}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: {{#elif x}} without a matching {{#if}}");
    check_error(ROOT, "{{#if x}}\n{{#else}}\n{{#elif x}}\n{{/if}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 3: {{#elif x}} after the {{#else}} of the if on line 1");
    check_error(ROOT, "{{#if x}}{{#else}}{{#else}}{{/if}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: {{#else}} after the {{#else}} of the if on line 1");
}

static void test_error_unknown_directive(void **state)
{
    tmpl_set_bool(ROOT, "x", true);
    check_error(ROOT, "\n{{#unless x}}{{/unless}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 2: unknown directive '{{#unless x}}'");
    check_error(ROOT, "{{/for}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: unknown directive '{{/for}}'");
    check_error(ROOT, "{{#If x}}{{/if}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: unknown directive '{{#If x}}'");
    check_error(ROOT, "{{#}}", BCG_ERR_USAGE, "file kernel.c.tmpl line 1: unknown directive '{{#}}'");
    check_error(ROOT, "{{#ifx}}{{/if}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: unknown directive '{{#ifx}}'");
}

static void test_error_malformed_tags(void **state)
{
    tmpl_set_bool(ROOT, "x", true);
    const struct {
        const char *text, *message;
    } cases[] = {
        {"{{}}", "file kernel.c.tmpl line 1: malformed tag '{{}}'"},
        {"{{ }}", "file kernel.c.tmpl line 1: malformed tag '{{ }}'"},
        {"{{a b}}", "file kernel.c.tmpl line 1: malformed tag '{{a b}}'"},
        {"{{a-b}}", "file kernel.c.tmpl line 1: malformed tag '{{a-b}}'"},
        {"{{a.b}}", "file kernel.c.tmpl line 1: malformed tag '{{a.b}}'"},
        {"{{9a}}", "file kernel.c.tmpl line 1: malformed tag '{{9a}}'"},
        {"{{@}}", "file kernel.c.tmpl line 1: malformed tag '{{@}}'"},
        {"{{{x}}}", "file kernel.c.tmpl line 1: malformed tag '{{{x}}'"},
        {"{{#if}}{{/if}}", "file kernel.c.tmpl line 1: malformed tag '{{#if}}'"},
        {"{{#if !}}{{/if}}", "file kernel.c.tmpl line 1: malformed tag '{{#if !}}'"},
        {"{{#if x y}}{{/if}}", "file kernel.c.tmpl line 1: malformed tag '{{#if x y}}'"},
        {"{{#if x}}{{#else x}}{{/if}}", "file kernel.c.tmpl line 1: malformed tag '{{#else x}}'"},
        {"{{#if x}}{{/if x}}", "file kernel.c.tmpl line 1: malformed tag '{{/if x}}'"},
        {"{{#each !x}}{{/each}}", "file kernel.c.tmpl line 1: malformed tag '{{#each !x}}'"},
        {"{{#eachx}}", "file kernel.c.tmpl line 1: unknown directive '{{#eachx}}'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_error(ROOT, cases[i].text, BCG_ERR_USAGE, cases[i].message);
}

static void test_error_long_tag_is_shortened(void **state)
{
    char text[200], message[300];
    memset(text, 0, sizeof text);
    strcpy(text, "{{#bad");
    memset(text + 6, 'y', 100);
    strcat(text, "}}");
    snprintf(message, sizeof message,
             "file kernel.c.tmpl line 1: unknown directive '{{#bad%.54s...'",
             text + 6);
    check_error(ROOT, text, BCG_ERR_USAGE, message);
}

static void test_error_unterminated(void **state)
{
    tmpl_set_int(ROOT, "n", 1);
    check_error(ROOT, "a\nb {{n\n}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 2: '{{' is not closed by '}}' on the same line");
    check_error(ROOT, "{{n}} {{", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: '{{' is not closed by '}}' on the same line");
    check_error(ROOT, "{{n}} {{n}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 1: '{{' is not closed by '}}' on the same line");
    check_error(ROOT, "\n\n{{! never\nends }\n", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 3: comment '{{!' is never closed");
}

static void test_error_syntax_found_before_rendering(void **state)
{
    tmpl_set_bool(ROOT, "no", false);
    tmpl_list_declare(ROOT, "none");
    /* syntax errors count even where nothing is rendered */
    check_error(ROOT, "ok\n{{#if no}}{{#bogus}}{{/if}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 2: unknown directive '{{#bogus}}'");
    check_error(ROOT, "{{#each none}}\n{{a b}}{{/each}}", BCG_ERR_USAGE,
                "file kernel.c.tmpl line 2: malformed tag '{{a b}}'");
}

static void test_error_nesting_depth(void **state)
{
    tmpl_set_bool(ROOT, "x", true);
    strbuf text;
    sb_init(&text);
    for (int i = 0; i < 64; i++)
        sb_puts(&text, "{{#if x}}");
    sb_puts(&text, "deep");
    for (int i = 0; i < 64; i++)
        sb_puts(&text, "{{/if}}");
    assert_false(text.failed);
    check_render(ROOT, text.data, "deep");
    sb_free(&text);
    for (int i = 0; i < 65; i++)
        sb_puts(&text, "{{#if x}}\n");
    assert_false(text.failed);
    check_error(ROOT, text.data, BCG_ERR_USAGE,
                "file kernel.c.tmpl line 65: {{#if x}} nests blocks deeper than 64");
    sb_free(&text);
}

static void test_error_first_wins_and_bad_arguments(void **state)
{
    tmpl_set_int(ROOT, "n", 5);
    strbuf sb;
    sb_init(&sb);
    bcg_error err;
    error_clear(&err);
    assert_int_equal(tmpl_render(&sb, "one.tmpl", "{{a}}", ROOT, &err), BCG_ERR_USAGE);
    assert_int_equal(tmpl_render(&sb, "two.tmpl", "{{b}}", ROOT, &err), BCG_ERR_USAGE);
    assert_string_equal(err.message, "file one.tmpl line 1: unknown variable 'a'");
    /* a NULL err is allowed */
    assert_int_equal(tmpl_render(&sb, "x.tmpl", "{{a}}", ROOT, NULL), BCG_ERR_USAGE);
    assert_int_equal(tmpl_render(&sb, "x.tmpl", "{{n}}", ROOT, NULL), BCG_OK);
    assert_string_equal(sb.data, "5");
    sb_free(&sb);

    error_clear(&err);
    assert_int_equal(tmpl_render(&sb, NULL, "{{a}}", ROOT, &err), BCG_ERR_USAGE);
    assert_string_equal(err.message, "file <template> line 1: unknown variable 'a'");
    error_clear(&err);
    assert_int_equal(tmpl_render(&sb, "x.tmpl", NULL, ROOT, &err), BCG_ERR_USAGE);
    assert_string_equal(err.message, "file x.tmpl: tmpl_render needs a buffer and a text");
    error_clear(&err);
    assert_int_equal(tmpl_render(NULL, "x.tmpl", "", ROOT, &err), BCG_ERR_USAGE);
    sb_free(&sb);
}

/* ---- size and speed ---------------------------------------------------------------- */

static void test_large_list_renders_quickly(void **state)
{
    enum { ITEMS = 10000 };
    tmpl_set_str(ROOT, "type", "float");
    clock_t start = clock();
    for (int i = 0; i < ITEMS; i++) {
        tmpl_scope *item = tmpl_list_add(ROOT, "lines");
        tmpl_set_int(item, "i", i);
        tmpl_set_int(item, "stride", (int64_t)i * 3 - 7);
        tmpl_set_bool(item, "odd", i % 2);
    }
    strbuf sb;
    sb_init(&sb);
    bcg_error err;
    error_clear(&err);
    const char *text =
        "{{#each lines}}\n"
        "    {{#if odd}}\n"
        "    {{type}} v{{i}} = in[{{stride}}]; /* {{@index}} */\n"
        "    {{#else}}\n"
        "    {{type}} v{{i}} = 0;{{#if @last}} /* last */{{/if}}\n"
        "    {{/if}}\n"
        "{{/each}}\n";
    assert_int_equal(tmpl_render(&sb, "big.tmpl", text, ROOT, &err), BCG_OK);
    double seconds = (double)(clock() - start) / CLOCKS_PER_SEC;
    assert_false(sb.failed);
    /* one line per item, every one correct */
    size_t lines = 0;
    for (size_t k = 0; k < sb.len; k++)
        lines += sb.data[k] == '\n';
    assert_int_equal(lines, ITEMS);
    assert_non_null(strstr(sb.data, "    float v0 = 0;\n    float v1 = in[-4]; /* 1 */\n"));
    assert_non_null(strstr(sb.data, "    float v9999 = in[29990]; /* 9999 */\n"));
    assert_null(strstr(sb.data, "last"));
    /* a few milliseconds when linear; a quadratic list or lookup takes far longer */
    assert_true(seconds < 0.25);
    sb_free(&sb);
}

/* ---- allocation failures ------------------------------------------------------------ */

static const char sweep_text[] =
    "{{#each ops}}\n"
    "{{name}}{{#if !@last}}, {{/if}}\n"
    "{{/each}}\n"
    "{{long}}\n";

/* Builds the scopes and renders; returns the status (NOMEM when the arena
 * could not be made). */
static bcg_status build_and_render(char **out, bcg_error *err)
{
    *out = NULL;
    arena *a = arena_new();
    if (!a)
        return BCG_ERR_NOMEM;
    tmpl_scope *root = tmpl_scope_new(a, NULL);
    char long_text[40000];
    memset(long_text, 'z', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = 0;
    tmpl_set_str(root, "long", long_text);
    for (int i = 0; i < 300; i++) {
        tmpl_scope *item = tmpl_list_add(root, "ops");
        char name[32];
        snprintf(name, sizeof name, "operand_%d", i);
        tmpl_set_str(item, "name", name);
    }
    strbuf sb;
    sb_init(&sb);
    bcg_status status = tmpl_render(&sb, "sweep.tmpl", sweep_text, root, err);
    if (status == BCG_OK) {
        assert_false(sb.failed);
        *out = sb_finish(&sb);
        if (!*out)
            status = BCG_ERR_NOMEM;
    } else {
        sb_free(&sb);
    }
    arena_free(a);
    return status;
}

static void test_allocation_failures_while_building(void **state)
{
    (void)state;
    bcg_error err;
    char *expected;
    error_clear(&err);
    assert_int_equal(build_and_render(&expected, &err), BCG_OK);
    long failures = 0;
    for (long n = 1;; n++) {
        char *out;
        error_clear(&err);
        mem_fail_after(n);
        bcg_status status = build_and_render(&out, &err);
        mem_fail_after(0);
        if (status == BCG_OK) {
            assert_string_equal(out, expected);
            mem_free(out);
            break;
        }
        assert_int_equal(status, BCG_ERR_NOMEM);
        assert_null(out);
        failures++;
        assert_true(n < 10000);
    }
    /* the arena, the scopes and the output each needed several allocations */
    assert_true(failures >= 5);
    mem_free(expected);
}

static void test_allocation_failures_while_rendering(void **state)
{
    tmpl_set_str(ROOT, "s", "value");
    for (int i = 0; i < 2000; i++)
        tmpl_set_int(tmpl_list_add(ROOT, "xs"), "x", i);
    const char *text = "{{#each xs}}{{s}} {{x}}\n{{/each}}";
    bool any_failure = false;
    for (long n = 1;; n++) {
        strbuf sb;
        sb_init(&sb);
        bcg_error err;
        error_clear(&err);
        mem_fail_after(n);
        bcg_status status = tmpl_render(&sb, "r.tmpl", text, ROOT, &err);
        mem_fail_after(0);
        if (status == BCG_OK) {
            assert_false(sb.failed);
            assert_int_equal(strncmp(sb.data, "value 0\nvalue 1\n", 16), 0);
            sb_free(&sb);
            break;
        }
        any_failure = true;
        assert_int_equal(status, BCG_ERR_NOMEM);
        assert_string_equal(err.message, "file r.tmpl: out of memory while rendering the template");
        sb_free(&sb);
        assert_true(n < 1000);
    }
    assert_true(any_failure);
}

static void test_failed_scope_reports_nomem(void **state)
{
    bcg_error err;
    strbuf sb;
    sb_init(&sb);
    /* setters on a NULL scope (a failed tmpl_list_add) do nothing */
    tmpl_set_str(NULL, "a", "b");
    tmpl_set_int(NULL, "a", 1);
    tmpl_set_bool(NULL, "a", true);
    tmpl_list_declare(NULL, "a");
    assert_null(tmpl_list_add(NULL, "a"));
    error_clear(&err);
    assert_int_equal(tmpl_render(&sb, "n.tmpl", "x", NULL, &err), BCG_ERR_NOMEM);
    assert_string_equal(err.message, "file n.tmpl: out of memory while setting the template's variables");

    /* a failure deep in a child makes the root's render fail */
    tmpl_set_int(ROOT, "n", 1);
    tmpl_scope *child = tmpl_scope_new(ARENA, ROOT);
    assert_non_null(child);
    mem_fail_after(1);
    tmpl_scope *item = tmpl_list_add(child, "big");
    while (item)   /* the arena may have room left; keep allocating until one fails */
        item = tmpl_list_add(child, "big");
    mem_fail_after(0);
    error_clear(&err);
    assert_int_equal(tmpl_render(&sb, "n.tmpl", "{{n}}", ROOT, &err), BCG_ERR_NOMEM);
    assert_string_equal(err.message, "file n.tmpl: out of memory while setting the template's variables");
    sb_free(&sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(test_substitute_string),
        T(test_substitute_integers),
        T(test_blanks_inside_braces),
        T(test_last_set_wins),
        T(test_string_is_copied),
        T(test_value_is_not_a_template),
        T(test_escape_and_lone_braces),
        T(test_comments),
        T(test_child_falls_back_to_parent),
        T(test_if_bool),
        T(test_truthiness),
        T(test_elif_chain),
        T(test_untaken_branch_is_not_checked),
        T(test_nested_if),
        T(test_each_with_loop_variables),
        T(test_each_single_item_is_first_and_last),
        T(test_empty_list),
        T(test_nested_each_and_lookup_order),
        T(test_items_keep_insertion_order),
        T(test_standalone_lines_vanish),
        T(test_standalone_variants),
        T(test_inline_directives_keep_the_line),
        T(test_readme_example),
        T(test_error_unknown_variable),
        T(test_error_line_numbers_after_removed_lines),
        T(test_error_loop_variables),
        T(test_error_wrong_types),
        T(test_error_unclosed_blocks),
        T(test_error_mismatched_blocks),
        T(test_error_unknown_directive),
        T(test_error_malformed_tags),
        T(test_error_long_tag_is_shortened),
        T(test_error_unterminated),
        T(test_error_syntax_found_before_rendering),
        T(test_error_nesting_depth),
        T(test_error_first_wins_and_bad_arguments),
        T(test_large_list_renders_quickly),
        T(test_allocation_failures_while_building),
        T(test_allocation_failures_while_rendering),
        T(test_failed_scope_reports_nomem),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
