/* cli.c - main() of the bcgen command and the helpers its commands share.
 * Each command lives in its own file (cli_shape.c, cli_explain.c,
 * cli_emit.c, cli_run.c); this file only dispatches. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: bcgen COMMAND [ARGS...]\n"
    "\n"
    "bcgen turns an elementwise expression over named tensors of concrete shapes\n"
    "into C specialised for exactly those shapes, dtypes and strides.\n"
    "\n"
    "commands:\n"
    "  shape    broadcast shapes:            bcgen shape 5,3,4,1 3,1,1\n"
    "  explain  show the broadcast, types and loop plan of an expression:\n"
    "           bcgen explain 'a * b + c' -i a=f32[5,3,4,1] -i b=f32[3,1,1] -i c=f32[]\n"
    "  emit     print or write the generated C:\n"
    "           bcgen emit 'a + b' -i a=f32[5,3,4,1] -i b=f32[3,1,1] -o kernel.c\n"
    "  run      JIT-compile and run on data:\n"
    "           bcgen run 'a + b' -i a=f32[5,3,4,1]=range -i b=f32[3,1,1]=ones\n"
    "  aot      write a self-contained .c/.h pair of kernels for firmware:\n"
    "           bcgen aot -k 'add=a + b' -i a=f32[4,4] -i b=f32[4] -o kernels.c\n"
    "  cache    show or clear the cc backend's disk cache: bcgen cache [show|clear]\n"
    "  functions  every function and operator, from the operator table\n"
    "\n"
    "Operands are written NAME=DTYPE[SHAPE], optionally @[STRIDES] (in elements)\n"
    "and, for run, =SOURCE.  DTYPE: bool i8 i16 i32 i64 u8 u16 u32 u64 f32 f64.\n"
    "`bcgen COMMAND --help` says more.  Exit status: 0 success, 1 a broadcast,\n"
    "type or compile error, 2 a usage or parse error.\n";

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (cli_is_help(cmd) || strcmp(cmd, "help") == 0) {
        fputs(usage, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("bcgen %s\n", BCG_VERSION);
        return 0;
    }
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } commands[] = {
        {"shape", cli_shape},
        {"explain", cli_explain},
        {"emit", cli_emit},
        {"run", cli_run},
        {"aot", cli_aot},
        {"cache", cli_cache},
        {"functions", cli_functions},
    };
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "bcgen: unknown command '%s'\n\n%s", cmd, usage);
    return 2;
}

bool cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int cli_exit_status(bcg_status status)
{
    switch (status) {
    case BCG_OK: return 0;
    case BCG_ERR_USAGE:
    case BCG_ERR_SHAPE:
    case BCG_ERR_PARSE: return 2;
    default: return 1;
    }
}

int cli_report(const char *cmd, const char *expr, const bcg_error *err)
{
    fprintf(stderr, "bcgen %s: %s\n", cmd, err->message);
    if (expr && err->column > 0 && strlen(expr) < 200) {
        fprintf(stderr, "    %s\n    %*s^\n", expr, err->column - 1, "");
    }
    return cli_exit_status(err->status);
}

void cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* Parses "[1,-2,0]" (a bracketed list of signed integers) into strides. */
static bool parse_strides(const char *text, size_t len, int64_t *out, int *count)
{
    if (len < 2 || text[0] != '[' || text[len - 1] != ']')
        return false;
    size_t i = 1, end = len - 1;
    *count = 0;
    while (i < end && text[i] == ' ')
        i++;
    if (i == end)
        return true;
    for (;;) {
        if (*count >= BCG_MAX_RANK)
            return false;
        char buf[32];
        size_t n = 0;
        while (i < end && text[i] != ',' && n < sizeof buf - 1)
            buf[n++] = text[i++];
        buf[n] = 0;
        char *stop;
        errno = 0;
        long long v = strtoll(buf, &stop, 10);
        while (*stop == ' ')
            stop++;
        if (stop == buf || *stop || errno)
            return false;
        out[(*count)++] = v;
        if (i == end)
            return true;
        i++; /* ',' */
    }
}

bcg_status cli_parse_operand(const char *spec, bool want_source, cli_operand *out,
                             bcg_error *err)
{
    memset(out, 0, sizeof *out);
    const char *eq = strchr(spec, '=');
    const char *form = want_source ? "NAME=DTYPE[SHAPE][@[STRIDES]]=SOURCE"
                                   : "NAME=DTYPE[SHAPE][@[STRIDES]]";
    if (!eq)
        return fail(err, BCG_ERR_USAGE, "operand '%s' has no '=': write %s, e.g. a=f32[3,4]",
                    spec, form);
    size_t name_len = (size_t)(eq - spec);
    if (!name_is_valid(spec, name_len))
        return fail(err, BCG_ERR_USAGE,
                    "operand '%s': '%.*s' is not a name ([A-Za-z_][A-Za-z0-9_]*, at most %d "
                    "bytes)",
                    spec, (int)name_len, spec, BCG_MAX_NAME);
    memcpy(out->name, spec, name_len);
    out->name[name_len] = 0;

    const char *type = eq + 1, *open = strchr(type, '[');
    if (!open)
        return fail(err, BCG_ERR_USAGE, "operand '%s' has no [SHAPE]: write %s, e.g. %s=f32[3,4]",
                    spec, form, out->name);
    if (!dtype_from_text(type, (size_t)(open - type), &out->dtype))
        return fail(err, BCG_ERR_USAGE,
                    "operand '%s': unknown dtype '%.*s' (bool i8 i16 i32 i64 u8 u16 u32 u64 "
                    "f32 f64)",
                    spec, (int)(open - type), type);
    const char *close = strchr(open, ']');
    if (!close)
        return fail(err, BCG_ERR_USAGE, "operand '%s': the shape has no closing ']'", spec);
    bcg_error shape_err;
    error_clear(&shape_err);
    if (shape_parse(open, (size_t)(close - open + 1), &out->shape, &shape_err))
        return fail(err, shape_err.status, "operand %s: %s", out->name, shape_err.message);

    const char *rest = close + 1;
    if (*rest == '@') {
        const char *sclose = strchr(rest, ']');
        int count = 0;
        if (rest[1] != '[' || !sclose ||
            !parse_strides(rest + 1, (size_t)(sclose - rest), out->strides, &count))
            return fail(err, BCG_ERR_USAGE,
                        "operand '%s': strides are written @[S0,S1,...] in elements, e.g. "
                        "@[1,3]",
                        spec);
        if (count != out->shape.rank)
            return fail(err, BCG_ERR_USAGE,
                        "operand %s has %d strides for a shape of rank %d", out->name, count,
                        out->shape.rank);
        out->has_strides = true;
        rest = sclose + 1;
    }
    if (*rest == '=') {
        if (!want_source)
            return fail(err, BCG_ERR_USAGE,
                        "operand '%s': a data source (=SOURCE) is only for `bcgen run`", spec);
        if (!rest[1])
            return fail(err, BCG_ERR_USAGE, "operand '%s': empty data source after '='", spec);
        out->source = rest + 1;
    } else if (*rest) {
        return fail(err, BCG_ERR_USAGE, "operand '%s': unexpected '%s' after the shape", spec,
                    rest);
    } else if (want_source) {
        return fail(err, BCG_ERR_USAGE,
                    "operand '%s' has no data: add =SOURCE (a .npy file, range, ones, zeros "
                    "or random:SEED)",
                    spec);
    }
    return BCG_OK;
}

void cli_operand_views(int count, const cli_operand *in, bcg_operand *out)
{
    for (int i = 0; i < count; i++) {
        out[i].name = in[i].name;
        out[i].dtype = in[i].dtype;
        out[i].rank = in[i].shape.rank;
        out[i].shape = in[i].shape.dims;
        out[i].strides = in[i].has_strides ? in[i].strides : NULL;
    }
}

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "bcgen %s: ", cmd);
    fprintf(stderr, fmt, arg);
    /* CMD may carry a place ("aot: kernels.bcg:3:5", from a spec file) */
    fprintf(stderr, "\n(see bcgen %.*s --help)\n", (int)strcspn(cmd, ":"), cmd);
    return 2;
}

static bool parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

void cli_output_init(cli_output *o)
{
    memset(o, 0, sizeof *o);
    o->output.dtype = BCG_DTYPE_AUTO;
    o->strides_count = -1;
}

int cli_output_option(const char *cmd, const char *arg, const char *value, cli_output *o)
{
    if (strcmp(arg, "--out-strides") == 0) {
        char text[BCG_MAX_RANK * 24 + 8];
        int count = 0;
        if (value)
            snprintf(text, sizeof text, value[0] == '[' ? "%s" : "[%s]", value);
        if (!value || !parse_strides(text, strlen(text), o->strides, &count))
            return usage_error(cmd, "--out-strides needs strides in elements, written "
                               "[S0,S1,...] or S0,S1,... (one per output dimension), not '%s'",
                               value ? value : "");
        o->strides_count = count;
        o->output.strides = o->strides;
    } else if (strcmp(arg, "--out-dtype") == 0) {
        bcg_dtype dtype;
        if (!value || bcg_dtype_parse(value, &dtype) != BCG_OK)
            return usage_error(cmd, "--out-dtype needs a dtype (bool, i8 ... u64, f32, f64, f16, bf16), "
                               "not '%s'", value ? value : "");
        o->output.dtype = (int)dtype;
    } else if (strcmp(arg, "--reduce") == 0) {
        int r = BCG_REDUCE_SUM;
        while (value && reduce_name(r) && strcmp(reduce_name(r), value) != 0)
            r++;
        if (!value || !reduce_name(r))
            return usage_error(cmd, "--reduce takes sum, prod, min, max, mean, any or all, not "
                               "'%s'", value ? value : "");
        o->output.reduce = r;
    } else if (strcmp(arg, "--out-shape") == 0) {
        bcg_error err;
        error_clear(&err);
        if (!value || shape_parse(value, strlen(value), &o->shape, &err) != BCG_OK)
            return usage_error(cmd, "--out-shape needs a shape such as 1,4096 or [] (%s)",
                               value ? err.message : "none given");
        o->has_shape = true;
    } else if (strcmp(arg, "--to") == 0) {
        if (!value)
            return usage_error(cmd, "%s", "--to needs the name of an operand whose shape the "
                               "reduction gives");
        o->to = value;
    } else {
        return 0;
    }
    o->given = true;
    return 1;
}

int cli_output_finish(const char *cmd, cli_output *o, const cli_operand *operands, int count,
                      bcg_options *options)
{
    if (!o->given)
        return -1;
    if ((o->has_shape || o->to) && !o->output.reduce)
        return usage_error(cmd, "%s", "--out-shape and --to give a reduction's shape: add "
                           "--reduce sum|prod|min|max|mean|any|all");
    if (o->output.reduce && o->has_shape == !!o->to)
        return usage_error(cmd, "%s", "--reduce needs the output shape: --out-shape SHAPE or "
                           "--to NAME (one of them)");
    if (o->to) {
        int found = -1;
        for (int i = 0; i < count; i++)
            if (strcmp(operands[i].name, o->to) == 0)
                found = i;
        if (found < 0)
            return usage_error(cmd, "--to names '%s', which is not an operand", o->to);
        o->shape = operands[found].shape;
    }
    if (o->output.reduce) {
        o->output.rank = o->shape.rank;
        o->output.shape = o->shape.dims;
        if (o->strides_count >= 0 && o->strides_count != o->shape.rank) {
            fprintf(stderr, "bcgen %s: --out-strides gives %d strides for an output of rank %d\n"
                    "(see bcgen %.*s --help)\n", cmd, o->strides_count, o->shape.rank,
                    (int)strcspn(cmd, ":"), cmd);
            return 2;
        }
    } else if (o->strides_count >= 0) {
        o->output.rank = o->strides_count;
    }
    options->output = &o->output;
    return -1;
}

static bool is_output_option(const char *arg)
{
    return strcmp(arg, "--out-strides") == 0 || strcmp(arg, "--out-dtype") == 0 ||
           strcmp(arg, "--reduce") == 0 || strcmp(arg, "--out-shape") == 0 ||
           strcmp(arg, "--to") == 0;
}

/* The output options, in the order given: to the one output of an
 * expression, or by statement name (NAME=VALUE) to a program's outputs;
 * without a NAME= they describe a program's only statement. */
static int apply_outputs(const char *cmd, cli_args *args)
{
    args->program = program_is_statements(args->expr);
    if (!args->program) {
        for (int r = 0; r < args->raw_count; r++) {
            if (strcmp(args->raw[r].arg, "-o") == 0) {
                args->output_path = args->raw[r].value;
                continue;
            }
            if (cli_output_option(cmd, args->raw[r].arg, args->raw[r].value, &args->out) == 2)
                return 2;
        }
        return cli_output_finish(cmd, &args->out, args->operands, args->operand_count,
                                 &args->options);
    }
    arena *a = arena_new();
    program p;
    bcg_error err;
    error_clear(&err);
    if (!a) {
        fprintf(stderr, "bcgen %s: out of memory\n", cmd);
        return 1;
    }
    if (program_split(a, args->expr, &p, &err)) {
        arena_free(a);
        return cli_report(cmd, args->expr, &err);
    }
    args->output_count = p.count;
    for (int i = 0; i < p.count; i++) {
        snprintf(args->output_names[i], sizeof args->output_names[i], "%s",
                 p.statements[i].name);
        cli_output_init(&args->outs[i]);
        args->output_paths[i] = NULL;
    }
    arena_free(a);
    for (int r = 0; r < args->raw_count; r++) {
        const char *value = args->raw[r].value, *eq = strchr(value, '=');
        if (strcmp(args->raw[r].arg, "-o") == 0 && strcmp(cmd, "run") != 0) {
            args->output_path = value; /* emit's file: the program's whole C */
            continue;
        }
        int at = -1;
        for (int i = 0; eq && i < args->output_count; i++)
            if ((size_t)(eq - value) == strlen(args->output_names[i]) &&
                memcmp(value, args->output_names[i], (size_t)(eq - value)) == 0)
                at = i;
        if (at >= 0) {
            value = eq + 1;
        } else if (args->output_count == 1) {
            at = 0;
        } else {
            return usage_error(cmd, "%s: say which statement it is for, as OPTION NAME=VALUE "
                               "(a program of several statements)",
                               args->raw[r].arg);
        }
        if (strcmp(args->raw[r].arg, "-o") == 0)
            args->output_paths[at] = value;
        else if (cli_output_option(cmd, args->raw[r].arg, value, &args->outs[at]) == 2)
            return 2;
    }
    for (int i = 0; i < args->output_count; i++) {
        bcg_options one;
        bcg_options_init(&one);
        int finished = cli_output_finish(cmd, &args->outs[i], args->operands,
                                         args->operand_count, &one);
        if (finished >= 0)
            return finished;
        if (one.output)
            args->outputs[i] = *one.output;
        else
            cli_output_init(&args->outs[i]), args->outputs[i] = args->outs[i].output;
    }
    args->options.outputs = args->outputs;
    args->options.output_count = args->output_count;
    return -1;
}

int cli_parse_args(const char *cmd, const char *help, int argc, char **argv, unsigned allowed,
                   bool want_source, cli_args *args)
{
    memset(args, 0, sizeof *args);
    bcg_options_init(&args->options);
    args->threads = 1;
    cli_output_init(&args->out);
    const char *inplace_name = NULL;
    bool options_done = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (options_done || arg[0] != '-' || arg[1] == 0) {
            if (args->expr)
                return usage_error(cmd,
                                   options_done
                                       ? "unexpected argument '%s' (one expression only; after "
                                         "-- every argument is the expression, so options go "
                                         "before --)"
                                       : "unexpected argument '%s' (one expression only)",
                                   arg);
            args->expr = arg;
            continue;
        }
        if (is_output_option(arg) || ((allowed & ARG_OUTPUT) && strcmp(arg, "-o") == 0)) {
            if (!value)
                return usage_error(cmd, "%s needs a value", arg);
            if (args->raw_count == (int)(sizeof args->raw / sizeof args->raw[0]))
                return usage_error(cmd, "%s: too many output options", arg);
            args->raw[args->raw_count].arg = arg;
            args->raw[args->raw_count++].value = value;
            i++;
        } else if (strcmp(arg, "--") == 0) {
            options_done = true;
        } else if (cli_is_help(arg)) {
            fputs(help, stdout);
            return 0;
        } else if (strcmp(arg, "-i") == 0 || strcmp(arg, "--input") == 0) {
            if (!value)
                return usage_error(cmd, "%s needs an operand, e.g. -i a=f32[3,4]", arg);
            if (args->operand_count == BCG_MAX_OPERANDS) {
                fprintf(stderr, "bcgen %s: more than %d operands\n", cmd, BCG_MAX_OPERANDS);
                return 1;
            }
            bcg_error err;
            error_clear(&err);
            if (cli_parse_operand(value, want_source, &args->operands[args->operand_count],
                                  &err))
                return cli_report(cmd, NULL, &err);
            args->operand_count++;
            i++;
        } else if (strcmp(arg, "--inplace") == 0) {
            if (!value)
                return usage_error(cmd, "%s needs the name of the operand to write into", arg);
            inplace_name = value;
            i++;
        } else if (strcmp(arg, "--axis") == 0) {
            if (!value || !parse_int(value, -BCG_MAX_RANK, BCG_MAX_RANK, &args->options.axis))
                return usage_error(cmd, "--axis needs an integer from -64 to 64, not '%s'",
                                   value ? value : "");
            i++;
        } else if (strcmp(arg, "--strict-rank") == 0) {
            args->options.strict_rank = 1;
        } else if (strcmp(arg, "--warn-legacy") == 0) {
            args->options.warn_legacy = 1;
        } else if (strcmp(arg, "--no-fuse") == 0) { /* a program: one kernel per statement */
            args->options.separate_statements = 1;
        } else if (strcmp(arg, "--no-vex") == 0) { /* tiles call microkernels (gen/vex.c) */
            args->options.disable_vector_code = 1;
        } else if ((allowed & ARG_JSON) && strcmp(arg, "--json") == 0) {
            args->json = true;
        } else if ((allowed & ARG_TIME) && strcmp(arg, "--time") == 0) {
            args->time = true;
        } else if ((allowed & ARG_REFERENCE) && strcmp(arg, "--reference") == 0) {
            args->reference = true;
        } else if ((allowed & ARG_NAME) && strcmp(arg, "--name") == 0) {
            if (!value || !name_is_valid(value, strlen(value)))
                return usage_error(cmd, "--name needs a C identifier, not '%s'",
                                   value ? value : "");
            args->function_name = value;
            i++;
        } else if ((allowed & ARG_UNROLL) && strcmp(arg, "--unroll") == 0) {
            int factor;
            if (!value)
                return usage_error(cmd, "%s needs full, none or a factor", arg);
            if (strcmp(value, "full") == 0) {
                args->options.unroll_limit = 65536;
            } else if (strcmp(value, "none") == 0) {
                args->options.unroll_limit = 0;
                args->options.unroll_factor = 1;
            } else if (parse_int(value, 1, 64, &factor)) {
                args->options.unroll_factor = factor;
            } else {
                return usage_error(cmd, "--unroll takes full, none or a factor from 1 to 64, "
                                        "not '%s'",
                                   value);
            }
            i++;
        } else if ((allowed & (ARG_COMPILE | ARG_STREAM)) && strcmp(arg, "--stream") == 0) {
            if (value && strcmp(value, "auto") == 0)
                args->options.stream_stores = BCG_STREAM_AUTO;
            else if (value && strcmp(value, "on") == 0)
                args->options.stream_stores = 1;
            else if (value && strcmp(value, "off") == 0)
                args->options.stream_stores = 0;
            else
                return usage_error(cmd, "--stream takes auto, on or off, not '%s'",
                                   value ? value : "");
            i++;
        } else if ((allowed & ARG_COMPILE) && strcmp(arg, "--backend") == 0) {
            if (value && strcmp(value, "tcc") == 0)
                args->options.backend = BCG_BACKEND_TCC;
            else if (value && strcmp(value, "cc") == 0)
                args->options.backend = BCG_BACKEND_CC;
            else
                return usage_error(cmd, "--backend takes tcc or cc, not '%s'",
                                   value ? value : "");
            i++;
        } else if ((allowed & ARG_COMPILE) && strcmp(arg, "--native") == 0) {
            args->options.native = 1;
        } else if ((allowed & ARG_THREADS) && strcmp(arg, "--threads") == 0) {
            if (!value || !parse_int(value, 1, BCG_MAX_THREADS, &args->threads))
                return usage_error(cmd, "--threads needs a count from 1 to 64, not '%s'",
                                   value ? value : "");
            i++;
        } else if ((allowed & ARG_JIT) && strcmp(arg, "--jit") == 0) {
            args->jit = true;
        } else {
            return usage_error(cmd, "unknown option '%s'", arg);
        }
    }
    if (!args->expr)
        return usage_error(cmd, "%s", "no expression given");
    if (args->operand_count == 0)
        return usage_error(cmd, "%s", "no operands given: add -i NAME=DTYPE[SHAPE] for each");
    int finished = apply_outputs(cmd, args);
    if (finished >= 0)
        return finished;
    if (inplace_name) {
        for (int i = 0; i < args->operand_count; i++)
            if (strcmp(args->operands[i].name, inplace_name) == 0)
                args->options.inplace = i;
        if (args->options.inplace < 0)
            return usage_error(cmd, "--inplace names '%s', which is not an operand",
                               inplace_name);
    }
    return -1;
}
