/* cli_shape.c - `bcgen shape`: the broadcast rules alone, on shapes given as
 * text, printed the way NumPy prints a shape (or as JSON for tools).
 *
 * Options come before the shapes; the first argument that is not an option
 * starts the shapes, and `--` ends the options explicitly.  An argument
 * made of '-' and a digit ("-1,2") is never an option (no option starts
 * with a digit), so it is taken as a shape and rejected as a negative size
 * rather than as an unknown option.  After the first shape, an argument
 * that looks like an option ("--json") is a usage error saying that
 * options go first, not a confusing shape error. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: bcgen shape [--inplace] [--axis K] [--strict-rank] [--warn-legacy] [--json]\n"
    "                   [--] SHAPE...\n"
    "\n"
    "Broadcasts the shapes with NumPy's rules and prints the result as NumPy\n"
    "prints a shape: (5, 3, 4, 1), (5,) or ().  Shapes are right-aligned and the\n"
    "shorter ones padded with 1 on the left; in each dimension the sizes must be\n"
    "equal or one of them 1, and the result takes the larger (0 goes with 0 and 1).\n"
    "\n"
    "SHAPE is written 5,3,4,1  [5,3,4,1]  (5,3,4,1)  (5,)  or  5x3x4x1;\n"
    "[]  ()  or  scalar  is a shape of rank 0.  Quote shapes with brackets or\n"
    "spaces for the shell.  Up to 64 shapes of up to 64 dimensions.\n"
    "\n"
    "Messages name the shapes \"operand 0\", \"operand 1\", ... in the order given,\n"
    "and give dimensions as indices into the broadcast result, e.g.\n"
    "  cannot broadcast operand 1 (3,1,1) against operand 0 (5,2,4,1):\n"
    "  dimension 1 has size 3 in operand 1 and 2 in operand 0\n"
    "(messages write shapes without spaces; one dimension is (3,) as in NumPy)\n"
    "\n"
    "options (before the shapes; -- ends them):\n"
    "  --inplace       the result is written into the first shape (PyTorch's\n"
    "                  x.add_(y)): the broadcast must not change its shape\n"
    "  --axis K        Paddle's axis, for exactly two shapes: the one of lower rank\n"
    "                  (or the second, when the ranks are equal) is placed into the\n"
    "                  other starting at dimension K; its trailing 1s that would run\n"
    "                  past the end are dropped.  -1 is ordinary right alignment;\n"
    "                  with equal ranks K must be -1 or 0\n"
    "  --strict-rank   reject rank-0 shapes (every tensor needs a dimension)\n"
    "  --warn-legacy   warn when the shapes differ but hold as many elements and\n"
    "                  the old pointwise (1-D) rule, which gave the first shape,\n"
    "                  would give another result (PyTorch's backwards-compatibility\n"
    "                  broadcast warning; 1,4 with 4 is silent)\n"
    "  --json          print one JSON object on stdout: {\"shape\": [5, 3, 4, 1]} or\n"
    "                  {\"error\": \"...\"}, with \"warnings\": [...] when there are any\n"
    "  -h, --help      this text\n"
    "\n"
    "An argument like -1,2 is a shape (and an error: negative size), never an\n"
    "option.  Warnings go to stderr as \"bcgen shape: warning: ...\"; errors go to\n"
    "stderr (and, with --json, also into the JSON object on stdout).\n"
    "\n"
    "exit status: 0 success, 1 the shapes do not broadcast (or the result is too\n"
    "large), 2 a usage error or a malformed shape.\n"
    "\n"
    "examples:\n"
    "  bcgen shape 5,3,4,1 3,1,1           (5, 3, 4, 1)\n"
    "  bcgen shape '[8,1,6,1]' 7x1x5 ()     (8, 7, 6, 5)\n"
    "  bcgen shape 5,2,4,1 3,1,1           error, exit 1\n"
    "  bcgen shape --inplace 1,3,1 3,1,7   error: in-place result cannot change ...\n"
    "  bcgen shape --axis 1 2,1,4 3,1      (2, 3, 4)\n"
    "  bcgen shape --warn-legacy 4,1 4     (4, 4) and a warning\n"
    "  bcgen shape --json 3 2,1            {\"shape\": [2, 3]}\n";

typedef struct shape_args {
    broadcast_rules rules;
    bool json;
    int first_shape;   /* index in argv */
} shape_args;

static bool looks_like_option(const char *arg)
{
    return arg[0] == '-' && arg[1] != 0 && !(arg[1] >= '0' && arg[1] <= '9');
}

/* Prints an error the way the mode asks and returns STATUS. */
static int report(const shape_args *args, int status, const char *message)
{
    fprintf(stderr, "bcgen shape: %s\n", message);
    if (args->json) {
        fputs("{\"error\": ", stdout);
        cli_json_string(stdout, message);
        fputs("}\n", stdout);
    }
    return status;
}

static int usage_error(const shape_args *args, const char *message)
{
    report(args, 2, message);
    if (!args->json)
        fputs("(see bcgen shape --help)\n", stderr);
    return 2;
}

static bool parse_axis(const char *text, int *out)
{
    char *end;
    long value = strtol(text, &end, 10);
    if (!*text || *end || value < -BCG_MAX_RANK || value > BCG_MAX_RANK)
        return false;
    *out = (int)value;
    return true;
}

/* Returns -1 to go on, or the exit status (after --help or an error). */
static int parse_options(int argc, char **argv, shape_args *args)
{
    char message[256];
    args->rules = (broadcast_rules){BCG_AXIS_NONE, -1, false, false};
    args->json = false;
    /* --json first, so that every error, even one about an earlier
     * argument, comes out as JSON. */
    for (int i = 1; i < argc && looks_like_option(argv[i]); i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--json") == 0)
            args->json = true;
        if (strcmp(argv[i], "--axis") == 0)
            i++;   /* its value may be "-1" */
    }
    int i = 1;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (!looks_like_option(arg))
            break;
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (cli_is_help(arg)) {
            fputs(help, stdout);
            return 0;
        }
        if (strcmp(arg, "--inplace") == 0) {
            args->rules.inplace = 0;
        } else if (strcmp(arg, "--strict-rank") == 0) {
            args->rules.strict_rank = true;
        } else if (strcmp(arg, "--warn-legacy") == 0) {
            args->rules.warn_legacy = true;
        } else if (strcmp(arg, "--json") == 0) {
            args->json = true;
        } else if (strcmp(arg, "--axis") == 0 || strncmp(arg, "--axis=", 7) == 0) {
            const char *value = arg[6] == '=' ? arg + 7 : (i + 1 < argc ? argv[++i] : NULL);
            if (!value) {
                return usage_error(args, "--axis needs a value, e.g. --axis 1");
            }
            if (!parse_axis(value, &args->rules.axis)) {
                snprintf(message, sizeof message,
                         "--axis needs an integer from -%d to %d, not '%.100s'",
                         BCG_MAX_RANK, BCG_MAX_RANK, value);
                return usage_error(args, message);
            }
        } else {
            snprintf(message, sizeof message, "unknown option '%.100s'", arg);
            return usage_error(args, message);
        }
    }
    args->first_shape = i;
    return -1;
}

static void print_json_result(const broadcast_result *out)
{
    fputs("{\"shape\": [", stdout);
    for (int d = 0; d < out->result.rank; d++)
        printf("%s%lld", d ? ", " : "", (long long)out->result.dims[d]);
    putchar(']');
    if (out->warning[0]) {
        fputs(", \"warnings\": [", stdout);
        cli_json_string(stdout, out->warning);
        putchar(']');
    }
    fputs("}\n", stdout);
}

int cli_shape(int argc, char **argv)
{
    shape_args args;
    int status = parse_options(argc, argv, &args);
    if (status >= 0)
        return status;

    char message[sizeof ((bcg_error *)0)->message + 32];
    int count = argc - args.first_shape;
    if (count == 0)
        return usage_error(&args, "no shapes given");
    if (count > BCG_MAX_OPERANDS) {
        snprintf(message, sizeof message, "%d shapes: at most %d (BCG_MAX_OPERANDS)", count,
                 BCG_MAX_OPERANDS);
        return usage_error(&args, message);
    }
    shape shapes[BCG_MAX_OPERANDS];
    bcg_error err;
    for (int i = 0; i < count; i++) {
        const char *text = argv[args.first_shape + i];
        bool after_dash_dash = args.first_shape > 1 &&
                               strcmp(argv[args.first_shape - 1], "--") == 0;
        if (i > 0 && !after_dash_dash && cli_is_help(text)) {
            fputs(help, stdout);
            return 0;
        }
        if (i > 0 && !after_dash_dash && looks_like_option(text)) {
            snprintf(message, sizeof message,
                     "'%.100s' after the shapes: options go before the shapes", text);
            return usage_error(&args, message);
        }
        error_clear(&err);
        if (shape_parse(text, strlen(text), &shapes[i], &err) != BCG_OK) {
            snprintf(message, sizeof message, "operand %d: %s", i, err.message);
            return report(&args, cli_exit_status(err.status), message);
        }
    }

    broadcast_result out;
    error_clear(&err);
    if (shape_broadcast(count, shapes, NULL, &args.rules, 0, &out, &err) != BCG_OK)
        return report(&args, cli_exit_status(err.status), err.message);
    if (out.warning[0])
        fprintf(stderr, "bcgen shape: warning: %s\n", out.warning);
    if (args.json) {
        print_json_result(&out);
    } else {
        char text[BCG_MAX_RANK * 22 + 8];
        shape_format(&out.result, text, sizeof text);
        puts(text);
    }
    return 0;
}
