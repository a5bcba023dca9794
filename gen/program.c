/* program.c - several outputs from one call: a program "y = g * a; s = y"
 * split into statements, each statement's uses of earlier statements'
 * names replaced by their expressions, and each statement compiled as a
 * kernel of its own (bcg_compile) with its own output description.
 *
 *   program text
 *     -> program_split     statements: NAME, expression text, its column
 *     -> program_resolve   names checked, expressions expanded, each
 *                          statement's bcg_options (its bcg_output)
 *     -> bcg_compile / compile_pipeline per statement (compile.c)
 *     -> bcg_run_outputs   the kernels in statement order, the program's
 *                          overlap checks first
 *
 * A program whose statements share one result shape (its reductions all
 * over the same dimensions) is instead compiled as ONE kernel computing
 * every output in one pass ("fusion" below); bcg_run_outputs then runs
 * that.  Its statements' own kernels are compiled only when
 * bcg_program_kernel asks for one; the overlap checks use each
 * statement's spans from its front end (statement_info).  A program that
 * does not fuse compiles and runs them in order (every output is the same
 * bits either way).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cprint.h"
#include "internal.h"

static bool is_name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* An '=' that is not part of ==, !=, <= or >=. */
static bool is_assignment(const char *text, size_t i)
{
    if (text[i] != '=')
        return false;
    if (text[i + 1] == '=')
        return false;
    return !(i > 0 && (text[i - 1] == '=' || text[i - 1] == '!' || text[i - 1] == '<' ||
                       text[i - 1] == '>'));
}

bool program_is_statements(const char *text)
{
    if (!text)
        return false;
    for (size_t i = 0; text[i] && i <= BCG_MAX_EXPR * (size_t)BCG_MAX_OUTPUTS; i++)
        if (text[i] == ';' || is_assignment(text, i))
            return true;
    return false;
}

bcg_status program_split(arena *a, const char *text, program *out, bcg_error *err)
{
    memset(out, 0, sizeof *out);
    if (!text)
        return fail(err, BCG_ERR_USAGE, "no program given");
    size_t length = strnlen(text, BCG_MAX_EXPR * (size_t)BCG_MAX_OUTPUTS + 1);
    if (length > BCG_MAX_EXPR * (size_t)BCG_MAX_OUTPUTS)
        return fail(err, BCG_ERR_LIMIT, "the program is longer than %d bytes (BCG_MAX_OUTPUTS "
                    "statements of BCG_MAX_EXPR bytes)", BCG_MAX_EXPR * BCG_MAX_OUTPUTS);
    out->statements = arena_alloc(a, sizeof *out->statements * BCG_MAX_OUTPUTS);
    if (!out->statements)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    if (!program_is_statements(text)) { /* a plain expression: one unnamed output */
        out->count = 1;
        out->statements[0] = (program_statement){.name = "", .text = text, .column = 1};
        out->plain = true;
        return BCG_OK;
    }
    size_t start = 0;
    while (start <= length) {
        size_t end = start;
        while (end < length && text[end] != ';')
            end++;
        size_t i = start;
        while (i < end && is_space(text[i]))
            i++;
        if (i == end) { /* an empty statement: only allowed after the last ';' */
            if (end == length && out->count > 0)
                break;
            return fail_at(err, BCG_ERR_PARSE, (int)i + 1, -1, -1,
                           "statement %d at column %d is empty (statements are NAME = EXPR, "
                           "separated by ';')",
                           out->count + 1, (int)i + 1);
        }
        if (out->count == BCG_MAX_OUTPUTS)
            return fail_at(err, BCG_ERR_LIMIT, (int)i + 1, -1, -1,
                           "the program has more than %d statements (BCG_MAX_OUTPUTS)",
                           BCG_MAX_OUTPUTS);
        size_t name_start = i;
        while (i < end && is_name_char(text[i]))
            i++;
        size_t name_end = i;
        while (i < end && is_space(text[i]))
            i++;
        if (name_end == name_start || !is_name_start(text[name_start]) || i == end ||
            !is_assignment(text, i))
            return fail_at(err, BCG_ERR_PARSE, (int)name_start + 1, -1, -1,
                           "statement %d at column %d is not NAME = EXPR (a program's "
                           "statements each name their output)",
                           out->count + 1, (int)name_start + 1);
        if (name_end - name_start > BCG_MAX_NAME)
            return fail_at(err, BCG_ERR_LIMIT, (int)name_start + 1, -1, -1,
                           "statement %d's name is %zu bytes long; the limit is %d",
                           out->count + 1, name_end - name_start, BCG_MAX_NAME);
        program_statement *st = &out->statements[out->count];
        st->name = arena_strndup(a, text + name_start, name_end - name_start);
        size_t from = i + 1, to = end; /* the expression, without the spaces around it */
        while (from < to && is_space(text[from]))
            from++;
        while (to > from && is_space(text[to - 1]))
            to--;
        st->text = arena_strndup(a, text + from, to - from);
        if (!st->name || !st->text)
            return fail(err, BCG_ERR_NOMEM, "out of memory");
        st->name_column = (int)name_start + 1;
        st->column = (int)from + 1;
        for (int j = 0; j < out->count; j++)
            if (strcmp(out->statements[j].name, st->name) == 0)
                return fail_at(err, BCG_ERR_USAGE, st->name_column, -1, -1,
                               "statement name %s is given twice (statements %d and %d)",
                               st->name, j + 1, out->count + 1);
        out->count++;
        start = end + 1;
    }
    return BCG_OK;
}

/* The statement named NAME[0, N) among the first BEFORE, or -1. */
static int find_statement(const program *p, const char *name, size_t n, int before)
{
    for (int j = 0; j < before; j++)
        if (strlen(p->statements[j].name) == n && memcmp(p->statements[j].name, name, n) == 0)
            return j;
    return -1;
}

/* Statement I's expression with every use of an earlier statement's name
 * (an identifier not followed by '(', outside number literals) replaced by
 * that statement's expanded expression in parentheses. */
static bcg_status expand(arena *a, program *p, int index, bcg_error *err)
{
    program_statement *st = &p->statements[index];
    const char *s = st->text;
    strbuf sb;
    sb_init(&sb);
    size_t i = 0;
    while (s[i]) {
        if ((s[i] >= '0' && s[i] <= '9') || (s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '9')) {
            size_t j = i;
            while (is_name_char(s[j]) || s[j] == '.' ||
                   ((s[j] == '+' || s[j] == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E') &&
                    !(s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X'))))
                j++;
            sb_put(&sb, s + i, j - i);
            i = j;
            continue;
        }
        if (!is_name_start(s[i])) {
            sb_putc(&sb, s[i++]);
            continue;
        }
        size_t j = i;
        while (is_name_char(s[j]))
            j++;
        size_t k = j;
        while (is_space(s[k]))
            k++;
        int used = s[k] == '(' ? -1 : find_statement(p, s + i, j - i, index);
        if (used < 0 && s[k] != '(' && find_statement(p, s + i, j - i, p->count) >= 0) {
            sb_free(&sb);
            return fail_at(err, BCG_ERR_PARSE, st->column + (int)i, -1, -1,
                           "statement %s uses %.*s, which is not an earlier statement "
                           "(a statement may use the names of the ones before it)",
                           st->name, (int)(j - i), s + i);
        }
        if (used >= 0) {
            st->uses[used] = true;
            for (int u = 0; u < used; u++)
                st->uses[u] |= p->statements[used].uses[u];
            sb_putc(&sb, '(');
            sb_puts(&sb, p->statements[used].expanded);
            sb_putc(&sb, ')');
            st->expanded_differs = true;
        } else {
            sb_put(&sb, s + i, j - i);
        }
        i = j;
        if (sb.len > BCG_MAX_EXPR)
            break;
    }
    if (sb.failed) {
        sb_free(&sb);
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    }
    if (sb.len > BCG_MAX_EXPR) {
        sb_free(&sb);
        return fail_at(err, BCG_ERR_LIMIT, st->column, -1, -1,
                       "statement %s, with the statements it uses written out, is longer "
                       "than %d bytes (BCG_MAX_EXPR)",
                       st->name, BCG_MAX_EXPR);
    }
    st->expanded = arena_strndup(a, sb.data ? sb.data : "", sb.len);
    sb_free(&sb);
    return st->expanded ? BCG_OK : fail(err, BCG_ERR_NOMEM, "out of memory");
}

void program_statement_error(const program *p, int index, bcg_error *err)
{
    if (!err || err->status == BCG_OK || p->plain)
        return;
    const program_statement *st = &p->statements[index];
    char message[sizeof err->message + 64];
    snprintf(message, sizeof message, "statement %.63s: %.400s", st->name, err->message);
    memcpy(err->message, message, sizeof err->message - 1);
    err->message[sizeof err->message - 1] = 0;
    if (err->column > 0)
        err->column = st->expanded_differs ? 0 : err->column + st->column - 1;
}

bcg_status program_resolve(arena *a, const char *text, const bcg_operand *operands,
                           int operand_count, const bcg_options *options, program *p,
                           bcg_error *err)
{
    bcg_status s = program_split(a, text, p, err);
    if (s)
        return s;
    bcg_options base;
    if (options)
        base = *options;
    else
        bcg_options_init(&base);
    if (base.output_count < 0 || base.output_count > p->count || (base.output_count && !base.outputs))
        return fail(err, BCG_ERR_USAGE,
                    "%d output descriptions given (bcg_options.outputs) for a program of %d "
                    "statement%s",
                    base.output_count, p->count, p->count == 1 ? "" : "s");
    if (p->count > 1 && base.inplace >= 0)
        return fail(err, BCG_ERR_USAGE,
                    "a program of %d statements cannot write in place (options.inplace): a "
                    "later statement would read what an earlier one wrote",
                    p->count);
    if (base.output_count && base.output)
        return fail(err, BCG_ERR_USAGE, "give a program's outputs in bcg_options.outputs or "
                    "its one output in bcg_options.output, not both");
    const bcg_output **described = arena_alloc(a, sizeof *described * (size_t)p->count);
    if (!described)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < base.output_count; i++) {
        const bcg_output *o = &base.outputs[i];
        const char *name = base.output_names ? base.output_names[i] : NULL;
        int at = i;
        if (name) {
            at = find_statement(p, name, strlen(name), p->count);
            if (at < 0 || p->plain)
                return fail(err, BCG_ERR_USAGE,
                            "output description %d names %.63s, which is not a statement of "
                            "the program", i, name);
        }
        if (described[at])
            return fail(err, BCG_ERR_USAGE, "output %d (%s) is described twice in "
                        "bcg_options.outputs", at, p->plain ? "the expression" :
                        p->statements[at].name);
        described[at] = o;
    }
    if (!base.output_count && base.output)
        described[0] = base.output;
    for (int i = 0; i < p->count; i++) {
        program_statement *st = &p->statements[i];
        for (int k = 0; k < operand_count && operands && !p->plain; k++)
            if (operands[k].name && strcmp(operands[k].name, st->name) == 0)
                return fail_at(err, BCG_ERR_USAGE, st->name_column, k, -1,
                               "statement name %s is also an operand's name", st->name);
        if (p->plain) {
            st->expanded = st->text;
        } else {
            st->uses = arena_alloc(a, sizeof *st->uses * BCG_MAX_OUTPUTS);
            if (!st->uses)
                return fail(err, BCG_ERR_NOMEM, "out of memory");
            if ((s = expand(a, p, i, err)))
                return s;
            for (int j = 0; j < i; j++)
                if (st->uses[j] && described[j] && described[j]->reduce != BCG_REDUCE_NONE)
                    return fail_at(err, BCG_ERR_USAGE, st->column, -1, -1,
                                   "statement %s uses %s, whose output is a reduction (%s): "
                                   "only element-wise statements can be used later",
                                   st->name, p->statements[j].name,
                                   reduce_name(described[j]->reduce)
                                       ? reduce_name(described[j]->reduce) : "?");
        }
        st->options = base;
        st->options.outputs = NULL;
        st->options.output_count = 0;
        st->options.output_names = NULL;
        st->options.output = described[i];
    }
    return BCG_OK;
}

/* ---- the public API ------------------------------------------------------------ */

/* What bcg_run_outputs' overlap checks and the CLI need of statement i's
 * kernel, known from its front end (as compile.c's prepare_run sets them):
 * the byte spans of its output and of each operand it reads, its output's
 * dtype and shape, its warnings; and while the kernel is not made, the
 * cache key it is compiled from when asked for. */
typedef struct statement_info {
    int64_t out_low, out_high;
    int64_t low[BCG_MAX_OPERANDS], high[BCG_MAX_OPERANDS];
    bcg_dtype dtype;
    int rank;
    int64_t shape[BCG_MAX_RANK];
    char *warning;          /* mem_alloc'd, or NULL */
    unsigned char *key;     /* mem_alloc'd until compiled (lazy kernels only) */
    size_t key_length;
} statement_info;

struct bcg_program {
    int count;
    /* each statement's kernel: compiled with the program when it does not
     * fuse; when it fuses, on the first bcg_program_kernel (the fused
     * kernel runs it, so a program compiles once), under lock */
    bcg_kernel **kernels;
    statement_info *info;
    pthread_mutex_t lock;
    bool lock_ready;
    bcg_context *ctx;
    char **names;      /* name_count of them (mem_alloc'd) */
    int name_count;
    int capacity;      /* statements the arrays hold (zeroed until set) */
    int operand_count;
    char **operand_names; /* operand_count of them (mem_alloc'd) */
    /* the fused kernel (NULL: statement by statement); root j is statement
     * order[j], order[0] the kernel's own output */
    bcg_kernel *fused;
    int order[BCG_MAX_OUTPUTS];
};

/* INFO from statement C's front end (the spans prepare_run gives its
 * kernel), and the key to compile it from later; false when memory runs
 * out. */
static bool info_from_front(statement_info *info, const compile *c, const program_statement *st,
                            const bcg_operand *operands, int operand_count, bcg_context *ctx,
                            bcg_kernel **cached)
{
    size_t size = bcg_dtype_size(c->out_dtype);
    plan_span(c->fill_plan ? c->fill_plan : c->plan, 0, size, &info->out_low, &info->out_high);
    for (int i = 0; i < c->operand_count; i++) {
        const compile_operand *o = &c->operands[i];
        int64_t n = (int64_t)bcg_dtype_size(o->dtype);
        bool unread = o->empty || c->plan->empty || !c->used[i];
        info->low[i] = unread ? 0 : o->low * n;
        info->high[i] = unread ? 0 : (o->high + 1) * n;
    }
    info->dtype = c->out_dtype;
    info->rank = c->out_shape.rank;
    memcpy(info->shape, c->out_shape.dims, sizeof(int64_t) * (size_t)c->out_shape.rank);
    info->warning = compile_warnings(c);
    if (!info->warning && compile_warnings_exist(c))
        return false;
    /* a kernel the cache has is taken now; else its key, for later */
    key_probe probe = {0, 0};
    size_t length = strlen(st->expanded);
    *cached = cache_lookup(ctx, st->expanded, length, operands, operand_count, &st->options,
                           &probe);
    if (*cached)
        return true;
    info->key = cache_key_new(&probe, st->expanded, length, operands, operand_count,
                              &st->options);
    info->key_length = probe.length;
    return info->key != NULL;
}

/* INFO from statement kernel K (compiled with the program). */
static void info_from_kernel(statement_info *info, const bcg_kernel *k)
{
    info->out_low = k->output_low;
    info->out_high = k->output_high;
    for (int i = 0; i < k->operand_count; i++) {
        info->low[i] = k->run[i].low;
        info->high[i] = k->run[i].high;
    }
    info->dtype = k->dtype;
    info->rank = k->rank;
    memcpy(info->shape, k->shape, sizeof(int64_t) * (size_t)k->rank);
}

compile *program_compile_new(arena *a, bcg_error *err)
{
    compile *c = arena_alloc(a, sizeof *c); /* (zeroed) */
    if (c) {
        c->arena = a;
        c->err = err;
    }
    return c;
}

/* PROG's fused kernel, when the program fuses (else none, and no error). */
static bcg_status compile_program_fused(bcg_context *ctx, const program *p, const char *text,
                                        const bcg_operand *operands, int operand_count,
                                        bcg_program *prog)
{
    arena *a = arena_new();
    if (!a)
        return BCG_ERR_NOMEM;
    program_fusion f;
    bcg_status s = program_fuse_check(a, p, operands, operand_count, text, &f);
    if (s || !f.fused) {
        arena_free(a);
        return s;
    }
    bcg_error err;
    error_clear(&err);
    compile *c = program_compile_new(a, &err);
    compile_request r;
    if (!c) {
        arena_free(a);
        return BCG_ERR_NOMEM;
    }
    if ((s = program_fuse_setup(a, p, &f, c, &r))) {
        arena_free(a);
        return s;
    }
    memcpy(prog->order, f.order, sizeof prog->order);
    /* each statement's spans and key from its front end (in A, which
     * compile_fused takes): its kernel is made when asked for */
    for (int i = 0; i < p->count; i++)
        if (!info_from_front(&prog->info[i], f.fronts[i], &p->statements[i], operands,
                             operand_count, ctx, &prog->kernels[i])) {
            arena_free(a);
            return BCG_ERR_NOMEM;
        }
    s = compile_fused(ctx, a, c, f.key_text, &r, &prog->fused); /* takes A */
    /* a fused kernel that does not compile leaves the per-statement kernels,
     * and so does one slower than they are */
    char slower[200];
    if (!s && prog->fused && prog->fused->front &&
        program_fused_slower(prog->fused->front, slower, sizeof slower)) {
        bcg_kernel_release(prog->fused);
        prog->fused = NULL;
    }
    return s == BCG_ERR_NOMEM ? s : BCG_OK;
}

bcg_status bcg_compile_program(bcg_context *ctx, const char *text, const bcg_operand *operands,
                               int operand_count, const bcg_options *options,
                               bcg_program **out, bcg_error *err)
{
    error_clear(err);
    if (!ctx || !out)
        return fail(err, BCG_ERR_USAGE, "bcg_compile_program needs a context and a program "
                    "pointer");
    *out = NULL;
    arena *a = arena_new();
    if (!a)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    program p;
    bcg_status s = program_resolve(a, text, operands, operand_count, options, &p, err);
    bcg_program *prog = NULL;
    if (!s) {
        prog = mem_alloc(sizeof *prog);
        if (prog) {
            memset(prog, 0, sizeof *prog);
            prog->kernels = mem_alloc(sizeof *prog->kernels * (size_t)p.count);
            prog->info = mem_alloc(sizeof *prog->info * (size_t)p.count);
            prog->names = mem_alloc(sizeof *prog->names * (size_t)p.count);
            prog->operand_names = mem_alloc(sizeof *prog->operand_names *
                                            (size_t)(operand_count > 0 ? operand_count : 1));
        }
        if (!prog || !prog->kernels || !prog->info || !prog->names || !prog->operand_names) {
            s = fail(err, BCG_ERR_NOMEM, "out of memory");
        } else {
            memset(prog->kernels, 0, sizeof *prog->kernels * (size_t)p.count);
            memset(prog->info, 0, sizeof *prog->info * (size_t)p.count);
            memset(prog->names, 0, sizeof *prog->names * (size_t)p.count);
            memset(prog->operand_names, 0, sizeof *prog->operand_names *
                                               (size_t)(operand_count > 0 ? operand_count : 1));
            prog->operand_count = operand_count;
            prog->capacity = p.count;
            prog->ctx = ctx;
            prog->lock_ready = pthread_mutex_init(&prog->lock, NULL) == 0;
            if (!prog->lock_ready)
                s = fail(err, BCG_ERR_NOMEM, "out of memory (a mutex)");
        }
        for (int i = 0; !s && i < operand_count; i++) {
            const char *name = operands[i].name ? operands[i].name : "?";
            if (!(prog->operand_names[i] = mem_alloc(strlen(name) + 1)))
                s = fail(err, BCG_ERR_NOMEM, "out of memory");
            else
                memcpy(prog->operand_names[i], name, strlen(name) + 1);
        }
    }
    if (!s && (s = compile_program_fused(ctx, &p, text, operands, operand_count, prog)))
        fail(err, s, "out of memory");
    for (int i = 0; !s && i < p.count; i++) {
        const program_statement *st = &p.statements[i];
        size_t n = strlen(st->name) + 1;
        if (!(prog->names[i] = mem_alloc(n))) {
            s = fail(err, BCG_ERR_NOMEM, "out of memory");
            break;
        }
        memcpy(prog->names[i], st->name, n);
        prog->name_count = i + 1;
        prog->count = i + 1;
        if (prog->fused) /* made when asked for (bcg_program_kernel) */
            continue;
        bcg_kernel_release(prog->kernels[i]); /* (one the cache had: compiled again) */
        prog->kernels[i] = NULL;
        s = bcg_compile(ctx, st->expanded, operands, operand_count, &st->options,
                        &prog->kernels[i], err);
        if (s)
            program_statement_error(&p, i, err);
        else
            info_from_kernel(&prog->info[i], prog->kernels[i]);
    }
    arena_free(a);
    if (s) {
        bcg_program_free(prog);
        return s;
    }
    *out = prog;
    return BCG_OK;
}

void bcg_program_free(bcg_program *prog)
{
    if (!prog)
        return;
    bcg_kernel_release(prog->fused);
    for (int i = 0; prog->kernels && i < prog->capacity; i++)
        bcg_kernel_release(prog->kernels[i]);
    for (int i = 0; prog->info && i < prog->capacity; i++) {
        mem_free(prog->info[i].warning);
        mem_free(prog->info[i].key);
    }
    for (int i = 0; prog->names && i < prog->name_count; i++)
        mem_free(prog->names[i]);
    for (int i = 0; prog->operand_names && i < prog->operand_count; i++)
        mem_free(prog->operand_names[i]);
    if (prog->lock_ready)
        pthread_mutex_destroy(&prog->lock);
    mem_free(prog->operand_names);
    mem_free(prog->names);
    mem_free(prog->info);
    mem_free(prog->kernels);
    mem_free(prog);
}

int bcg_program_output_count(const bcg_program *prog) { return prog ? prog->count : 0; }

const char *bcg_program_output_name(const bcg_program *prog, int i)
{
    return prog && i >= 0 && i < prog->count ? prog->names[i] : NULL;
}

const bcg_kernel *bcg_program_fused(const bcg_program *prog) { return prog ? prog->fused : NULL; }

const bcg_kernel *bcg_program_kernel(const bcg_program *prog, int i)
{
    if (!prog || i < 0 || i >= prog->count)
        return NULL;
    bcg_program *p = (bcg_program *)prog; /* the lazy kernels, under the lock */
    pthread_mutex_lock(&p->lock);
    statement_info *info = &p->info[i];
    if (!p->kernels[i] && info->key) {
        arena *a = arena_new();
        const char *expr;
        bcg_operand *operands;
        int count;
        bcg_options options;
        bcg_error err;
        error_clear(&err);
        if (a && cache_key_decode(a, info->key, info->key_length, &expr, &operands, &count,
                                  &options) &&
            bcg_compile(p->ctx, expr, operands, count, &options, &p->kernels[i], &err) == BCG_OK) {
            mem_free(info->key);
            info->key = NULL;
        }
        arena_free(a);
    }
    pthread_mutex_unlock(&p->lock);
    return p->kernels[i];
}

const bcg_kernel *program_kernel_made(const bcg_program *prog, int i)
{
    return prog && i >= 0 && i < prog->count ? prog->kernels[i] : NULL;
}

bcg_dtype program_output_dtype(const bcg_program *prog, int i, int *rank,
                               const int64_t **shape, const char **warning)
{
    const statement_info *info = &prog->info[i];
    const bcg_kernel *k = prog->kernels[i];
    *rank = info->rank;
    *shape = info->shape;
    *warning = k ? bcg_kernel_warning(k) : info->warning ? info->warning : "";
    return info->dtype;
}

static bool spans_overlap(const void *a, int64_t a_low, int64_t a_high, const void *b,
                          int64_t b_low, int64_t b_high)
{
    if (a_low == a_high || b_low == b_high || !a || !b)
        return false;
    uintptr_t a0 = (uintptr_t)a + (uintptr_t)a_low, a1 = (uintptr_t)a + (uintptr_t)a_high;
    uintptr_t b0 = (uintptr_t)b + (uintptr_t)b_low, b1 = (uintptr_t)b + (uintptr_t)b_high;
    return a0 < b1 && b0 < a1;
}

bcg_status bcg_run_outputs(const bcg_program *prog, void *const *outputs,
                           const void *const *inputs, int threads, bcg_error *err)
{
    if (err && err->status != BCG_OK)
        error_clear(err);
    if (!prog)
        return fail(err, BCG_ERR_USAGE, "bcg_run_outputs: no program");
    if (!outputs || !inputs)
        return fail(err, BCG_ERR_RUN, "bcg_run_outputs: the %s pointer array is NULL",
                    outputs ? "input" : "output");
    if (prog->count > 1) {
        for (int i = 0; i < prog->count; i++) {
            const statement_info *k = &prog->info[i];
            for (int j = 0; j < i; j++) {
                const statement_info *o = &prog->info[j];
                if (spans_overlap(outputs[i], k->out_low, k->out_high, outputs[j],
                                  o->out_low, o->out_high))
                    return fail(err, BCG_ERR_RUN,
                                "bcg_run_outputs: output %s overlaps output %s (a program's "
                                "outputs must be separate arrays)",
                                prog->names[i], prog->names[j]);
            }
            /* an operand some statement reads must not change under the
             * statements after the one writing it */
            for (int j = 0; j < prog->count; j++) {
                const statement_info *r = &prog->info[j];
                for (int op = 0; op < prog->operand_count; op++)
                    if (spans_overlap(outputs[i], k->out_low, k->out_high, inputs[op],
                                      r->low[op], r->high[op]))
                        return fail_at(err, BCG_ERR_RUN, 0, op, -1,
                                       "bcg_run_outputs: output %s overlaps operand %s, which "
                                       "statement %s reads (a program of several statements "
                                       "writes no operand)",
                                       prog->names[i], prog->operand_names[op], prog->names[j]);
            }
        }
    }
    if (prog->fused) { /* one pass: the other outputs ride after the operands */
        const void *pointers[BCG_MAX_OPERANDS];
        for (int op = 0; op < prog->operand_count; op++)
            pointers[op] = inputs[op];
        for (int j = 1; j < prog->count; j++)
            pointers[prog->operand_count + j - 1] = outputs[prog->order[j]];
        return bcg_run_threads(prog->fused, outputs[prog->order[0]], pointers, threads, err);
    }
    for (int i = 0; i < prog->count; i++) {
        bcg_status s = bcg_run_threads(prog->kernels[i], outputs[i], inputs, threads, err);
        if (s) {
            if (prog->count > 1 && err) {
                char message[sizeof err->message + 64];
                snprintf(message, sizeof message, "output %.63s: %.400s", prog->names[i],
                         err->message);
                memcpy(err->message, message, sizeof err->message - 1);
    err->message[sizeof err->message - 1] = 0;
            }
            return s;
        }
    }
    return BCG_OK;
}

/* ---- bcg_emit_program: one translation unit for every statement ---------------- */

/* Statement I of P as plain C named FUNCTION_NAME_<name> into *SOURCE (A). */
static bcg_status emit_statement(arena *a, const program *p, int i, const bcg_operand *operands,
                                 int operand_count, const char *function_name,
                                 emit_needs *needs_out, const emit_needs *program_needs,
                                 const char **source, bcg_error *err)
{
    const program_statement *st = &p->statements[i];
    compile *c = program_compile_new(a, err);
    if (!c)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    c->function_name = p->plain ? function_name
                                : arena_printf(a, "%s_%s", function_name, st->name);
    c->needs_out = needs_out;
    c->program_needs = program_needs;
    c->no_prelude = i > 0;
    if (!c->function_name)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    compile_request r = {.text = st->expanded, .operands = operands,
                         .operand_count = operand_count, .options = &st->options,
                         .goal = COMPILE_PLAIN};
    bcg_status s = compile_pipeline(c, &r);
    if (s) {
        program_statement_error(p, i, err);
        return s;
    }
    *source = c->source;
    return BCG_OK;
}

/* The fused program F of P as plain C: FUNCTION_NAME_fused (the kernel of
 * every output, the other outputs in its input array after the operands)
 * and FUNCTION_NAME(out, in) calling it (mem_alloc'd into *SOURCE). */
static bcg_status emit_fused(arena *a, const program *p, const program_fusion *f,
                             const char *function_name, char **source, bcg_error *err)
{
    compile *c = program_compile_new(a, err);
    if (!c)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    c->function_name = arena_printf(a, "%s_fused", function_name);
    compile_request r;
    bcg_status s = c->function_name ? program_fuse_setup(a, p, f, c, &r)
                                    : fail(err, BCG_ERR_NOMEM, "out of memory");
    if (s)
        return s;
    r.goal = COMPILE_PLAIN;
    if ((s = compile_pipeline(c, &r)))
        return s;
    int operands = f->operand_count - (p->count - 1);
    strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, c->source);
    sb_printf(&sb, "\n/* %s - generated by bcgen %s; do not edit.\n *\n", function_name,
              BCG_VERSION);
    sb_printf(&sb, " * The program's %d outputs, in statement order: OUT[k] points at "
              "output k's\n * element [0, ..., 0], IN[k] at input k's.  One pass: %s_fused "
              "computes\n * them all, the other outputs after the operands in its IN.\n",
              p->count, function_name);
    for (int i = 0; i < p->count; i++)
        sb_printf(&sb, " *   out[%d]  %s\n", i, p->statements[i].name);
    sb_printf(&sb, " */\nvoid %s(void *const *out, const void *const *in)\n{\n",
              function_name);
    sb_printf(&sb, "    const void *operands[%d];\n", f->operand_count);
    for (int k = 0; k < operands; k++)
        sb_printf(&sb, "    operands[%d] = in[%d];\n", k, k);
    for (int j = 1; j < p->count; j++)
        sb_printf(&sb, "    operands[%d] = out[%d]; /* %s */\n", operands + j - 1, f->order[j],
                  p->statements[f->order[j]].name);
    sb_printf(&sb, "    %s_fused(out[%d], operands);\n}\n", function_name, f->order[0]);
    if (sb.failed) {
        sb_free(&sb);
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    }
    *source = mem_alloc(sb.len + 1);
    if (*source)
        memcpy(*source, sb.data, sb.len + 1);
    sb_free(&sb);
    return *source ? BCG_OK : fail(err, BCG_ERR_NOMEM, "out of memory");
}

bcg_status bcg_emit_program(const char *text, const bcg_operand *operands, int operand_count,
                            const bcg_options *options, const char *function_name,
                            char **source, bcg_error *err)
{
    error_clear(err);
    if (!source)
        return fail(err, BCG_ERR_USAGE, "bcg_emit_program needs somewhere to put the source");
    *source = NULL;
    function_name = function_name ? function_name : "bcg_kernel";
    if (!name_is_valid(function_name, strlen(function_name)))
        return fail(err, BCG_ERR_USAGE,
                    "function name is not a C identifier ([A-Za-z_][A-Za-z0-9_]*, at most %d "
                    "bytes)", BCG_MAX_NAME);
    arena *a = arena_new();
    if (!a)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    program p;
    bcg_status s = program_resolve(a, text, operands, operand_count, options, &p, err);
    emit_needs *needs = arena_alloc(a, sizeof *needs);
    const char **parts = arena_alloc(a, sizeof *parts * BCG_MAX_OUTPUTS);
    if (!s && (!needs || !parts))
        s = fail(err, BCG_ERR_NOMEM, "out of memory");
    if (!s && !p.plain) {
        size_t longest = 0;
        for (int i = 0; i < p.count; i++)
            if (strlen(p.statements[i].name) > longest)
                longest = strlen(p.statements[i].name);
        if (strlen(function_name) + 1 + longest > 2 * BCG_MAX_NAME)
            s = fail(err, BCG_ERR_LIMIT, "function name %s with a statement's name is too long",
                     function_name);
    }
    /* a program that fuses: one function computing every output, and the
     * program's function handing it the other outputs after the operands */
    program_fusion f;
    f.fused = false;
    if (!s && !p.plain && program_fuse_check(a, &p, operands, operand_count, text, &f))
        s = fail(err, BCG_ERR_NOMEM, "out of memory");
    if (!s && f.fused) {
        s = emit_fused(a, &p, &f, function_name, source, err);
        arena_free(a);
        return s;
    }
    /* first every statement's needs, then the C with the first prelude
     * serving all */
    for (int i = 0; !s && i < p.count; i++)
        s = emit_statement(a, &p, i, operands, operand_count, function_name, needs, NULL,
                           &parts[i], err);
    for (int i = 0; !s && i < p.count; i++)
        s = emit_statement(a, &p, i, operands, operand_count, function_name, NULL, needs,
                           &parts[i], err);
    strbuf sb;
    sb_init(&sb);
    for (int i = 0; !s && i < p.count; i++) {
        sb_puts(&sb, parts[i]);
        if (i + 1 < p.count)
            sb_putc(&sb, '\n');
    }
    if (!s && !p.plain) {
        sb_printf(&sb, "\n/* %s - generated by bcgen %s; do not edit.\n *\n", function_name,
                  BCG_VERSION);
        sb_printf(&sb, " * The program's %d outputs, in statement order: OUT[k] points at "
                  "output k's\n * element [0, ..., 0], IN[k] at input k's.\n", p.count);
        for (int i = 0; i < p.count; i++)
            sb_printf(&sb, " *   out[%d]  %s\n", i, p.statements[i].name);
        sb_printf(&sb, " */\nvoid %s(void *const *out, const void *const *in)\n{\n",
                  function_name);
        for (int i = 0; i < p.count; i++)
            sb_printf(&sb, "    %s_%s(out[%d], in);\n", function_name, p.statements[i].name, i);
        sb_puts(&sb, "}\n");
    }
    if (!s && sb.failed)
        s = fail(err, BCG_ERR_NOMEM, "out of memory");
    if (!s) {
        *source = mem_alloc(sb.len + 1);
        if (!*source)
            s = fail(err, BCG_ERR_NOMEM, "out of memory");
        else
            memcpy(*source, sb.data ? sb.data : "", sb.len + 1);
    }
    sb_free(&sb);
    arena_free(a);
    return s;
}

/* Several reductions in one kernel run in per-element code (lower.c,
 * kernel_ir.root_reduce) unless tiles can take them.  With microkernels,
 * per-element code over runs as long as microkernel_run is slower than the
 * statements' own kernels in tiles (measured on f32[4096,4096], two sums:
 * 7x along the rows, 27x over them), so that program runs statement by
 * statement; plain C (bcg_emit, AOT, the cc backend) always gains. */
bool program_fused_slower(const compile *c, char *why, size_t cap)
{
    const struct kernel_ir *ir = c->ir;
    if (!ir || !ir->root_reduce || ir->tiled || !c->microkernels ||
        c->options.microkernel_run <= 0) /* (no tiles for the statements either) */
        return false;
    const plan *p = ir->p;
    for (int l = 0; l < p->loop_count; l++)
        if (p->extent[l] >= c->options.microkernel_run) {
            snprintf(why, cap, "several reductions in one kernel would run in per-element "
                     "code over loops of %lld (>= microkernel_run %d), slower than their own "
                     "kernels' microkernel tiles", (long long)p->extent[l],
                     c->options.microkernel_run);
            return true;
        }
    return false;
}

/* ---- fusion: a program as one kernel -------------------------------------------
 *
 * A program whose statements all iterate over one result shape (element-wise
 * outputs of that shape, in any view and dtype, and reductions of it, all
 * over the same dimensions) is compiled as ONE kernel: the primary
 * statement's (the first reduction, or else the first), with every other
 * statement's output an extra plan operand after the real inputs (never
 * read, written through its own position; a reduction's broadcast along
 * the reduced dimensions) and its typed tree an extra root of the kernel IR
 * (kir.h, "roots"; root_reduce for other reductions, each its own
 * accumulator acc<j>).  In the loop nest every store of the root, or
 * update of its accumulator, is followed by the update of every other
 * accumulator and a store of each other root at the same element; in tiles each
 * other root is a tile of microkernel calls (sharing the tiles of equal
 * subtrees across roots, so `y = g * a; s = y` multiplies once) copied into
 * its output.  Each output element is computed by the same operations in
 * the same order as its own statement's kernel computes it, and each
 * reduction keeps its single-output order (check_reduce_orders), so the results are bit for bit
 * those of the per-statement kernels, on any thread count (threads cut the
 * outermost loop, which is never a reduced one, and every output moves with
 * it).  Anything else runs statement by statement; explain says why. */

static bool same_shape(const shape *x, const shape *y)
{
    if (x->rank != y->rank)
        return false;
    for (int d = 0; d < x->rank; d++)
        if (x->dims[d] != y->dims[d])
            return false;
    return true;
}

static void why(program_fusion *f, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static void why(program_fusion *f, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(f->why, sizeof f->why, format, args);
    va_end(args);
    f->fused = false;
}

/* "{0,2}": the result dimensions C reduces. */
static void format_reduced(const compile *c, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "{");
    bool first = true;
    for (int d = 0; d < c->broadcast->result.rank && used < cap; d++)
        if (c->reduced[d]) {
            used += (size_t)snprintf(buf + used, cap - used, first ? "%d" : ",%d", d);
            first = false;
        }
    if (used < cap)
        snprintf(buf + used, cap - used, "}");
}

/* The order a reduction into plan operand K of P adds its values in: the
 * result dimensions its reduced loops cover, outermost first, the
 * innermost loop's extent and the partial sums (lanes go by that loop's
 * index).  Each output element's values are added in this order, so two
 * reductions of one order give the same bits.  Not `valid` when the loops
 * K does not move are not the innermost ones. */
typedef struct reduce_order {
    bool valid;
    int from, dim_count, lanes;
    int dims[BCG_MAX_RANK];
    int64_t inner;
} reduce_order;

static reduce_order reduce_order_of(const plan *p, int k, int lanes)
{
    reduce_order o;
    memset(&o, 0, sizeof o);
    int from = p->loop_count;
    while (from > 0 && p->stride[k][from - 1] == 0)
        from--;
    for (int l = 0; l < from; l++)
        if (p->stride[k][l] == 0)
            return o;
    o.valid = true;
    o.from = from;
    o.lanes = lanes;
    o.inner = p->loop_count > from ? p->extent[p->loop_count - 1] : 0;
    for (int l = from; l < p->loop_count; l++)
        for (int m = 0; m < p->dim_count[l]; m++)
            o.dims[o.dim_count++] = p->order[p->dim_first[l] + m];
    return o;
}

/* Whether X and Y add in one order: the same dimensions in the same
 * order, and with partial sums, the same innermost extent (the lane of an
 * element is its index in that loop mod lanes).  Wrapping integer sums and
 * products, integer extremes and logical reductions give the same bits in
 * any order (ORDER_FREE): only the reduced loops must be the same. */
static bool same_order(const reduce_order *x, const reduce_order *y, bool order_free)
{
    if (!x->valid || !y->valid || x->dim_count != y->dim_count || x->lanes != y->lanes)
        return false;
    if (order_free)
        return true;
    return (x->lanes == 1 || x->inner == y->inner) &&
           memcmp(x->dims, y->dims, sizeof x->dims) == 0;
}

/* Every reduction of F (set up but for this) must add its values in the
 * fused kernel in the order its own kernel does: the fused kernel's
 * front end (the plan over every output) against each statement's.
 * Leaves F->why set when one does not. */
static bcg_status check_reduce_orders(arena *a, const program *p, program_fusion *f)
{
    int reductions = 0;
    for (int i = 0; i < p->count; i++)
        reductions += f->fronts[i]->reduce != 0;
    if (reductions == 0)
        return BCG_OK;
    bcg_error err;
    error_clear(&err);
    compile *c = program_compile_new(a, &err);
    if (!c)
        return BCG_ERR_NOMEM;
    compile_request r;
    bcg_status s = program_fuse_setup(a, p, f, c, &r);
    if (!s)
        s = compile_front(c, r.text, r.operands, r.operand_count, r.options);
    if (s) {
        why(f, "the fused kernel does not compile: %.200s", err.message);
        return s == BCG_ERR_NOMEM ? s : BCG_OK;
    }
    int real_inputs = f->operand_count - (p->count - 1);
    for (int j = 0; j < p->count; j++) {
        const compile *own = f->fronts[f->order[j]];
        if (!own->reduce)
            continue;
        int k = j == 0 ? 0 : real_inputs + j; /* its plan operand in the fused kernel */
        reduce_order want = reduce_order_of(own->plan, 0, reduce_lanes(own));
        reduce_order got = reduce_order_of(c->plan, k,
                                           reduce_lanes_of(c, own->reduce, own->root->dtype, k));
        if (got.valid && got.from != reduce_order_of(c->plan, 0, 1).from)
            got.valid = false;
        acc_kind kind = reduce_acc_kind(own->reduce, own->root->dtype);
        bool order_free = kind == ACC_WRAP || kind == ACC_LOGICAL ||
                          (kind == ACC_EXTREME && dtype_kind_of(own->root->dtype) != KIND_FLOAT);
        if (!same_order(&got, &want, order_free)) {
            why(f, "statement %.63s's %s would add its values in another order than its own "
                "kernel does (the other outputs change the loops or the partial sums), so "
                "its bits could differ", p->statements[f->order[j]].name,
                reduce_name(own->reduce));
            return BCG_OK;
        }
    }
    return BCG_OK;
}

bcg_status program_fuse_check(arena *a, const program *p, const bcg_operand *operands,
                              int operand_count, const char *text, program_fusion *f)
{
    memset(f, 0, sizeof *f);
    if (p->plain || p->count < 2) {
        why(f, "a single expression");
        return BCG_OK;
    }
    if (p->statements[0].options.separate_statements) {
        why(f, "separate kernels were asked for (separate_statements, --no-fuse)");
        return BCG_OK;
    }
    f->fronts = arena_alloc(a, sizeof *f->fronts * (size_t)p->count);
    if (!f->fronts)
        return BCG_ERR_NOMEM;
    bcg_error err;
    error_clear(&err);
    f->primary = -1;
    for (int i = 0; i < p->count; i++) {
        const program_statement *st = &p->statements[i];
        compile *c = program_compile_new(a, &err);
        if (!c)
            return BCG_ERR_NOMEM;
        if (compile_front(c, st->expanded, operands, operand_count, &st->options)) {
            why(f, "statement %.63s does not compile on its own", st->name);
            return err.status == BCG_ERR_NOMEM ? BCG_ERR_NOMEM : BCG_OK;
        }
        f->fronts[i] = c;
        if (c->reduce && f->primary < 0)
            f->primary = i;
    }
    if (f->primary < 0)
        f->primary = 0;
    const compile *first = f->fronts[f->primary];
    const shape *result = &first->broadcast->result;
    for (int i = 0; i < p->count; i++) {
        const compile *c = f->fronts[i];
        if (!same_shape(&c->broadcast->result, result)) {
            char mine[BCG_MAX_RANK * 24], theirs[BCG_MAX_RANK * 24];
            shape_format(&c->broadcast->result, mine, sizeof mine);
            shape_format(result, theirs, sizeof theirs);
            why(f, "statement %.63s iterates over %s, statement %.63s over %s (a fused kernel "
                "has one loop nest)", p->statements[i].name, mine,
                p->statements[f->primary].name, theirs);
            return BCG_OK;
        }
    }
    if (first->plan->empty || (first->fill_plan != NULL)) {
        why(f, "the result has no elements");
        return BCG_OK;
    }
    /* several reductions share the primary's reduced (innermost) loops */
    for (int i = 0; i < p->count; i++) {
        const compile *c = f->fronts[i];
        if (!c->reduce || i == f->primary ||
            memcmp(c->reduced, first->reduced, sizeof c->reduced) == 0)
            continue;
        char mine[BCG_MAX_RANK * 4 + 4], theirs[BCG_MAX_RANK * 4 + 4];
        format_reduced(c, mine, sizeof mine);
        format_reduced(first, theirs, sizeof theirs);
        why(f, "statement %.63s reduces dimensions %s, statement %.63s dimensions %s (a fused "
            "kernel's reductions share its innermost, reduced loops, each adding its values "
            "in its own kernel's order)", p->statements[i].name, mine,
            p->statements[f->primary].name, theirs);
        return BCG_OK;
    }
    if (operand_count + p->count - 1 > BCG_MAX_OPERANDS) {
        why(f, "%d operands and %d other outputs are more than a kernel's %d pointers",
            operand_count, p->count - 1, BCG_MAX_OPERANDS);
        return BCG_OK;
    }
    /* the order of roots: the primary, then the others in statement order */
    f->order[0] = f->primary;
    for (int i = 0, j = 1; i < p->count; i++)
        if (i != f->primary)
            f->order[j++] = i;
    f->operand_count = operand_count + p->count - 1;
    f->operands = arena_alloc(a, sizeof *f->operands * (size_t)f->operand_count);
    f->strides = arena_alloc(a, sizeof *f->strides * (size_t)p->count);
    f->shapes = arena_alloc(a, sizeof *f->shapes * (size_t)p->count);
    f->dims = arena_alloc(a, sizeof *f->dims * (size_t)(result->rank ? result->rank : 1));
    if (!f->operands || !f->strides || !f->shapes || !f->dims)
        return BCG_ERR_NOMEM;
    memcpy(f->operands, operands, sizeof *f->operands * (size_t)operand_count);
    for (int d = 0; d < result->rank; d++)
        f->dims[d] = result->dims[d];
    for (int j = 1; j < p->count; j++) {
        const compile *c = f->fronts[f->order[j]];
        bcg_operand *o = &f->operands[operand_count + j - 1];
        memset(o, 0, sizeof *o);
        o->name = p->statements[f->order[j]].name;
        o->dtype = c->out_dtype;
        o->rank = result->rank;
        o->shape = f->dims;
        o->strides = NULL;
        if (c->reduce) { /* its target, broadcast along the reduced dimensions */
            o->rank = c->out_shape.rank;
            for (int d = 0; d < o->rank; d++) {
                f->shapes[j][d] = c->out_shape.dims[d];
                f->strides[j][d] = c->view_strides[d];
            }
            o->shape = f->shapes[j];
            o->strides = f->strides[j];
        } else if (c->out_strides) {
            for (int d = 0; d < result->rank; d++)
                f->strides[j][d] = c->out_strides[d];
            o->strides = f->strides[j];
        }
    }
    bcg_status s = check_reduce_orders(a, p, f);
    if (s || f->why[0])
        return s;
    strbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "fused program, output %d first: %s", f->primary, text);
    for (int j = 1; j < p->count; j++) /* the other reductions (not in the operands) */
        if (f->fronts[f->order[j]]->reduce)
            sb_printf(&sb, "; %d %s", j, reduce_name(f->fronts[f->order[j]]->reduce));
    f->key_text = sb.failed ? NULL : arena_strndup(a, sb.data ? sb.data : "", sb.len);
    sb_free(&sb);
    if (!f->key_text)
        return BCG_ERR_NOMEM;
    f->fused = true;
    return BCG_OK;
}

bcg_status program_fuse_setup(arena *a, const program *p, const program_fusion *f, compile *c,
                              compile_request *r)
{
    int others = p->count - 1;
    c->fuse_count = others;
    c->fuse_root = arena_alloc(a, sizeof *c->fuse_root * (size_t)others);
    const char *text = arena_strndup(a, p->statements[f->primary].expanded,
                                     strlen(p->statements[f->primary].expanded));
    if (!c->fuse_root || !text)
        return fail(c->err, BCG_ERR_NOMEM, "out of memory");
    for (int j = 1; j <= others; j++) {
        const compile *front = f->fronts[f->order[j]];
        c->fuse_root[j - 1] = front->root;
        if (!front->reduce)
            continue;
        if (!c->fuse_reduce) {
            c->fuse_reduce = arena_alloc(a, sizeof *c->fuse_reduce * (size_t)others);
            if (!c->fuse_reduce)
                return fail(c->err, BCG_ERR_NOMEM, "out of memory");
            memset(c->fuse_reduce, 0, sizeof *c->fuse_reduce * (size_t)others);
        }
        c->fuse_reduce[j - 1] = (fuse_reduction){.reduce = front->reduce,
                                                 .reduced_dtype = front->reduced_dtype,
                                                 .out_dtype = front->out_dtype,
                                                 .count = front->reduce_count};
    }
    /* the options and output description the kernel keeps (its front end
     * outlives the caller's arrays) */
    bcg_options *options = arena_alloc(a, sizeof *options);
    if (!options)
        return fail(c->err, BCG_ERR_NOMEM, "out of memory");
    *options = p->statements[f->primary].options;
    const bcg_output *given = options->output;
    if (given) {
        bcg_output *out = arena_alloc(a, sizeof *out);
        size_t bytes = sizeof(int64_t) * (size_t)(given->rank > 0 ? given->rank : 1);
        int64_t *shape = arena_alloc(a, bytes), *strides = arena_alloc(a, bytes);
        if (!out || !shape || !strides || given->rank < 0 || given->rank > BCG_MAX_RANK)
            return fail(c->err, BCG_ERR_NOMEM, "out of memory");
        *out = *given;
        if (given->shape) {
            memcpy(shape, given->shape, sizeof(int64_t) * (size_t)given->rank);
            out->shape = shape;
        }
        if (given->strides) {
            memcpy(strides, given->strides, sizeof(int64_t) * (size_t)given->rank);
            out->strides = strides;
        }
        options->output = out;
    }
    memset(r, 0, sizeof *r);
    r->text = text;
    r->operands = f->operands;
    r->operand_count = f->operand_count;
    r->options = options;
    return BCG_OK;
}
