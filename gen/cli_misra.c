/* cli_misra.c - the MISRA C:2012 deviation record of an AOT pair (`bcgen aot
 * --misra-report FILE`, issue 14).
 *
 * The generated code meets every mandatory and required rule that Debian's
 * cppcheck MISRA addon checks (tests/aot/test_misra.py fails on any), with
 * one exception the user asks for: --restrict qualifies the pointers with
 * restrict, which required rule 8.14 forbids; the record lists that
 * deviation, with its reason, whenever the pair uses BCGEN_RESTRICT (which
 * the caller may also define empty).  A few advisory rules it does not meet,
 * on purpose; the record lists each one the pair departs from, how many
 * places and why.  It is made from the text bcgen
 * wrote, not from a table of what it might write: a small C tokenizer
 * finds each construct in the .c and the .h (comments and preprocessor
 * lines as C reads them), so a rule is listed only when this pair uses the
 * construct.  The test checks that the set of rules listed equals the set
 * cppcheck reports, pair by pair.
 *
 * The rules and what counts as a place:
 *   2.3  a typedef whose name is used nowhere else in the pair;
 *   2.5  a macro whose name is used nowhere else in the pair (the header's
 *        size macros are for the caller);
 *   8.14 (required) a pointer parameter qualified BCGEN_RESTRICT;
 *   10.5 a cast of an essentially Boolean value (a comparison, or !, &&,
 *        || or an arithmetic/bitwise combination of comparisons, a bool
 *        local or a bcg_load_bool call) to a number;
 *   15.5 a return that is not a statement of the function's own body;
 *   19.2 the keyword union;
 *   20.1 an #include after code of its file (the ACLE header of the
 *        saturating helpers). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct token {
    const char *text;
    size_t length;
    int line_kind;     /* 0 code, 1 a #define line, 2 another preprocessor line */
    int define_id;     /* the #define line the token is on (from 1), or 0 */
    int file;          /* which text tokenize() read it from (from 1) */
} token;

typedef struct tokens {
    token *items;
    size_t count, cap;
    bool failed;
    int defines;
    int files;
} tokens;

static void push(tokens *t, const char *text, size_t length, int kind, int define_id)
{
    if (t->failed)
        return;
    if (t->count == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 4096;
        token *items = realloc(t->items, cap * sizeof *items);
        if (!items) {
            t->failed = true;
            return;
        }
        t->items = items;
        t->cap = cap;
    }
    t->items[t->count++] = (token){text, length, kind, define_id, t->files};
}

static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Splits C text into tokens: identifiers and numbers, punctuators of one
 * or two characters; comments, strings and line continuations dropped. */
static void tokenize(tokens *t, const char *s)
{
    t->files++;
    bool line_start = true;
    int kind = 0, define_id = 0;
    while (*s) {
        if (*s == '\n') {
            line_start = true;
            kind = 0;
            define_id = 0;
            s++;
        } else if (s[0] == '\\' && s[1] == '\n') {
            s += 2;
        } else if (isspace((unsigned char)*s)) {
            s++;
        } else if (s[0] == '/' && s[1] == '*') {
            const char *end = strstr(s + 2, "*/");
            s = end ? end + 2 : s + strlen(s);
        } else if (s[0] == '/' && s[1] == '/') {
            while (*s && *s != '\n')
                s++;
        } else if (*s == '"' || *s == '\'') {
            char quote = *s++;
            while (*s && *s != quote && *s != '\n')
                s += (s[0] == '\\' && s[1]) ? 2 : 1;
            if (*s == quote)
                s++;
        } else {
            size_t n = 1;
            if (ident_char(*s) || (*s == '.' && isdigit((unsigned char)s[1]))) {
                while (ident_char(s[n]) || s[n] == '.' ||
                       ((s[n] == '+' || s[n] == '-') && (s[n - 1] == 'e' || s[n - 1] == 'E') &&
                        isdigit((unsigned char)s[0])))
                    n++;
            } else if (strchr("=!<>&|+-", s[0]) && s[1] &&
                       (s[1] == '=' || (s[1] == s[0] && strchr("<>&|+-", s[0])) ||
                        (s[0] == '-' && s[1] == '>'))) {
                n = 2;
            }
            if (line_start && *s == '#') {
                const char *w = s + 1;
                while (*w == ' ' || *w == '\t')
                    w++;
                kind = strncmp(w, "define", 6) == 0 && !ident_char(w[6]) ? 1 : 2;
                if (kind == 1)
                    define_id = ++t->defines;
            }
            line_start = false;
            push(t, s, n, kind, define_id);
            s += n;
        }
    }
}

static bool is(const token *k, const char *text)
{
    return k->length == strlen(text) && memcmp(k->text, text, k->length) == 0;
}

static bool is_ident(const token *k)
{
    return isalpha((unsigned char)k->text[0]) || k->text[0] == '_';
}

/* Places where identifier ITEMS[AT] occurs other than at AT itself and
 * outside the #define line SKIP_DEFINE (0: none). */
static size_t uses(const tokens *t, size_t at, int skip_define)
{
    size_t count = 0;
    for (size_t i = 0; i < t->count; i++)
        if (i != at && t->items[i].length == t->items[at].length &&
            memcmp(t->items[i].text, t->items[at].text, t->items[at].length) == 0 &&
            (skip_define == 0 || t->items[i].define_id != skip_define))
            count++;
    return count;
}

/* 2.5: #define NAME where NAME occurs nowhere else. */
static size_t unused_macros(const tokens *t)
{
    size_t count = 0;
    for (size_t i = 0; i + 2 < t->count; i++)
        if (t->items[i].line_kind == 1 && is(&t->items[i], "#") &&
            is(&t->items[i + 1], "define") && uses(t, i + 2, t->items[i].define_id) == 0)
            count++;
    return count;
}

/* 2.3: typedef ... NAME; or typedef ... NAME[...]; where NAME occurs
 * nowhere else. */
static size_t unused_typedefs(const tokens *t)
{
    size_t count = 0;
    for (size_t i = 0; i < t->count; i++) {
        if (t->items[i].line_kind != 0 || !is(&t->items[i], "typedef"))
            continue;
        size_t name = 0, j = i + 1;
        for (; j < t->count && !is(&t->items[j], ";") && !is(&t->items[j], "["); j++)
            if (is_ident(&t->items[j]))
                name = j;
        if (name && uses(t, name, 0) == 0)
            count++;
    }
    return count;
}

static size_t count_word(const tokens *t, const char *word)
{
    size_t count = 0;
    for (size_t i = 0; i < t->count; i++)
        if (t->items[i].line_kind == 0 && is(&t->items[i], word))
            count++;
    return count;
}

/* 15.5: a return inside a block or under an if/else/loop of its function,
 * rather than a statement of the function's body. */
static size_t nested_returns(const tokens *t)
{
    size_t count = 0;
    int depth = 0;
    const token *previous = NULL;
    for (size_t i = 0; i < t->count; i++) {
        const token *k = &t->items[i];
        if (k->line_kind != 0)
            continue;
        if (is(k, "{"))
            depth++;
        else if (is(k, "}"))
            depth--;
        else if (is(k, "return") &&
                 (depth > 1 || !previous ||
                  !(is(previous, ";") || is(previous, "{") || is(previous, "}"))))
            count++;
        previous = k;
    }
    return count;
}

static bool is_type_word(const token *k)
{
    static const char *const words[] = {"int", "unsigned", "long", "signed", "char", "short",
                                        "float", "double", "_Bool"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (is(k, words[i]))
            return true;
    return (k->length > 4 && memcmp(k->text, "bcg_", 4) == 0 && k->length < 10) ||
           ((k->length == 6 || k->length == 7 || k->length == 8) &&
            memcmp(k->text + k->length - 2, "_t", 2) == 0 &&
            (memcmp(k->text, "int", 3) == 0 || memcmp(k->text, "uint", 4) == 0));
}

static bool is_comparison(const token *k)
{
    static const char *const ops[] = {"==", "!=", "<", ">", "<=", ">=", "&&", "||"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (is(k, ops[i]))
            return true;
    return false;
}

static size_t matching(const tokens *t, size_t open)
{
    int depth = 0;
    for (size_t i = open; i < t->count; i++) {
        if (is(&t->items[i], "(") || is(&t->items[i], "["))
            depth++;
        else if (is(&t->items[i], ")") || is(&t->items[i], "]"))
            if (--depth == 0)
                return i;
    }
    return t->count;
}

static bool is_type_word(const token *k);

/* Whether K names a bool: declared `bool K` (the AOT form's bool values,
 * gen/cexpr.c) and with no other type anywhere in the text (a reduction's
 * acc is a bool in one kernel and a double in another). */
static bool is_bool_name(const tokens *t, const token *k)
{
    if (!is_ident(k))
        return false;
    bool as_bool = false;
    for (size_t i = 0; i + 1 < t->count; i++) {
        const token *next = &t->items[i + 1];
        if (next->length != k->length || memcmp(next->text, k->text, k->length) != 0)
            continue;
        if (is(&t->items[i], "bool"))
            as_bool = true;
        else if (is_type_word(&t->items[i]))
            return false;
    }
    return as_bool;
}

/* Tokens FROM..TO (exclusive) are an essentially Boolean expression: a
 * comparison or logical operator at their top level (no ?: there), a !
 * operand, or operands joined by - ^ & | that all are. */
static bool boolean_range(const tokens *t, size_t from, size_t to)
{
    if (from >= to)
        return false;
    if (is(&t->items[from], "!"))
        return true;
    if (to == from + 1 && is_bool_name(t, &t->items[from]))
        return true;
    if (is(&t->items[from], "bcg_load_bool") && from + 1 < to && is(&t->items[from + 1], "(") &&
        matching(t, from + 1) == to - 1)
        return true;
    bool comparison = false, combined = false, operands_boolean = true;
    size_t operand_start = from;
    for (size_t i = from; i <= to; i++) {
        const token *k = i < to ? &t->items[i] : NULL;
        if (k && (is(k, "(") || is(k, "["))) {
            i = matching(t, i);
            continue;
        }
        if (k && (is(k, "?") || is(k, "=") || is(k, ",")))
            return false;
        if (k && is_comparison(k)) {
            comparison = true;
        } else if (!k || is(k, "-") || is(k, "^") || is(k, "&") || is(k, "|")) {
            if (k && i == operand_start)
                return false; /* unary minus */
            if (k)
                combined = true;
            size_t end = i;
            /* an operand: a parenthesized Boolean group */
            if (!(is(&t->items[operand_start], "(") && matching(t, operand_start) == end - 1 &&
                  boolean_range(t, operand_start + 1, end - 1)))
                operands_boolean = false;
            operand_start = i + 1;
        }
    }
    return comparison || (combined && operands_boolean);
}

/* 10.5: a cast "(T)" followed by "(" an essentially Boolean group ")". */
static size_t boolean_casts(const tokens *t)
{
    size_t count = 0;
    for (size_t i = 0; i + 3 < t->count; i++) {
        if (t->items[i].line_kind != 0 || !is(&t->items[i], "("))
            continue;
        size_t j = i + 1;
        while (j < t->count && is_type_word(&t->items[j]))
            j++;
        if (j == i + 1 || j >= t->count || !is(&t->items[j], ")") || j + 1 >= t->count)
            continue;
        /* not a declaration or sizeof(T): (T) follows an operator, (, a cast or return */
        if (i > 0 && is_ident(&t->items[i - 1]) && !is(&t->items[i - 1], "return"))
            continue;
        if (is(&t->items[j + 1], "bcg_load_bool") || is_bool_name(t, &t->items[j + 1])) {
            count++; /* (T)shared0, (T)bcg_load_bool(...) */
            continue;
        }
        if (!is(&t->items[j + 1], "("))
            continue;
        size_t close = matching(t, j + 1);
        if (close < t->count && boolean_range(t, j + 2, close))
            count++;
    }
    return count;
}

typedef struct misra_rule {
    const char *rule;
    size_t (*count)(const tokens *t);
    const char *word;     /* for count_word */
    const char *reason;
} misra_rule;

static size_t unions(const tokens *t) { return count_word(t, "union"); }

/* 20.1: an #include after code (a declaration or definition) of its file. */
static size_t late_includes(const tokens *t)
{
    size_t count = 0;
    int code_in = 0; /* the file whose code has begun */
    for (size_t i = 0; i < t->count; i++) {
        const token *k = &t->items[i];
        if (k->line_kind == 0)
            code_in = k->file;
        else if (k->line_kind == 2 && is(k, "include") && i > 0 && is(&t->items[i - 1], "#") &&
                 code_in == k->file)
            count++;
    }
    return count;
}

/* 8.7: a program's fused function (NAME_fused), defined with external
 * linkage and called only by the program's wrapper in the same file. */
static size_t fused_functions(const tokens *t)
{
    size_t count = 0;
    static const char suffix[] = "_fused";
    size_t n = sizeof suffix - 1;
    for (size_t i = 1; i + 1 < t->count; i++) {
        const token *k = &t->items[i];
        if (k->line_kind == 0 && is_ident(k) && k->length > n &&
            memcmp(k->text + k->length - n, suffix, n) == 0 && is(&t->items[i - 1], "void") &&
            is(&t->items[i + 1], "(") && k->file == t->files)
            count++;
    }
    return count;
}

static const misra_rule rules[] = {
    {"2.3", unused_typedefs, NULL,
     "the bcg_ typedefs of every dtype are written whether a kernel uses them or not, and "
     "the size check is a typedef of an array whose size is negative unless int is 32 bits "
     "and float and double are IEEE single and double: C99 has no _Static_assert"},
    {"2.5", unused_macros, NULL,
     "the header defines size, shape, type and alignment macros for every operand of every "
     "kernel for the caller's buffers; the .c needs none of them"},
    {"8.7", fused_functions, NULL,
     "a program that fuses computes every output in NAME_fused, which its wrapper NAME "
     "calls; NAME_fused keeps external linkage so that a caller with its own buffers for "
     "the other outputs can call it directly, as the header documents"},
    {"10.5", boolean_casts, NULL,
     "a bool result (a comparison) used as a number is cast to that number's type: NumPy's "
     "bool arithmetic (True + True is 2), which the expression asks for"},
    {"15.5", nested_returns, NULL,
     "helpers return early for special values (NaN, zero divisors, out-of-range shift "
     "counts, saturation bounds): each early return is one special case of the helper's "
     "comment, which a single exit would turn into nested conditions"},
    {"20.1", late_includes, NULL,
     "the saturating helpers include <arm_acle.h> where they are defined, inside the "
     "#if that tests __ARM_FEATURE_DSP or __ARM_FEATURE_SAT, so that a pair without them "
     "includes nothing and a pair for a core without those instructions neither"},
    {"19.2", unions, NULL,
     "f16 and bf16 values are converted through their IEEE bits, and infinities and NaNs "
     "have no C literal: a union of a float and an unsigned integer of its size reads the "
     "bits (C99 6.5.2.3, footnote 82), the one portable way in C99 without memcpy, which a "
     "freestanding build may not have"},
};

/* The deviation record of the pair SOURCE/HEADER (Markdown) into SB.
 * Returns false when out of memory. */
bool misra_record(strbuf *sb, const char *source_name, const char *header_name,
                  const char *source, const char *header)
{
    tokens t = {0};
    tokenize(&t, header);
    tokenize(&t, source);
    if (t.failed) {
        free(t.items);
        return false;
    }
    sb_printf(sb, "# MISRA C:2012 deviation record: %s and %s\n\n", source_name, header_name);
    sb_puts(sb,
            "Written by bcgen aot --misra-report from the text of the pair: the rules of "
            "MISRA\nC:2012 (with Amendments 1 and 2) the pair departs from, the places and "
            "why.\nChecked against `cppcheck --addon=misra --std=c99 -D__GNUC__` "
            "(bcgen's tests/aot/test_misra.py).\n\n");
    /* 8.14: the one required rule a pair departs from, on the user's request */
    size_t restricted = 0;
    for (size_t i = 0; i < t.count; i++)
        if (t.items[i].line_kind == 0 && is(&t.items[i], "BCGEN_RESTRICT"))
            restricted++;
    if (restricted == 0) {
        sb_puts(sb, "Mandatory and required rules: the pair departs from none.\n\n");
    } else {
        sb_puts(sb,
                "Mandatory rules: the pair departs from none.  Required rules: one deviation, "
                "asked for\nby `--restrict`:\n\n"
                "| rule | category | places | reason |\n| --- | --- | --- | --- |\n");
        sb_printf(sb,
                  "| 8.14 | Required | %zu | the pair was generated with --restrict: the "
                  "caller guarantees that no buffer overlaps another, and restrict lets the "
                  "compiler keep loaded values in registers across stores; the header's "
                  "BCGEN_RESTRICT expands to restrict (__restrict in C++) unless the build "
                  "defines it first: compile with -DBCGEN_RESTRICT= (or regenerate without "
                  "--restrict) to meet the rule |\n\n",
                  restricted);
        sb_puts(sb, "Advisory rules:\n\n");
    }
    size_t listed = 0;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        size_t count = rules[i].count(&t);
        if (count == 0)
            continue;
        if (listed++ == 0)
            sb_puts(sb, "| rule | category | places | reason |\n| --- | --- | --- | --- |\n");
        sb_printf(sb, "| %s | Advisory | %zu | %s |\n", rules[i].rule, count, rules[i].reason);
    }
    if (listed == 0)
        sb_puts(sb, "No deviation: the pair meets every advisory rule the addon checks too.\n");
    sb_puts(sb,
            "\nNot checked per pair: rule 5.9 (internal identifiers unique in the program). "
            "Two\npairs linked into one program each define the same static helpers "
            "(bcg_load_f16, ...);\nthey do not clash, since each is internal to its .c.\n");
    free(t.items);
    return !sb->failed;
}
