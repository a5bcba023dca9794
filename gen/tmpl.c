/* tmpl.c - the template engine: the emitter fills scopes of variables and
 * renders templates/NAME.tmpl with them, so the C around a kernel lives in
 * the templates and only computed values live in emit.c and cexpr.c.
 *
 * The mini-language (also in templates/README.md; keep the two in step):
 *
 *   {{name}}        the value of a string or integer variable (integers print
 *                   in decimal, "-3").  Substituting a bool or a list is an
 *                   error.  The value is copied as is, never re-read as a template.
 *   {{#if c}} A {{#elif d}} B {{#else}} C {{/if}}
 *                   A when c is true, else B when d is true, else C; #elif and
 *                   #else are optional, #elif may repeat.  {{#if !c}} negates.
 *                   True means: a true bool, a non-zero integer, a non-empty
 *                   string, a non-empty list.
 *   {{#each list}} A {{/each}}
 *                   A once per item of LIST, in insertion order.  Inside,
 *                   {{@index}} is the 0-based item number (an integer) and
 *                   @first / @last are bools for #if.
 *   {{! text }}     a comment, dropped; it may span lines.
 *   {{{{            a literal "{{" (a lone "}}" needs no escape).
 *
 *   Names are C identifiers (@index, @first, @last aside); spaces and tabs
 *   may stand just inside the braces and after '!' ("{{ name }}",
 *   "{{#if ! c }}").  A tag other than a comment must close on the line
 *   where it opens.
 *
 *   Lookup: inside {{#each}} a name is looked up in the current item, then in
 *   the enclosing item of an outer loop, and so on outwards; after the
 *   outermost loop comes the scope given to tmpl_render and then its parents
 *   (tmpl_scope_new's PARENT).  The innermost definition wins.  Setting a
 *   name twice in one scope keeps the last value (and its type).
 *
 *   Standalone lines: a line that holds only directives (#if, #elif, #else,
 *   /if, #each, /each, comments) and spaces or tabs disappears from the
 *   output, newline included, so templates can be indented like C without
 *   littering the output with blank lines.  A line with a {{name}} or any
 *   other text is output as written, directives removed.
 *
 *   Errors (BCG_ERR_USAGE, message "file F line L: ..."): an unknown
 *   variable, a wrong type (substituting a bool or list, #each over a
 *   non-list), @index/@first/@last outside a loop, an unknown directive, a
 *   malformed tag, an unclosed "{{", a block that is never closed, a close or
 *   #elif/#else that does not match the open block, blocks nested deeper
 *   than MAX_DEPTH.  Syntax errors are found before anything is rendered;
 *   a variable is checked only when its text is reached (a branch not taken
 *   may name variables that do not exist).
 *
 * Memory: scopes and copies of names and string values live in the arena
 * given to the root tmpl_scope_new.  A failed allocation while filling scopes
 * is remembered in the root and makes tmpl_render return BCG_ERR_NOMEM; the
 * setters ignore a NULL scope, so callers need not check every call.
 * tmpl_render parses the template into a flat array of nodes on the heap
 * (freed before it returns; kept for the built-in templates, see below)
 * and then walks it.
 */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_DEPTH 64   /* nested #if / #each blocks in one template */

/* ---- scopes --------------------------------------------------------------- */

typedef enum { VALUE_STRING, VALUE_INTEGER, VALUE_BOOL, VALUE_LIST } value_kind;

typedef struct value {
    value_kind kind;
    union {
        struct { const char *text; size_t length; } string;
        int64_t integer;
        bool boolean;
        /* items are chained through tmpl_scope.next_item; `last` makes
         * tmpl_list_add O(1) */
        struct { tmpl_scope *first, *last; int64_t count; } list;
    } as;
} value;

typedef struct variable {
    struct variable *next;
    const char *name;
    size_t name_length;
    value value;
} variable;

/* Shared by every scope made from one root scope. */
typedef struct scope_root {
    arena *arena;
    bool failed;    /* an allocation failed while filling the scopes */
} scope_root;

struct tmpl_scope {
    const tmpl_scope *parent;
    scope_root *root;
    variable *variables;
    tmpl_scope *next_item;   /* the next item when this scope is a list item */
};

tmpl_scope *tmpl_scope_new(arena *a, const tmpl_scope *parent)
{
    if (!a) {
        if (parent)
            parent->root->failed = true;
        return NULL;
    }
    tmpl_scope *s = arena_alloc(a, sizeof *s);
    if (!s) {
        if (parent)
            parent->root->failed = true;
        return NULL;
    }
    s->parent = parent;
    if (parent) {
        s->root = parent->root;
    } else {
        s->root = arena_alloc(a, sizeof *s->root);
        if (!s->root)
            return NULL;
        s->root->arena = a;
    }
    return s;
}

static variable *find_own(const tmpl_scope *s, const char *name, size_t length)
{
    for (variable *v = s->variables; v; v = v->next)
        if (v->name_length == length && memcmp(v->name, name, length) == 0)
            return v;
    return NULL;
}

/* The variable NAME of S, created (as an empty string) when S has none;
 * NULL after recording an allocation failure. */
static variable *find_or_add(tmpl_scope *s, const char *name)
{
    assert(name);
    size_t length = strlen(name);
    variable *v = find_own(s, name, length);
    if (v)
        return v;
    v = arena_alloc(s->root->arena, sizeof *v);
    char *copy = v ? arena_strndup(s->root->arena, name, length) : NULL;
    if (!copy) {
        s->root->failed = true;
        return NULL;
    }
    v->name = copy;
    v->name_length = length;
    v->value.kind = VALUE_STRING;
    v->value.as.string.text = "";
    v->next = s->variables;
    s->variables = v;
    return v;
}

void tmpl_set_str(tmpl_scope *s, const char *name, const char *text)
{
    assert(text);
    if (!s)
        return;
    size_t length = strlen(text);
    char *copy = arena_strndup(s->root->arena, text, length);
    if (!copy) {
        s->root->failed = true;
        return;
    }
    variable *v = find_or_add(s, name);
    if (!v)
        return;
    v->value.kind = VALUE_STRING;
    v->value.as.string.text = copy;
    v->value.as.string.length = length;
}

void tmpl_set_int(tmpl_scope *s, const char *name, int64_t number)
{
    variable *v = s ? find_or_add(s, name) : NULL;
    if (!v)
        return;
    v->value.kind = VALUE_INTEGER;
    v->value.as.integer = number;
}

void tmpl_set_bool(tmpl_scope *s, const char *name, bool flag)
{
    variable *v = s ? find_or_add(s, name) : NULL;
    if (!v)
        return;
    v->value.kind = VALUE_BOOL;
    v->value.as.boolean = flag;
}

/* The list NAME of S; a variable of another type becomes an empty list. */
static variable *find_list(tmpl_scope *s, const char *name)
{
    variable *v = find_or_add(s, name);
    if (v && v->value.kind != VALUE_LIST) {
        v->value.kind = VALUE_LIST;
        v->value.as.list.first = v->value.as.list.last = NULL;
        v->value.as.list.count = 0;
    }
    return v;
}

tmpl_scope *tmpl_list_add(tmpl_scope *s, const char *name)
{
    if (!s)
        return NULL;
    variable *v = find_list(s, name);
    if (!v)
        return NULL;
    tmpl_scope *item = tmpl_scope_new(s->root->arena, s);
    if (!item)
        return NULL;
    if (v->value.as.list.last)
        v->value.as.list.last->next_item = item;
    else
        v->value.as.list.first = item;
    v->value.as.list.last = item;
    v->value.as.list.count++;
    return item;
}

void tmpl_list_declare(tmpl_scope *s, const char *name)
{
    if (s)
        find_list(s, name);
}

/* ---- parsing ---------------------------------------------------------------- */

typedef enum {
    NODE_TEXT, NODE_SUBSTITUTE,
    NODE_IF, NODE_ELIF, NODE_ELSE, NODE_END_IF,
    NODE_EACH, NODE_END_EACH,
    NODE_COMMENT   /* only while lexing: never stored */
} node_kind;

typedef struct node {
    node_kind kind;
    int line;
    bool negate;             /* #if !name */
    const char *text;        /* TEXT: the text; else the name (may start with '@') */
    size_t length;
    const char *tag;         /* the tag as written, for messages */
    size_t tag_length;
    size_t next;             /* IF, ELIF, ELSE: the next branch or the END_IF */
    size_t end;              /* IF, EACH: the closing node */
} node;

typedef struct open_block {
    size_t open;          /* the IF or EACH node */
    size_t last_branch;   /* IF: the latest IF/ELIF/ELSE node */
    bool has_else;
} open_block;

typedef struct renderer {
    const char *file;
    bcg_error *err;
    strbuf *out;
    node *nodes;
    size_t node_count, node_capacity;
    open_block blocks[MAX_DEPTH];
    int depth;
} renderer;

typedef enum {
    TAG_FINE, TAG_UNCLOSED, TAG_UNCLOSED_COMMENT, TAG_UNKNOWN_DIRECTIVE, TAG_MALFORMED
} tag_problem;

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

static bool is_name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && c >= '0' && c <= '9');
}

static bool is_open(const char *p, const char *limit)
{
    return p + 1 < limit && p[0] == '{' && p[1] == '{';
}

static bool is_escape(const char *p, const char *limit)
{
    return p + 3 < limit && p[0] == '{' && p[1] == '{' && p[2] == '{' && p[3] == '{';
}

/* Reads a name (an identifier, optionally after '@') at [p, limit); true
 * when it fills the whole range. */
static bool read_reference(const char *p, const char *limit)
{
    if (p < limit && *p == '@')
        p++;
    if (p == limit || !is_name_char(*p, true))
        return false;
    while (p < limit && is_name_char(*p, false))
        p++;
    return p == limit;
}

static bool word_is(const char *p, size_t length, const char *word)
{
    return strlen(word) == length && memcmp(p, word, length) == 0;
}

/* Lexes the tag whose "{{" is at P into *out (kind, negate, text/length =
 * the name, tag/tag_length = the tag as written).  *after is set past the
 * closing "}}" and *newlines to the newlines inside the tag. */
static tag_problem lex_tag(const char *p, const char *limit, node *out,
                           const char **after, int *newlines)
{
    const char *body = p + 2;
    while (body < limit && is_blank(*body))
        body++;
    bool comment = body < limit && *body == '!';
    const char *close = body;
    *newlines = 0;
    for (;;) {
        if (close + 1 >= limit || (!comment && *close == '\n')) {
            out->tag = p;
            out->tag_length = (size_t)(close - p);
            return comment ? TAG_UNCLOSED_COMMENT : TAG_UNCLOSED;
        }
        if (close[0] == '}' && close[1] == '}')
            break;
        if (*close == '\n')
            ++*newlines;
        close++;
    }
    *after = close + 2;
    out->tag = p;
    out->tag_length = (size_t)(*after - p);
    out->negate = false;
    if (comment) {
        out->kind = NODE_COMMENT;
        return TAG_FINE;
    }
    const char *end = close;
    while (end > body && is_blank(end[-1]))
        end--;
    if (body < end && (*body == '#' || *body == '/')) {
        const char *word = body + 1, *word_end = word;
        while (word_end < end && *word_end >= 'a' && *word_end <= 'z')
            word_end++;
        size_t word_length = (size_t)(word_end - word);
        bool open = *body == '#';
        bool takes_name = open && (word_is(word, word_length, "if") ||
                                   word_is(word, word_length, "elif") ||
                                   word_is(word, word_length, "each"));
        if (open && word_is(word, word_length, "if"))
            out->kind = NODE_IF;
        else if (open && word_is(word, word_length, "elif"))
            out->kind = NODE_ELIF;
        else if (open && word_is(word, word_length, "else"))
            out->kind = NODE_ELSE;
        else if (open && word_is(word, word_length, "each"))
            out->kind = NODE_EACH;
        else if (!open && word_is(word, word_length, "if"))
            out->kind = NODE_END_IF;
        else if (!open && word_is(word, word_length, "each"))
            out->kind = NODE_END_EACH;
        else
            return TAG_UNKNOWN_DIRECTIVE;
        if (!takes_name)
            return word_end == end ? TAG_FINE : TAG_MALFORMED;
        const char *name = word_end;
        if (name == end || !is_blank(*name))
            return TAG_MALFORMED;
        while (name < end && is_blank(*name))
            name++;
        if (out->kind != NODE_EACH && name < end && *name == '!') {
            out->negate = true;
            name++;
            while (name < end && is_blank(*name))
                name++;
        }
        out->text = name;
        out->length = (size_t)(end - name);
        return read_reference(name, end) ? TAG_FINE : TAG_MALFORMED;
    }
    out->kind = NODE_SUBSTITUTE;
    out->text = body;
    out->length = (size_t)(end - body);
    return read_reference(body, end) ? TAG_FINE : TAG_MALFORMED;
}

/* Messages quote at most this much of a tag. */
#define QUOTE_MAX 60

/* The tag of N as written, shortened for a message. */
static const char *quote(const node *n, char buffer[QUOTE_MAX + 4])
{
    size_t length = n->tag_length > QUOTE_MAX ? QUOTE_MAX : n->tag_length;
    memcpy(buffer, n->tag, length);
    strcpy(buffer + length, n->tag_length > QUOTE_MAX ? "..." : "");
    return buffer;
}

static bcg_status syntax_error(renderer *r, int line, tag_problem problem, const node *tag)
{
    char buffer[QUOTE_MAX + 4];
    switch (problem) {
    case TAG_UNCLOSED:
        return fail(r->err, BCG_ERR_USAGE,
                    "file %s line %d: '{{' is not closed by '}}' on the same line",
                    r->file, line);
    case TAG_UNCLOSED_COMMENT:
        return fail(r->err, BCG_ERR_USAGE, "file %s line %d: comment '{{!' is never closed",
                    r->file, line);
    case TAG_UNKNOWN_DIRECTIVE:
        return fail(r->err, BCG_ERR_USAGE, "file %s line %d: unknown directive '%s'",
                    r->file, line, quote(tag, buffer));
    default:
        return fail(r->err, BCG_ERR_USAGE, "file %s line %d: malformed tag '%s'",
                    r->file, line, quote(tag, buffer));
    }
}

static bcg_status out_of_memory(renderer *r)
{
    return fail(r->err, BCG_ERR_NOMEM, "file %s: out of memory while rendering the template",
                r->file);
}

static bcg_status add_node(renderer *r, const node *n)
{
    if (r->node_count == r->node_capacity) {
        size_t capacity = r->node_capacity ? 2 * r->node_capacity : 64;
        node *grown = mem_realloc(r->nodes, capacity * sizeof *grown);
        if (!grown)
            return out_of_memory(r);
        r->nodes = grown;
        r->node_capacity = capacity;
    }
    r->nodes[r->node_count++] = *n;
    return BCG_OK;
}

static bcg_status add_text(renderer *r, const char *start, const char *end, int line)
{
    if (start == end)
        return BCG_OK;
    node n = {.kind = NODE_TEXT, .line = line, .text = start, .length = (size_t)(end - start)};
    return add_node(r, &n);
}

/* "file F line L: {{/each}} does not close {{#if x}} opened on line M" */
static bcg_status mismatch(renderer *r, const node *n, const char *relation, size_t open)
{
    char tag[QUOTE_MAX + 4], opened[QUOTE_MAX + 4];
    const node *o = &r->nodes[open];
    return fail(r->err, BCG_ERR_USAGE, "file %s line %d: %s %s %s opened on line %d",
                r->file, n->line, quote(n, tag), relation, quote(o, opened), o->line);
}

static bcg_status unmatched(renderer *r, const node *n, const char *opener)
{
    char tag[QUOTE_MAX + 4];
    return fail(r->err, BCG_ERR_USAGE, "file %s line %d: %s without a matching %s",
                r->file, n->line, quote(n, tag), opener);
}

/* Adds a lexed tag, keeping the stack of open blocks and linking each
 * block's branches and close. */
static bcg_status add_tag(renderer *r, const node *n)
{
    size_t index = r->node_count;
    open_block *top = r->depth > 0 ? &r->blocks[r->depth - 1] : NULL;
    node_kind top_kind = top ? r->nodes[top->open].kind : NODE_TEXT;
    char tag[QUOTE_MAX + 4];
    switch (n->kind) {
    case NODE_COMMENT:
        return BCG_OK;
    case NODE_TEXT:
    case NODE_SUBSTITUTE:
        break;
    case NODE_IF:
    case NODE_EACH:
        if (r->depth == MAX_DEPTH)
            return fail(r->err, BCG_ERR_USAGE,
                        "file %s line %d: %s nests blocks deeper than %d",
                        r->file, n->line, quote(n, tag), MAX_DEPTH);
        r->blocks[r->depth++] = (open_block){.open = index, .last_branch = index};
        break;
    case NODE_ELIF:
    case NODE_ELSE:
    case NODE_END_IF:
        if (!top)
            return unmatched(r, n, "{{#if}}");
        if (top_kind != NODE_IF)
            return mismatch(r, n, n->kind == NODE_END_IF ? "does not close" : "inside",
                            top->open);
        if (n->kind != NODE_END_IF && top->has_else)
            return fail(r->err, BCG_ERR_USAGE,
                        "file %s line %d: %s after the {{#else}} of the if on line %d",
                        r->file, n->line, quote(n, tag), r->nodes[top->open].line);
        r->nodes[top->last_branch].next = index;
        top->last_branch = index;
        top->has_else = n->kind == NODE_ELSE;
        if (n->kind == NODE_END_IF) {
            r->nodes[top->open].end = index;
            r->depth--;
        }
        break;
    case NODE_END_EACH:
        if (!top)
            return unmatched(r, n, "{{#each}}");
        if (top_kind != NODE_EACH)
            return mismatch(r, n, "does not close", top->open);
        r->nodes[top->open].end = index;
        r->depth--;
        break;
    }
    return add_node(r, n);
}

/* True when the line starting at P holds directives and blanks only (at
 * least one directive). */
static bool line_is_standalone(const char *p, const char *limit)
{
    bool any = false;
    for (;;) {
        while (p < limit && (is_blank(*p) || *p == '\r'))
            p++;
        if (p == limit || *p == '\n')
            return any;
        if (!is_open(p, limit) || is_escape(p, limit))
            return false;
        node tag;
        int newlines;
        if (lex_tag(p, limit, &tag, &p, &newlines) != TAG_FINE || tag.kind == NODE_SUBSTITUTE)
            return false;
        any = true;
    }
}

static bcg_status parse(renderer *r, const char *text)
{
    const char *p = text, *limit = text + strlen(text);
    int line = 1;
    bcg_status status = BCG_OK;
    while (p < limit && status == BCG_OK) {
        bool standalone = line_is_standalone(p, limit);
        /* One line (longer when a comment spans lines); in a standalone
         * line only the tags are kept. */
        while (p < limit && status == BCG_OK) {
            const char *q = p;
            while (q < limit && *q != '\n' && !is_open(q, limit))
                q++;
            if (q == limit || *q == '\n') {
                if (q < limit)
                    q++;
                if (!standalone)
                    status = add_text(r, p, q, line);
                p = q;
                line++;
                break;
            }
            if (!standalone)
                status = add_text(r, p, q, line);
            if (status != BCG_OK)
                break;
            if (is_escape(q, limit)) {
                status = add_text(r, q, q + 2, line);
                p = q + 4;
                continue;
            }
            node tag = {.line = line};
            int newlines;
            tag_problem problem = lex_tag(q, limit, &tag, &p, &newlines);
            if (problem != TAG_FINE)
                return syntax_error(r, line, problem, &tag);
            status = add_tag(r, &tag);
            line += newlines;
        }
    }
    if (status == BCG_OK && r->depth > 0) {
        const node *o = &r->nodes[r->blocks[r->depth - 1].open];
        char tag[QUOTE_MAX + 4];
        return fail(r->err, BCG_ERR_USAGE, "file %s line %d: %s is never closed",
                    r->file, o->line, quote(o, tag));
    }
    return status;
}

/* ---- rendering -------------------------------------------------------------- */

/* What is visible while rendering: the render scope (outer == NULL) or one
 * item of a loop (index of count) and, through outer, everything around it. */
typedef struct frame {
    const struct frame *outer;
    const tmpl_scope *scope;
    int64_t index, count;
} frame;

static const char *kind_name(value_kind kind)
{
    switch (kind) {
    case VALUE_STRING: return "a string";
    case VALUE_INTEGER: return "an integer";
    case VALUE_BOOL: return "a bool";
    case VALUE_LIST: return "a list";
    }
    return "?";
}

/* Looks up the name of node N; an error when there is none. */
static bcg_status lookup(renderer *r, const frame *f, const node *n, value *out)
{
    const char *name = n->text;
    size_t length = n->length;
    if (name[0] == '@') {
        if (!f->outer)
            return fail(r->err, BCG_ERR_USAGE, "file %s line %d: %.*s used outside {{#each}}",
                        r->file, n->line, (int)length, name);
        if (word_is(name, length, "@index")) {
            out->kind = VALUE_INTEGER;
            out->as.integer = f->index;
            return BCG_OK;
        }
        if (word_is(name, length, "@first") || word_is(name, length, "@last")) {
            out->kind = VALUE_BOOL;
            out->as.boolean = name[1] == 'f' ? f->index == 0 : f->index == f->count - 1;
            return BCG_OK;
        }
    } else {
        const variable *v = NULL;
        for (; f->outer && !v; f = f->outer)
            v = find_own(f->scope, name, length);
        for (const tmpl_scope *s = f->scope; s && !v; s = s->parent)
            v = find_own(s, name, length);
        if (v) {
            *out = v->value;
            return BCG_OK;
        }
    }
    return fail(r->err, BCG_ERR_USAGE, "file %s line %d: unknown variable '%.*s'",
                r->file, n->line, (int)length, name);
}

static void put_integer(strbuf *sb, int64_t number)
{
    char digits[24], *p = digits + sizeof digits;
    /* through uint64_t so INT64_MIN has a magnitude */
    uint64_t magnitude = number < 0 ? 0 - (uint64_t)number : (uint64_t)number;
    do {
        *--p = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    if (number < 0)
        *--p = '-';
    sb_put(sb, p, (size_t)(digits + sizeof digits - p));
}

static bcg_status condition(renderer *r, const frame *f, const node *n, bool *result)
{
    value v;
    bcg_status status = lookup(r, f, n, &v);
    if (status != BCG_OK)
        return status;
    switch (v.kind) {
    case VALUE_STRING: *result = v.as.string.length > 0; break;
    case VALUE_INTEGER: *result = v.as.integer != 0; break;
    case VALUE_BOOL: *result = v.as.boolean; break;
    case VALUE_LIST: *result = v.as.list.count > 0; break;
    }
    if (n->negate)
        *result = !*result;
    return BCG_OK;
}

/* Renders nodes [begin, end) of a well-formed node array. */
static bcg_status run(renderer *r, size_t begin, size_t end, const frame *f)
{
    size_t i = begin;
    while (i < end) {
        const node *n = &r->nodes[i];
        bcg_status status = BCG_OK;
        value v;
        switch (n->kind) {
        case NODE_TEXT:
            sb_put(r->out, n->text, n->length);
            i++;
            break;
        case NODE_SUBSTITUTE:
            status = lookup(r, f, n, &v);
            if (status != BCG_OK)
                return status;
            if (v.kind == VALUE_STRING)
                sb_put(r->out, v.as.string.text, v.as.string.length);
            else if (v.kind == VALUE_INTEGER)
                put_integer(r->out, v.as.integer);
            else
                return fail(r->err, BCG_ERR_USAGE,
                            "file %s line %d: cannot substitute '%.*s': it is %s",
                            r->file, n->line, (int)n->length, n->text, kind_name(v.kind));
            i++;
            break;
        case NODE_IF: {
            size_t branch = i;
            while (r->nodes[branch].kind != NODE_END_IF) {
                const node *b = &r->nodes[branch];
                bool taken = true;
                if (b->kind != NODE_ELSE)
                    status = condition(r, f, b, &taken);
                if (status != BCG_OK)
                    return status;
                if (taken) {
                    status = run(r, branch + 1, b->next, f);
                    break;
                }
                branch = b->next;
            }
            if (status != BCG_OK)
                return status;
            i = n->end + 1;
            break;
        }
        case NODE_EACH: {
            status = lookup(r, f, n, &v);
            if (status != BCG_OK)
                return status;
            if (v.kind != VALUE_LIST)
                return fail(r->err, BCG_ERR_USAGE,
                            "file %s line %d: {{#each}} needs a list but '%.*s' is %s",
                            r->file, n->line, (int)n->length, n->text, kind_name(v.kind));
            frame item = {.outer = f, .count = v.as.list.count};
            for (const tmpl_scope *s = v.as.list.first; s; s = s->next_item, item.index++) {
                item.scope = s;
                status = run(r, i + 1, n->end, &item);
                if (status != BCG_OK)
                    return status;
            }
            i = n->end + 1;
            break;
        }
        default:
            assert(!"run: a branch or close node outside its block");
            return BCG_OK;
        }
        if (r->out->failed)
            return out_of_memory(r);
    }
    return BCG_OK;
}

/* ---- the built-in templates, parsed once ------------------------------------
 *
 * Parsing ops.c.tmpl (25 KB) took about a fifth of a small kernel's compile
 * (measured), and it is the same text every time: the nodes of a template
 * that tmpl_builtin gives (static text that never changes) are kept after
 * its first successful render, for the life of the process, and reused.
 * They are copied into plain malloc memory so that the mem_alloc leak
 * check does not count them; without memory they are simply not kept. */

#define BUILTIN_KEPT 8

static struct {
    const char *text;
    node *nodes;
    size_t node_count;
} kept[BUILTIN_KEPT];
static int kept_count;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

/* Whether TEXT's nodes are kept: R then uses them (node_capacity 0: R does
 * not own them). */
static bool parsed_builtin(const char *text, renderer *r)
{
    bool found = false;
    pthread_mutex_lock(&kept_lock);
    for (int i = 0; i < kept_count && !found; i++)
        if (kept[i].text == text) {
            r->nodes = kept[i].nodes;
            r->node_count = kept[i].node_count;
            r->node_capacity = 0;
            found = true;
        }
    pthread_mutex_unlock(&kept_lock);
    return found;
}

/* Keeps a copy of the nodes R parsed from TEXT, unless kept already. */
static void keep_builtin(const char *text, const renderer *r)
{
    if (!r->node_capacity)
        return; /* R's nodes are the kept ones */
    pthread_mutex_lock(&kept_lock);
    bool known = false;
    for (int i = 0; i < kept_count; i++)
        known |= kept[i].text == text;
    node *copy = known || kept_count == BUILTIN_KEPT ? NULL : malloc(sizeof *copy * r->node_count);
    if (copy) {
        memcpy(copy, r->nodes, sizeof *copy * r->node_count);
        kept[kept_count].text = text;
        kept[kept_count].nodes = copy;
        kept[kept_count].node_count = r->node_count;
        kept_count++;
    }
    pthread_mutex_unlock(&kept_lock);
}

bcg_status tmpl_render(strbuf *sb, const char *file, const char *text,
                       const tmpl_scope *scope, bcg_error *err)
{
    if (!file)
        file = "<template>";
    if (!sb || !text)
        return fail(err, BCG_ERR_USAGE, "file %s: tmpl_render needs a buffer and a text", file);
    if (!scope || scope->root->failed)
        return fail(err, BCG_ERR_NOMEM,
                    "file %s: out of memory while setting the template's variables", file);
    renderer r = {.file = file, .err = err, .out = sb};
    size_t start = sb->len;
    bool built_in = text == tmpl_builtin(file);
    bcg_status status = built_in && parsed_builtin(text, &r) ? BCG_OK : parse(&r, text);
    if (status == BCG_OK) {
        frame top = {.scope = scope};
        status = run(&r, 0, r.node_count, &top);
    }
    if (status == BCG_OK && sb->failed)
        status = out_of_memory(&r);
    if (built_in && r.nodes && status == BCG_OK)
        keep_builtin(text, &r);
    if (r.node_capacity) /* parsed here, not kept */
        mem_free(r.nodes);
    /* a failed render leaves no half template behind */
    if (status != BCG_OK && !sb->failed && sb->data) {
        sb->len = start;
        sb->data[start] = 0;
    }
    return status;
}
