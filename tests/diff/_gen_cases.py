"""_gen_cases.py - random bcgen cases and the NumPy oracle that judges them.

A case is a set of named operands (dtype, logical shape, optional strides in
elements, the logical values), an expression tree over them, and optionally
an operand to compute in place.  `make_case(seed, index)` builds one from a
seeded generator; `oracle(case)` evaluates the same tree with NumPy 1.24 and
NEP 50 weak promotion for literals, following docs/semantics.md wherever
bcgen deliberately differs from NumPy (float16, negative integer powers,
float->int casts).  The oracle also carries, per element, an absolute error
bound for values that went through a transcendental function (exp log sin
cos tanh, float pow), because NumPy's and the C library's versions differ
by a few ulp and later arithmetic moves that difference around (see
propagate(): the bound is never NaN, infinities are handled explicitly, and
an element without a bound gets a class check, not a free pass).  The
generator draws a case again when its float result could only be checked
loosely, and puts about 3% of cases on long innermost runs (>= 4096
elements, with and without remainders, strided).  Everything here is
standard library and NumPy only; nothing comes from bcgen's C code.
Importing this module switches NumPy to weak promotion for the process.
Run as a program it checks itself (kernel_numpy.py --self-check).
"""
import random
import threading
import warnings

import math

import numpy as np

np._set_promotion_state("weak")

DTYPES = ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "f16"]
NP_DTYPE = {
    "bool": np.dtype(np.bool_), "i8": np.dtype(np.int8), "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32), "i64": np.dtype(np.int64), "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16), "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
    "f32": np.dtype(np.float32), "f64": np.dtype(np.float64), "f16": np.dtype(np.float16),
}
NAME_OF = {v: k for k, v in NP_DTYPE.items()}

# Operators: name -> (text, precedence).  Higher binds tighter; every binary
# operator is left associative except ** (right).
BINARY = {
    "or": ("||", 1), "and": ("&&", 2),
    "eq": ("==", 3), "ne": ("!=", 3), "lt": ("<", 3), "le": ("<=", 3),
    "gt": (">", 3), "ge": (">=", 3),
    "bitor": ("|", 4), "bitxor": ("^", 5), "bitand": ("&", 6),
    "shl": ("<<", 7), "shr": (">>", 7),
    "add": ("+", 8), "sub": ("-", 8),
    "mul": ("*", 9), "div": ("/", 9), "floordiv": ("//", 9), "mod": ("%", 9),
    "pow": ("**", 10),
}
UNARY = {"neg": "-", "pos": "+", "bitnot": "~", "not": "!"}
FUNCS = {  # name -> arity
    "abs": 1, "sqrt": 1, "exp": 1, "log": 1, "sin": 1, "cos": 1, "tanh": 1,
    "floor": 1, "ceil": 1, "log1p": 1, "minimum": 2, "maximum": 2, "pow": 2, "where": 3,
    "clip": 3, "expm1": 1, "log2": 1, "log10": 1, "exp2": 1, "cbrt": 1, "tan": 1, "arcsin": 1,
    "arccos": 1, "arctan": 1, "sinh": 1, "cosh": 1, "arcsinh": 1, "arccosh": 1, "arctanh": 1,
    "erf": 1, "erfc": 1, "trunc": 1, "rint": 1, "arctan2": 2, "hypot": 2, "copysign": 2,
    "nextafter": 2, "fmod": 2, "fmin": 2, "fmax": 2, "isnan": 1, "isinf": 1, "isfinite": 1,
    "signbit": 1, "sign": 1, "square": 1, "reciprocal": 1, "round": 1, "fix": 1, "deg2rad": 1,
    "rad2deg": 1, "expit": 1, "logaddexp": 2, "logaddexp2": 2, "logical_and": 2, "logical_or": 2,
    "logical_not": 1, "logical_xor": 2, "add_sat": 2, "sub_sat": 2, "mul_q7": 2, "mul_q15": 2,
    "mul_q31": 2,
}
# bcgen's saturating functions (docs/semantics.md): no NumPy ufunc; exact
# in Python ints, then clipped.  The fixed-point products: type and
# fraction bits
FIXED_POINT = {"mul_q7": ("i8", 7), "mul_q15": ("i16", 15), "mul_q31": ("i32", 31)}
# NumPy's ufuncs that bcgen computes exactly as NumPy does, on the argument
# as it is (sign of bool is a TypeError in both; square and reciprocal of
# bool give int8 in both; NumPy 1.24's integer reciprocal(0) is what
# bcgen gives, see docs/semantics.md)
SAME_UFUNCS = {"sign", "square", "reciprocal", "logical_and", "logical_or", "logical_not",
               "logical_xor"}
# exact float functions of dtype_float_for(x): NumPy's float16 results read as f32
FLOAT_EXACT = {"deg2rad", "rad2deg", "fix"}
# bool tests of the argument taken as float_for(x)
FLOAT_TESTS = {"isnan", "isinf", "isfinite", "signbit"}
# float functions of two arguments: both converted to the float type of
# their promotion; arctan2 and hypot within the C library's error, the
# others exact
FLOAT2 = {"arctan2", "hypot", "copysign", "nextafter", "fmod", "fmin", "fmax", "logaddexp",
          "logaddexp2"}
# measured in ulps of max(|result|, 1) (docs/semantics.md): the result of
# logaddexp is near 0 only by cancellation
SCALED_BOUND = {"logaddexp", "logaddexp2"}
TRANSCENDENTAL = {"exp", "log", "sin", "cos", "tanh", "log1p", "expm1", "log2", "log10", "exp2",
                  "cbrt", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh",
                  "arccosh", "arctanh", "erf", "erfc", "arctan2", "hypot", "copysign",
                  "nextafter", "fmod", "fmin", "fmax", "expit", "logaddexp", "logaddexp2"}
# C99's, not NumPy core's: the oracle takes Python's (the C library's in double)
PY_FUNCS = {"erf": np.frompyfunc(math.erf, 1, 1), "erfc": np.frompyfunc(math.erfc, 1, 1)}


def expit64(x):
    """SciPy's expit in float64 (not in NumPy's core), without overflow."""
    e = np.exp(-np.abs(x))
    return np.where(x < 0, e / (1 + e), 1 / (1 + e))
ALL_OPS = sorted(set(BINARY) | set(UNARY) | {"f_" + f for f in FUNCS} | {"cast"})

UFUNC = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder,
    "shl": np.left_shift, "shr": np.right_shift,
    "bitand": np.bitwise_and, "bitor": np.bitwise_or, "bitxor": np.bitwise_xor,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
    "and": np.logical_and, "or": np.logical_or,
}


# warnings.catch_warnings() changes the process-wide filters: threads that
# generate cases or run the oracle at once (kernel_numpy.py) take turns
WARNINGS_LOCK = threading.RLock()


class OracleError(Exception):
    """NumPy rejects the expression: bcgen must exit 1."""


# ---- expression trees ------------------------------------------------------
# A node is a dict: {"op": "operand", "name": "a"}, {"op": "lit", "value": 3,
# "text": "3"}, {"op": "add", "args": [x, y]}, {"op": "neg", "args": [x]},
# {"op": "f_sqrt", "args": [x]}, {"op": "cast", "to": "i8", "args": [x]}.

def is_literal(node):
    return node["op"] == "lit"


def fmt(node, minimal=False):
    """Expression text.  MINIMAL drops the parentheses that precedence makes
    redundant (so the parser's precedence is tested too); otherwise every
    operation is parenthesised."""
    text, _ = _fmt(node, minimal)
    if text.startswith("-"):      # must not look like a command-line option
        text = "(" + text + ")"
    return text


def _fmt(node, minimal):
    # returns (text, precedence of the text's outermost operator; 100 = atom)
    op = node["op"]
    if op == "operand":
        return node["name"], 100
    if op == "lit":
        if node["text"].startswith("-"):
            return "(" + node["text"] + ")", 100
        return node["text"], 100
    if op in UNARY:
        inner, prec = _fmt(node["args"][0], minimal)
        if prec < 100:
            inner = "(" + inner + ")"
        text = UNARY[op] + inner
        return ("(" + text + ")", 100) if not minimal else (text, 11)
    if op == "cast":
        return node["to"] + "(" + _fmt(node["args"][0], minimal)[0] + ")", 100
    if op.startswith("f_"):
        return op[2:] + "(" + ", ".join(_fmt(a, minimal)[0] for a in node["args"]) + ")", 100
    sym, prec = BINARY[op]
    left, lp = _fmt(node["args"][0], minimal)
    right, rp = _fmt(node["args"][1], minimal)
    if not minimal:
        return "(" + left + " " + sym + " " + right + ")", 100
    if op == "pow":
        # unary operators next to ** are a classic ambiguity: always bracket
        if lp <= prec or lp == 11:
            left = "(" + left + ")"
        if rp < prec or rp == 11:
            right = "(" + right + ")"
    else:
        if lp < prec or (prec == 3 and lp == 3):    # no chained comparisons
            left = "(" + left + ")"
        if rp <= prec:
            right = "(" + right + ")"
    return left + " " + sym + " " + right, prec


def parse(text, names):
    """Parses TEXT back into a tree (self-check of fmt: precedence,
    associativity, literals).  A Pratt parser for the documented grammar."""
    import re
    tokens = re.findall(r"\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+|[A-Za-z_]\w*|\*\*|//|<<|>>|<=|>=|==|!=|&&|\|\||\S", text)
    pos = [0]
    by_sym = {v[0]: (k, v[1]) for k, v in BINARY.items()}

    def peek():
        return tokens[pos[0]] if pos[0] < len(tokens) else None

    def take(expect=None):
        tok = peek()
        if tok is None or (expect is not None and tok != expect):
            raise ValueError("expected %r at %r in %r" % (expect, tok, text))
        pos[0] += 1
        return tok

    def primary():
        tok = take()
        if tok == "(":
            e = expr(0)
            take(")")
            return e
        if tok in ("-", "+", "~", "!"):
            op = {v: k for k, v in UNARY.items()}[tok]
            arg = primary()
            if op == "neg" and is_literal(arg) and not arg.get("paren"):
                v = -arg["value"]
                return {"op": "lit", "value": v, "text": "-" + arg["text"]}
            return {"op": op, "args": [arg]}
        if tok in ("True", "False") and tok not in names:
            return {"op": "lit", "value": tok == "True", "text": tok}
        if tok[0].isdigit():
            v = float(tok) if any(c in tok for c in ".eE") else int(tok)
            return {"op": "lit", "value": v, "text": tok}
        if peek() == "(":
            take("(")
            args = [expr(0)]
            while peek() == ",":
                take(",")
                args.append(expr(0))
            take(")")
            if tok in DTYPES:
                return {"op": "cast", "to": tok, "args": args}
            if tok not in FUNCS or FUNCS[tok] != len(args):
                raise ValueError("bad call %s in %r" % (tok, text))
            return {"op": "f_" + tok, "args": args}
        if tok not in names:
            raise ValueError("unknown name %s in %r" % (tok, text))
        return {"op": "operand", "name": tok}

    def expr(min_prec):
        left = primary()
        while peek() in by_sym and by_sym[peek()][1] >= min_prec:
            op, prec = by_sym[take()]
            right = expr(prec if op == "pow" else prec + 1)
            left = {"op": op, "args": [left, right]}
        return left

    tree = expr(0)
    if pos[0] != len(tokens):
        raise ValueError("trailing tokens in %r" % text)
    return tree


def same_tree(x, y):
    if x["op"] != y["op"]:
        return False
    if x["op"] == "operand":
        return x["name"] == y["name"]
    if x["op"] == "lit":
        return x["value"] == y["value"] and type(x["value"]) is type(y["value"])
    if x["op"] == "cast" and x["to"] != y["to"]:
        return False
    return len(x["args"]) == len(y["args"]) and all(same_tree(a, b) for a, b in zip(x["args"], y["args"]))


# ---- the oracle ---------------------------------------------------------------

def float_for(dt):
    """bcgen's dtype_float_for for functions, NumPy's: floats keep their
    type; bool and 8-bit ints give f16, 16-bit ints f32, wider ints f64."""
    if dt.kind == "f":
        return dt
    if dt.itemsize == 1:
        return NP_DTYPE["f16"]
    if dt.itemsize == 2:
        return NP_DTYPE["f32"]
    return NP_DTYPE["f64"]


def as_dtype(v, dt):
    """Converts an array or a (weak) Python literal to dtype DT."""
    dt = np.dtype(dt)
    if isinstance(v, np.ndarray):
        return v.astype(dt)
    return np.asarray(v).astype(dt) if dt.kind != "b" else np.asarray(bool(v))


def empty_like_value(v):
    return np.empty((0,), v.dtype) if isinstance(v, np.ndarray) else v


def promote(*values):
    """NEP 50 promotion of arrays and weak literals (where, clip): the arrays'
    result_type, then each literal must fit it (float literals first, so that
    an integer literal next to a float literal is a float).  NumPy 1.24's
    where and clip do not promote this way, so it is done pair by pair with
    np.minimum, whose loops cover every dtype.  Raises OracleError where
    NumPy raises (a literal that does not fit)."""
    arrays = [v for v in values if isinstance(v, np.ndarray)]
    literals = sorted((v for v in values if not isinstance(v, np.ndarray)),
                      key=lambda v: not isinstance(v, float))
    dt = np.result_type(*arrays)
    try:
        with WARNINGS_LOCK, warnings.catch_warnings():
            warnings.simplefilter("error")
            for lit in literals:
                dt = np.minimum(np.empty((0,), dt), lit).dtype
    except (TypeError, OverflowError, DeprecationWarning) as e:
        raise OracleError(str(e))
    return dt


def float_cast_to_int(x, dt):
    """bcgen's documented float->int cast: truncate, NaN -> 0, saturate."""
    info = np.iinfo(dt)
    t = np.trunc(x.astype(np.float64))
    lo, hi_excl = float(info.min), float(info.max) + 1.0   # both exact powers of two
    with np.errstate(invalid="ignore"):
        inside = (t >= lo) & (t < hi_excl)
    safe = np.where(inside, t, 0.0)
    out = safe.astype(dt)
    out = np.where(t >= hi_excl, np.array(info.max, dt), out)
    out = np.where(t < lo, np.array(info.min, dt), out)
    return out.astype(dt)


def int_pow(x, y, dt):
    """Integer power with wrapping; bcgen's documented result for negative
    exponents (NumPy raises): 1 for base 1, +-1 for base -1 by parity, else 0."""
    base = as_dtype(x, dt)
    expo = as_dtype(y, dt)
    negative = expo < 0
    r = np.power(base, np.where(negative, np.zeros_like(expo), expo))
    if dt.kind == "i":
        even = (expo % 2) == 0
        special = np.where(base == 1, 1, np.where(base == -1, np.where(even, 1, -1), 0)).astype(dt)
        r = np.where(negative, special, r)
    return np.asarray(r).astype(dt)


def eps_of(dt):
    return float(np.finfo(dt).eps)


def tiny_of(dt):
    return float(np.finfo(dt).tiny) * float(np.finfo(dt).eps)   # smallest subnormal


def eval_node(node, env, track=True):
    """Returns (value, error): value is an ndarray (or a Python literal);
    error is None (exact: bcgen must agree to 1 ulp) or an array of absolute
    error bounds in f64 (the value went through a transcendental).  TRACK
    false: types only, no error bounds."""
    op = node["op"]
    if op == "operand":
        return env[node["name"]], None
    if op == "lit":
        return node["value"], None
    args = [eval_node(a, env, track) for a in node["args"]]
    vals = [a[0] for a in args]
    errs = [a[1] for a in args]
    with WARNINGS_LOCK, np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            value = apply_op(node, vals)
        except (TypeError, OverflowError, DeprecationWarning) as e:
            raise OracleError("%s: %s" % (op, e))
        return value, (propagate(node, vals, errs, value) if track else None)


def saturating(name, vals):
    """add_sat, sub_sat: the promotion (an integer type), the exact result
    clipped to it; mul_qN: both arguments of its type (literals fit it),
    floor(x * y / 2**N) clipped (docs/semantics.md)."""
    if name in FIXED_POINT:
        dt = NP_DTYPE[FIXED_POINT[name][0]]
        arrays = [v for v in vals if isinstance(v, np.ndarray)]
        if arrays and np.result_type(*arrays) != dt:
            raise OracleError("%s takes %s arguments" % (name, dt))
    else:
        dt = promote(*vals)
    if dt.kind not in "iu" or any(isinstance(v, float) for v in vals):
        raise OracleError("%s needs integer arguments" % name)
    info = np.iinfo(dt)
    for v in vals:
        if not isinstance(v, np.ndarray) and not info.min <= int(v) <= info.max:
            raise OracleError("literal %r does not fit %s" % (v, dt))
    x, y = (np.asarray(as_dtype(v, dt)).astype(object) for v in vals)
    if name in FIXED_POINT:
        exact = x * y // (1 << FIXED_POINT[name][1])
    else:
        exact = x + y if name == "add_sat" else x - y
    return np.asarray(np.clip(exact, int(info.min), int(info.max))).astype(dt)


def apply_op(node, vals):
    op = node["op"]
    if op == "pos":
        return vals[0]
    if op == "neg":
        return np.negative(vals[0])
    if op == "bitnot":
        return np.invert(vals[0])
    if op == "not":
        return np.logical_not(vals[0])
    if op == "pow" or op == "f_pow":
        dt = np.power(*[empty_like_value(v) for v in vals]).dtype   # typing and errors
        if dt.kind == "f":
            # both sides in the result type first (a literal 0.1 next to f32
            # is f32(0.1)), then C pow in double, rounded once
            x, y = (as_dtype(as_dtype(v, dt), np.float64) for v in vals)
            return np.power(x, y).astype(dt)
        return int_pow(vals[0], vals[1], dt)
    if op in UFUNC:
        return UFUNC[op](vals[0], vals[1])
    if op == "cast":
        dt = NP_DTYPE[node["to"]]
        x = vals[0]
        if dt.kind == "b":
            return x != 0
        if x.dtype.kind == "f" and dt.kind in "iu":
            return float_cast_to_int(x, dt)
        return x.astype(dt)
    name = op[2:]
    if name in ("add_sat", "sub_sat") or name in FIXED_POINT:
        return saturating(name, vals)
    if name == "abs":
        return np.absolute(vals[0])
    if name in SAME_UFUNCS:
        return getattr(np, name)(*vals)
    if name == "round":
        # np.round with 0 decimals: integers as they are, floats rint; bool
        # gives float16, as NumPy
        x = vals[0]
        return np.rint(x.astype(np.float16)) if x.dtype.kind == "b" else np.round(x)
    if name in FLOAT_EXACT:
        x = vals[0]
        return getattr(np, name)(x.astype(float_for(x.dtype)))
    if name in FLOAT_TESTS:
        x = vals[0]
        return getattr(np, name)(as_dtype(x, float_for(np.asarray(x).dtype)))
    if name in FLOAT2:
        dt = float_for(promote(*vals))
        x, y = (as_dtype(v, dt) for v in vals)
        if name in ("arctan2", "hypot", "logaddexp", "logaddexp2"):
            return getattr(np, name)(x.astype(np.float64), y.astype(np.float64)).astype(dt)
        return getattr(np, name)(x, y)
    if name in ("sqrt", "floor", "ceil", "trunc", "rint"):
        x = vals[0]
        return getattr(np, name)(x.astype(float_for(x.dtype)))
    if name in TRANSCENDENTAL:
        # computed in double and rounded once: within 0.5 ulp of the true
        # f32 value, so only the C library's error remains
        x = vals[0]
        dt = float_for(x.dtype)
        x64 = x.astype(dt).astype(np.float64)
        if name in PY_FUNCS:
            return np.asarray(PY_FUNCS[name](x64), dtype=np.float64).astype(dt)
        if name == "expit":
            return expit64(x64).astype(dt)
        return getattr(np, name)(x64).astype(dt)
    if name == "minimum":
        return np.minimum(vals[0], vals[1])
    if name == "maximum":
        return np.maximum(vals[0], vals[1])
    if name == "where":
        dt = promote(vals[1], vals[2])
        cond = as_dtype(vals[0], np.bool_)
        return np.where(cond, as_dtype(vals[1], dt), as_dtype(vals[2], dt))
    if name == "clip":
        # minimum(maximum(x, lo), hi), promoted pair by pair as written
        if isinstance(vals[0], np.ndarray) or isinstance(vals[1], np.ndarray):
            dt = promote(np.empty((0,), promote(vals[0], vals[1])), vals[2])
        else:
            dt = promote(vals[0], vals[1], vals[2])
        x, lo, hi = (as_dtype(v, dt) for v in vals)
        return np.minimum(np.maximum(x, lo), hi)
    raise AssertionError("unknown op " + op)


def rounding(value):
    """One rounding of VALUE in its own float type, as an absolute bound
    (inf where VALUE is not finite; propagate() replaces those)."""
    dt = value.dtype
    return eps_of(dt) * np.abs(value.astype(np.float64)) + tiny_of(dt)


UNBOUNDED = "unbounded"   # an inexact value went where no bound is known

# Error bounds.  Where a value went through a transcendental, the oracle
# carries per element an absolute bound B (float64, never NaN) on how far
# bcgen's result may be from NumPy's:
#   B == 0         exact: finite values within 1 ulp, NaN and infinities equal;
#   0 < B < inf    finite value, bcgen's within B (+ 1 ulp);
#   B == inf       unbounded: compare() checks the class only (class_mismatch).
# A non-finite value always has B == 0 (its class is certain: it comes from
# an exact infinity or NaN, or every input was exact) or B == inf.
# Intervals and infinities are handled explicitly, so that no bound comes
# from inf - inf or 0 * inf.


def _settled(x, e, maxf, nonzero):
    """Elements whose class cannot change within their bound: exact ones,
    and finite ones that are certainly below MAXF (and, with NONZERO,
    certainly not zero)."""
    ax = np.abs(x)
    away_from_zero = (ax - e > 0) if nonzero else True
    return (e == 0) | (np.isfinite(x) & away_from_zero & (ax + e < maxf))


def _finish(value, bound, determined=None):
    """The bound of VALUE: NaN becomes inf; for non-finite elements 0 where
    DETERMINED (their class is certain) and inf elsewhere."""
    b = np.array(np.broadcast_to(bound, value.shape), dtype=np.float64)
    b[np.isnan(b)] = np.inf
    finite = np.isfinite(value.astype(np.float64))
    if determined is None:
        determined = b == 0
    det = np.broadcast_to(determined, value.shape)
    return np.where(finite, b, np.where(det, 0.0, np.inf))


def _interval(v, e, dt):
    """V converted to DT and then float64, with the bounds of its interval:
    [v, v] when exact (also for infinities and NaN), [-inf, inf] when
    unbounded."""
    x = as_dtype(as_dtype(v, dt), np.float64)
    lo, hi = x - e, x + e
    lo = np.where(e == 0, x, np.where(np.isinf(e), -np.inf, lo))
    hi = np.where(e == 0, x, np.where(np.isinf(e), np.inf, hi))
    return x, lo, hi


def _select_bound(value, lo, hi):
    """The bound of a selection (minimum, maximum, clip) whose true result
    lies in [LO, HI]."""
    v = value.astype(np.float64)
    b = np.maximum(v - lo, hi - v)
    determined = (lo == hi) | (np.isnan(lo) & np.isnan(hi))
    return _finish(value, b, determined)


def exact_point(name, vals, dt):
    """Where function NAME's result is exact by C99 Annex F, which glibc
    and NumPy both follow: sin, tanh of +-0 is +-0, cos and exp of +-0 is 1,
    log(1) is +0, pow(x, +-0) and pow(1, y) are 1, pow(+-0, y > 0) is +-0,
    and every infinite or NaN argument has its prescribed result.  Also
    exact in any implementation: exp far below its underflow threshold is
    +0 and tanh far beyond its saturation is +-1 (the true values are many
    orders of magnitude closer than half an ulp)."""
    x = as_dtype(as_dtype(vals[0], dt), np.float64)
    if name == "exp":
        return (x == 0) | ~np.isfinite(x) | (x < (-110.0 if dt.itemsize == 4 else -760.0))
    if name == "tanh":
        return (x == 0) | ~np.isfinite(x) | (np.abs(x) >= 40.0)
    if name in ("sin", "cos"):
        return (x == 0) | ~np.isfinite(x)
    if name == "log":
        return (x == 1) | ~np.isfinite(x)
    if name == "log1p":
        return (x == 0) | (x == -1) | ~np.isfinite(x)
    if name in ("log2", "log10"):
        return (x == 1) | (x <= 0) | ~np.isfinite(x)
    if name in ("exp2", "cosh", "erfc"):
        return (x == 0) | ~np.isfinite(x)
    if name == "arccos":
        return (x == 1) | (np.abs(x) > 1) | ~np.isfinite(x)
    if name == "arccosh":
        return (x <= 1) | ~np.isfinite(x)
    if name in ("arcsin", "arctanh"):
        return (x == 0) | (np.abs(x) >= 1) | ~np.isfinite(x)
    if name == "expit":   # 0.5 at +-0; 1 far out (1 - e**-40 rounds to 1 in f64)
        return (x == 0) | ~np.isfinite(x) | (x >= 40.0)
    if name in ("logaddexp", "logaddexp2"):  # an infinity or NaN decides the result
        y = as_dtype(as_dtype(vals[1], dt), np.float64)
        return ~np.isfinite(x) | ~np.isfinite(y)
    if name in ("expm1", "cbrt", "tan", "arctan", "sinh", "arcsinh", "erf"):
        return (x == 0) | ~np.isfinite(x)
    if name in ("copysign", "nextafter", "fmod", "fmin", "fmax"):
        return np.ones(np.broadcast(x, vals[1]).shape, dtype=bool)  # exact everywhere
    if name in ("arctan2", "hypot"):
        y = as_dtype(as_dtype(vals[1], dt), np.float64)
        return (x == 0) | (y == 0) | ~np.isfinite(x) | ~np.isfinite(y)
    y = as_dtype(as_dtype(vals[1], dt), np.float64)
    return (y == 0) | (x == 1) | ((x == 0) & (y > 0)) | ~np.isfinite(x) | ~np.isfinite(y)


def propagate(node, vals, errs, value):
    """The error bound of VALUE, the result of NODE over VALS whose bounds
    are ERRS: None (exact), an array (see above) or UNBOUNDED (the
    generator must not let that happen)."""
    op = node["op"]
    if any(isinstance(e, str) for e in errs):
        return UNBOUNDED
    name = op[2:] if op.startswith("f_") else op
    if name in TRANSCENDENTAL or name == "pow":
        if value.dtype.kind != "f":
            return None
        if any(e is not None for e in errs):
            return UNBOUNDED
        # NumPy's and glibc's functions differ by up to ~3 ulp (measured):
        # allow 4 ulp, relative to the result; infinities and NaN come out
        # the same from exact inputs, and so do the results C99 Annex F
        # makes exact (sin(0) == 0, exp(0) == 1, pow(x, 0) == 1, ...)
        bound = 4 * rounding(value)
        if name in SCALED_BOUND:
            bound = 4 * eps_of(value.dtype) * np.maximum(np.abs(value.astype(np.float64)), 1.0)
        return _finish(value, np.where(exact_point(name, vals, value.dtype), 0.0, bound), True)
    if all(e is None for e in errs):
        return None
    if value.dtype.kind != "f":
        return UNBOUNDED
    dt = value.dtype
    maxf = float(np.finfo(dt).max)
    e = [np.zeros(()) if x is None else x for x in errs]
    if name in ("pos", "neg", "abs"):
        return _finish(value, e[0])
    if name == "where":
        cond = as_dtype(vals[0], np.bool_)
        return _finish(value, np.where(cond, e[1], e[2]))
    if name in ("minimum", "maximum", "clip"):
        ivs = [_interval(v, x, dt) for v, x in zip(vals, e)]
        if name == "clip":
            lo = np.minimum(np.maximum(ivs[0][1], ivs[1][1]), ivs[2][1])
            hi = np.minimum(np.maximum(ivs[0][2], ivs[1][2]), ivs[2][2])
        else:
            pick = np.minimum if name == "minimum" else np.maximum
            lo, hi = pick(ivs[0][1], ivs[1][1]), pick(ivs[0][2], ivs[1][2])
        return _select_bound(value, lo, hi)
    if name == "cast":
        x = as_dtype(vals[0], np.float64)
        if dt.itemsize >= vals[0].dtype.itemsize:
            return _finish(value, e[0])
        # f64 -> f32: one more rounding (none where the input is exact); an
        # infinity is certain only when the whole interval is past the
        # rounding threshold 2**128 - 2**103
        certain = (e[0] == 0) | (np.abs(x) - e[0] >= 2.0**128 - 2.0**103)
        return _finish(value, np.where(e[0] == 0, 0.0, e[0] + rounding(value)), certain)
    if name not in ("add", "sub", "mul", "div"):
        return UNBOUNDED
    xs = [as_dtype(as_dtype(v, dt), np.float64) for v in vals]
    a = [np.abs(x) for x in xs]
    # a non-finite result is certain when an operand is an exact NaN, or when
    # no operand can change class (for * and /: nor become zero) and it does
    # not come from a finite overflow (unless every operand is exact)
    nonzero = name in ("mul", "div")
    settled = _settled(xs[0], e[0], maxf, nonzero) & _settled(xs[1], e[1], maxf, nonzero)
    special = ~np.isfinite(xs[0]) | ~np.isfinite(xs[1]) | (xs[0] == 0) | (xs[1] == 0)
    exact_nan = (np.isnan(xs[0]) & (e[0] == 0)) | (np.isnan(xs[1]) & (e[1] == 0))
    determined = exact_nan | (settled & (special | ((e[0] == 0) & (e[1] == 0))))
    if name in ("add", "sub"):
        bound = e[0] + e[1] + rounding(value)
    elif name == "mul":
        bound = a[1] * e[0] + a[0] * e[1] + e[0] * e[1] + rounding(value)
    else:
        # |x/y - x'/y'| <= (|x - x'| + |x/y| |y - y'|) / |y'|, |y'| >= |y| - e1
        margin = a[1] - e[1]
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = (e[0] + np.abs(value.astype(np.float64)) * e[1]) / margin
        bound = np.where(margin > 0, bound, np.inf) + rounding(value)
    # where both operands are exact, so is the operation (bcgen's own IEEE
    # operation on the same inputs): 1 ulp, as without any bound
    return _finish(value, np.where((e[0] == 0) & (e[1] == 0), 0.0, bound), determined)


# How an element of a float result is checked (bound_classes, the summary):
#   exact:     no carried bound, or bound 0: within 1 ulp / the same class;
#   tight:     a bound of at most half the value's magnitude, or below the
#              smallest normal f32 (a zero checked to within subnormal noise);
#   loose:     a finite bound larger than that (cancellation);
#   unbounded: no bound, the class check only.
CHECK_CLASSES = ("exact", "tight", "loose", "unbounded")
TIGHT_FLOOR = float(np.finfo(np.float32).tiny)


def bound_classes(expected, bound):
    """Counts of EXPECTED's elements per CHECK_CLASSES entry (a float result
    and the oracle's bound, or None)."""
    n = int(expected.size)
    counts = dict.fromkeys(CHECK_CLASSES, 0)
    if bound is None:
        counts["exact"] = n
        return counts
    b = np.broadcast_to(bound, expected.shape)
    v = np.abs(expected.astype(np.float64))
    exact = b == 0
    unbounded = np.isinf(b)
    with np.errstate(invalid="ignore"):
        tight = ~exact & ~unbounded & ((b <= 0.5 * v) | (b <= TIGHT_FLOOR))
    counts["exact"] = int(exact.sum())
    counts["unbounded"] = int(unbounded.sum())
    counts["tight"] = int(tight.sum())
    counts["loose"] = n - counts["exact"] - counts["unbounded"] - counts["tight"]
    return counts


def read_names(node, out):
    """Adds the operand names NODE reads to the set OUT."""
    if node["op"] == "operand":
        out.add(node["name"])
    for a in node.get("args", []):
        read_names(a, out)
    return out


def broadcast_operands(case):
    """The operands that take part in the broadcast: the ones the expression
    reads, as NumPy evaluating the same expression broadcasts only those,
    and an in-place target, which keeps its shape."""
    names = read_names(case["tree"], set())
    if case.get("inplace"):
        names.add(case["inplace"])
    return [o for o in case["operands"] if o["name"] in names]


def oracle(case):
    """Evaluates CASE's tree with NumPy.  Returns (expected ndarray, error
    bound array or None) or raises OracleError when NumPy rejects it."""
    used = broadcast_operands(case)
    shapes = [tuple(o["shape"]) for o in used]
    try:
        shape = np.broadcast_shapes(*shapes) if shapes else ()
    except ValueError as e:
        raise OracleError("shapes do not broadcast: %s" % e)
    # evaluate on arrays of the full (at least 1-d) shape so NumPy never
    # takes its scalar-math paths, then drop the extra axis again
    work = shape if shape else (1,)
    env = {o["name"]: np.broadcast_to(o["data"], shape).reshape(work) for o in used}
    value, err = eval_node(case["tree"], env)
    if isinstance(err, str):
        raise AssertionError("the generator fed a transcendental's result to an "
                             "operation without an error bound: " + case["expr"])
    if not isinstance(value, np.ndarray):
        # only literals: bool, i64 or f64, folded with Python arithmetic
        if isinstance(value, int) and not (-2**63 <= value < 2**63):
            raise OracleError("literal does not fit i64")
        value = np.full(work, value, np.bool_ if isinstance(value, (bool, np.bool_)) else
                        np.int64 if isinstance(value, int) else np.float64)
    value = np.broadcast_to(value, work).reshape(shape).copy()
    if err is not None:
        err = np.broadcast_to(err, work).reshape(shape).copy()
    return value, err


def result_dtype(tree, operand_dtypes):
    """The dtype of TREE over operands of the given dtypes (by evaluating on
    empty arrays), or raises OracleError."""
    env = {name: np.empty((0,), dt) for name, dt in operand_dtypes.items()}
    value, _ = eval_node(tree, env, track=False)
    if isinstance(value, np.ndarray):
        return value.dtype
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    return np.dtype(np.int64 if isinstance(value, int) else np.float64)


# ---- comparing a result with the oracle ------------------------------------------

def ulp_key(x):
    """Maps floats to integers that are ordered like the floats, so that the
    difference counts the representable values between them (+0 == -0)."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[x.dtype.itemsize]
    i = x.view(bits).astype(np.int64)
    return np.where(i < 0, -(i & np.int64(np.iinfo(bits).max)), i)


def compare(got, expected, err):
    """Returns None when GOT matches, else a short description of the first
    mismatches.  Integers and bools: identical.  Floats, by the oracle's
    bound ERR (None: 0 everywhere; see propagate()): where it is 0, NaN
    exactly where NumPy has NaN, the same infinities, finite values within
    1 ulp; where it is finite, finite values within ERR + 1 ulp (or the
    infinity of the same sign when the interval reaches past the largest
    finite value); where it is inf, the class check class_mismatch()."""
    if got.dtype != expected.dtype:
        return "dtype %s, expected %s" % (got.dtype, expected.dtype)
    if got.shape != expected.shape:
        return "shape %s, expected %s" % (got.shape, expected.shape)
    if expected.dtype.kind != "f":
        bad = got != expected
    else:
        g, e = got.astype(np.float64), expected.astype(np.float64)
        b = np.zeros(expected.shape) if err is None else np.broadcast_to(err, expected.shape)
        if np.isnan(b).any() or (b < 0).any():
            return "oracle error: NaN or negative error bound"
        unbounded = np.isinf(b)
        gnan, enan = np.isnan(g), np.isnan(e)
        finite = np.isfinite(e)
        with np.errstate(all="ignore"):
            bad = gnan != enan
            bad |= ~finite & ~enan & (g != e)
            ulps = ulp_key(got) - ulp_key(expected)
            exact_ok = (ulps >= -1) & (ulps <= 1)    # -2**63 is a wrapped huge difference
            spacing = np.abs(np.spacing(expected)).astype(np.float64)
            exact_ok |= (b > 0) & (np.abs(g - e) <= b + spacing)   # False for got inf or NaN
            # a finite value whose interval passes the largest finite value
            # may round to the infinity of its sign
            overflow = (b > 0) & np.isinf(g) & (np.sign(g) == np.sign(e)) & \
                (np.abs(e) + b >= float(np.finfo(expected.dtype).max))
            exact_ok |= overflow
            bad |= finite & ~exact_ok
        bad = np.where(unbounded, class_mismatch(g, e), bad)
    if not bad.any():
        return None
    idx = np.argwhere(bad)[:3]
    parts = []
    for i in idx:
        i = tuple(int(k) for k in i)
        extra = ""
        if err is not None and expected.dtype.kind == "f":
            extra = " (bound %.3g)" % np.broadcast_to(err, expected.shape)[i]
        parts.append("at %s got %r expected %r%s" % (list(i), got[i].item(), expected[i].item(), extra))
    return "%d of %d elements differ: %s" % (int(bad.sum()), bad.size, "; ".join(parts))


def class_mismatch(g, e):
    """The check for elements without a bound (bound inf): NaN, +inf,
    -inf and finite must agree, and finite non-zero values must have the
    same sign.  The generator regenerates cases with such elements, so this
    only applies where regenerating did not help."""
    def kind(x):
        return np.where(np.isnan(x), 0, np.where(x == np.inf, 1, np.where(x == -np.inf, 2, 3)))
    with np.errstate(invalid="ignore"):
        signs = (g == 0) | (e == 0) | (np.sign(g) == np.sign(e))
    return (kind(g) != kind(e)) | ((kind(e) == 3) & ~signs)


# ---- the generator -------------------------------------------------------------

def random_shapes(rng, count):
    """COUNT broadcast-compatible shapes; mostly small, sometimes >= 2000
    elements, sizes include 0 and 1."""
    big = rng.random() < 0.1
    rank = rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5, 6]) if not big else rng.randint(1, 4)
    dims = []
    for _ in range(rank):
        r = rng.random()
        dims.append(0 if r < 0.03 else 1 if r < 0.22 else rng.randint(2, 5))
    if big:
        dims = [rng.randint(2, 6) for _ in range(rank)]
        dims[-1 if rng.random() < 0.5 else 0] = 1
        while int(np.prod(dims)) < 2000:
            k = rng.randrange(rank)
            dims[k] = dims[k] * 2 + rng.randint(0, 3)
    shapes = []
    for i in range(count):
        r = rank if (i == 0 or rng.random() < 0.5) else rng.randint(0, rank)
        s = []
        for d in dims[rank - r:]:
            s.append(1 if rng.random() < 0.3 else d)
        shapes.append(s)
    return shapes


def random_data(rng, nprng, dt, shape):
    kind = dt.kind
    n = int(np.prod(shape)) if shape else 1
    profile = rng.choice(["small", "small", "medium", "full", "edge"])
    if kind == "b":
        return (nprng.random(shape) < 0.5)
    if kind in "iu":
        info = np.iinfo(dt)
        if profile == "small":
            lo, hi = max(info.min, -9), 9
            v = nprng.integers(lo, hi + 1, size=shape)
        elif profile == "medium":
            lo, hi = max(info.min, -300), min(info.max, 300)
            v = nprng.integers(lo, hi + 1, size=shape)
        elif profile == "full":
            v = nprng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
        else:
            pool = np.array(sorted({info.min, info.min + 1, info.max, info.max - 1, 0, 1, 2,
                                    max(info.min, -1), max(info.min, -2), 7, info.bits - 1, info.bits}),
                            dtype=object)
            v = np.array(nprng.choice(pool, size=n), dtype=object).reshape(shape)
        return np.asarray(v).astype(dt)
    if profile == "small":
        v = nprng.integers(-16, 17, size=shape) / 4.0
    elif profile == "medium":
        v = nprng.uniform(-10, 10, size=shape)
    elif profile == "full" and dt.itemsize == 2:   # f16's range, subnormals included
        v = nprng.uniform(-1, 1, size=shape) * 10.0 ** nprng.integers(-8, 6, size=shape)
    elif profile == "full":
        v = nprng.uniform(-1, 1, size=shape) * 10.0 ** nprng.integers(-30, 30, size=shape)
    elif dt.itemsize == 2:
        # f16's edges: the largest finite, values that overflow, the
        # smallest normal and subnormal, subnormals, and values whose
        # rounding to f16 is a tie (2049, 1 + 2**-11) or close to one
        pool = np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.nan, np.inf, -np.inf, 65504.0, -65504.0,
                         65519.0, 6.103515625e-05, 5.960464477539063e-08, -1e-06, 3e-05,
                         2049.0, 2051.0, 1.00048828125, -7.25, 2.5, 0.1, 1000.5, 300.0],
                        dtype=np.float64)
        v = nprng.choice(pool, size=n).reshape(shape)
    else:
        pool = np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.nan, np.inf, -np.inf, 1e-40, 3.0e38,
                         -7.25, 2.5, 1e300 if dt.itemsize == 8 else 1e30], dtype=np.float64)
        v = nprng.choice(pool, size=n).reshape(shape)
    return np.asarray(v).astype(dt)


def random_strides(rng, shape, allow_zero):
    """Returns (strides or None, axes with stride 0).  Layouts never overlap
    except along 0-stride axes (whose values the caller makes constant)."""
    rank = len(shape)
    if rank == 0 or rng.random() < 0.45:
        return None, []
    order = list(range(rank))
    style = rng.choice(["contiguous", "permuted", "negative", "gapped", "zero", "mixed"])
    if style in ("permuted", "mixed"):
        rng.shuffle(order)
    zero = []
    if style in ("zero", "mixed") and allow_zero:
        zero = [k for k in range(rank) if shape[k] > 1 and rng.random() < 0.5]
        if not zero and style == "zero":
            zero = [k for k in range(rank) if rng.random() < 0.5]
    strides = [0] * rank
    step = 1
    for k in reversed(order):               # last of ORDER is innermost
        if k in zero:
            continue
        if style in ("gapped", "mixed") and rng.random() < 0.4:
            step *= rng.randint(2, 3)
        strides[k] = step
        step *= max(shape[k], 1)
    if style in ("negative", "mixed"):
        for k in range(rank):
            if rng.random() < 0.5:
                strides[k] = -strides[k]
    return strides, zero


# innermost sizes of the long-run cases: multiples of 64 (no remainder for
# any vector width) and sizes that leave 1 to 63 elements over
LONG_INNER = [4096, 8192, 4097, 4099, 4103, 4111, 4127, 4159, 5000, 6151]


def long_shapes(rng, count):
    """COUNT broadcast-compatible shapes whose broadcast has an innermost
    dimension from LONG_INNER, under outer dimensions of at most 3 elements
    in total (long runs for vectorised loops, little data).  Besides full
    shapes: rank-reduced ones, ones broadcast along the long run, scalars."""
    inner = rng.choice(LONG_INNER)
    dims = rng.choice([[], [], [2], [3], [1, 2], [2, 1], [1], [3, 1]]) + [inner]
    shapes = [list(dims)]
    for _ in range(count - 1):
        r = rng.random()
        if r < 0.4:
            shapes.append(list(dims))
        elif r < 0.6:
            shapes.append([inner])
        elif r < 0.8:
            shapes.append(dims[:-1] + [1])
        elif r < 0.9:
            shapes.append([])
        else:
            shapes.append([1] * len(dims))
    rng.shuffle(shapes)
    return shapes


def long_strides(rng, shape, allow_zero):
    """random_strides for long-run cases: contiguous, the long axis with a
    gap of 2 or 3 elements, reversed, outermost in memory (so its stride is
    the product of the others), or with stride 0 along it or an outer axis."""
    rank = len(shape)
    if rank == 0 or rng.random() < 0.35:
        return None, []
    style = rng.choice(["gapped", "negative", "outer", "zero"])
    order = list(range(rank))               # the last of ORDER is innermost in memory
    if style == "outer":
        order = [rank - 1] + order[:-1]
    zero = []
    if style == "zero" and allow_zero:
        zero = [k for k in range(rank) if shape[k] > 1 and rng.random() < 0.6] or [rank - 1]
    strides = [0] * rank
    step = rng.choice([2, 3]) if style == "gapped" else 1
    for k in reversed(order):
        if k not in zero:
            strides[k] = step
            step *= max(shape[k], 1)
    if style == "negative":
        strides = [-x if k == rank - 1 or rng.random() < 0.5 else x for k, x in enumerate(strides)]
    return strides, zero


class Builder:
    """Builds a random typed tree bottom-up; each candidate node is typed by
    the oracle on empty arrays so the tree is valid unless we want an error."""

    def __init__(self, rng, operand_dtypes):
        self.rng = rng
        self.dtypes = operand_dtypes
        self.names = list(operand_dtypes)

    def typed(self, node):
        try:
            return result_dtype(node, self.dtypes)
        except OracleError:
            return None

    def leaf(self):
        name = self.rng.choice(self.names)
        return {"op": "operand", "name": name}, self.dtypes[name], False

    def literal_for(self, dt, out_of_range=False):
        """A literal that fits next to a value of dtype DT (weak typing)."""
        rng = self.rng
        if not out_of_range and rng.random() < 0.04:   # Python's bools, weak as well
            v = rng.random() < 0.5
            return {"op": "lit", "value": v, "text": str(v)}
        if dt.kind in "iu" and out_of_range:
            # just outside the type; never beyond u64/i64 (that would be a
            # literal no type holds, which bcgen may reject as a parse error)
            info = np.iinfo(dt)
            if dt == np.uint64:
                v = -rng.randint(1, 5)
            elif dt == np.int64:
                v = rng.choice([2**63, 2**64 - 1])
            else:
                v = rng.choice([int(info.max) + rng.randint(1, 5), int(info.min) - rng.randint(1, 5)])
        elif dt.kind in "iu" or (dt.kind == "b" and rng.random() < 0.6) or rng.random() < 0.4:
            info = np.iinfo(dt) if dt.kind in "iu" else np.iinfo(np.int64)
            r = rng.random()
            if r < 0.7:
                v = rng.randint(max(int(info.min), -9), 9)
            elif r < 0.9:
                v = rng.randint(max(int(info.min), -1000), min(int(info.max), 1000))
            else:
                v = rng.choice([int(info.max), int(info.min)])
            return {"op": "lit", "value": v, "text": str(v)}
        else:
            r = rng.random()
            if r < 0.5:
                v = rng.randint(-40, 40) / 8.0
                text = repr(v)
            elif r < 0.6:
                text = "%de%d" % (rng.randint(1, 9), rng.randint(-3, 3))
                v = float(text)
            elif r < 0.8:
                mant, e = rng.randint(1, 99), rng.randint(-5, 5)
                sign = "-" if rng.random() < 0.3 else ""
                text = "%s%d.%de%d" % (sign, mant // 10, mant % 10, e)
                v = float(text)
            else:
                v = rng.uniform(-100, 100)
                text = repr(v)
            return {"op": "lit", "value": v, "text": text}
        return {"op": "lit", "value": v, "text": str(v)}

    def node(self, depth):
        """Returns (tree, dtype, inexact)."""
        if depth <= 0 or self.rng.random() < 0.15:
            return self.leaf()
        for _ in range(20):
            made = self.try_node(depth)
            if made is not None:
                return made
        return self.leaf()

    def try_node(self, depth):
        rng = self.rng
        kind = rng.random()
        if kind < 0.45:
            op = rng.choice(list(BINARY))
            args = self.binary_args(depth)
        elif kind < 0.6:
            op = rng.choice(list(UNARY))
            args = [self.node(depth - 1)]
        elif kind < 0.9:
            fname = rng.choice(list(FUNCS))
            op = "f_" + fname
            if FUNCS[fname] == 1:
                args = [self.node(depth - 1)]
            elif fname == "where":
                args = [self.node(depth - 1)] + self.binary_args(depth)
            elif fname in FIXED_POINT:   # operands of its type, often through a cast
                t = FIXED_POINT[fname][0]
                args = []
                for _ in range(2):
                    tree, dt, inexact = self.node(depth - 1)
                    if dt != NP_DTYPE[t] and rng.random() < 0.8:
                        tree, dt = {"op": "cast", "to": t, "args": [tree]}, NP_DTYPE[t]
                    args.append((tree, dt, inexact))
            elif fname == "clip":
                args = [self.node(depth - 1)]
                args += [self.node(depth - 1) if rng.random() < 0.4 else
                         (self.literal_for(args[0][1]), args[0][1], False) for _ in range(2)]
                if args[1][0]["op"] == "lit" and args[2][0]["op"] == "lit":
                    if not isinstance(args[1][0]["value"], type(args[2][0]["value"])):
                        return None     # int and float literal together: not worth the ambiguity
                    lo, hi = sorted([args[1][0], args[2][0]], key=lambda n: n["value"])
                    args[1], args[2] = (lo, args[1][1], False), (hi, args[2][1], False)
            else:
                args = self.binary_args(depth)
        else:
            op = "cast"
            args = [self.node(depth - 1)]
        trees = [a[0] for a in args]
        inexact = [a[2] for a in args]
        node = {"op": op, "args": trees}
        if op == "cast":
            node["to"] = rng.choice(DTYPES)
        if all(is_literal(t) for t in trees):
            return None
        if op in UNARY and is_literal(trees[0]):
            return None
        if op == "f_where" and (is_literal(trees[0]) or (is_literal(trees[1]) and is_literal(trees[2]))):
            return None
        dt = self.typed(node)
        if dt is None:
            return None
        if any(inexact) and not self.inexact_ok(node, trees, inexact, dt):
            return None
        name = op[2:] if op.startswith("f_") else op
        now_inexact = any(inexact) or ((name in TRANSCENDENTAL or name == "pow") and dt.kind == "f")
        return node, dt, now_inexact

    @staticmethod
    def inexact_ok(node, trees, inexact, dt):
        """Where a transcendental's result may go: only through operations
        whose error the oracle bounds (continuous ones), never into
        comparisons, truncations, integer casts or another transcendental."""
        op = node["op"]
        if op in ("pos", "neg", "add", "sub", "mul", "div", "f_abs", "f_minimum", "f_maximum", "f_clip"):
            return dt.kind == "f"
        if op == "f_where":
            return not inexact[0] and dt.kind == "f"
        if op == "cast":
            return NP_DTYPE[node["to"]].kind == "f"
        return False

    def binary_args(self, depth):
        rng = self.rng
        left = self.node(depth - 1)
        if rng.random() < 0.25:
            right = (self.literal_for(left[1]), left[1], False)
        else:
            right = self.node(depth - 1)
        if rng.random() < 0.3:
            left, right = right, left
        return [left, right]


ERROR_KINDS = ["literal", "bitwise_float", "neg_bool", "sub_bool", "shift_mixed"]


def make_error_tree(b, rng):
    """A tree NumPy rejects (bcgen must exit 1)."""
    kind = rng.choice(ERROR_KINDS)
    x, dt, _ = b.node(rng.randint(0, 2))
    if kind == "literal" and dt.kind in "iu":
        lit = b.literal_for(dt, out_of_range=True)
        op = rng.choice(["add", "sub", "mul", "bitand", "bitor", "bitxor", "lt", "ge", "eq", "floordiv"])
        return {"op": op, "args": [x, lit] if rng.random() < 0.5 else [lit, x]}
    if kind == "bitwise_float" and dt.kind == "f":
        if rng.random() < 0.3:
            return {"op": "bitnot", "args": [x]}
        return {"op": rng.choice(["bitand", "bitor", "bitxor", "shl", "shr"]), "args": [x, b.leaf()[0]]}
    if kind == "neg_bool" and dt.kind == "b":
        return {"op": "neg", "args": [x]}
    if kind == "sub_bool":
        y = {"op": "operand", "name": b.names[0]}
        return {"op": "sub", "args": [{"op": "lt", "args": [x, x]}, {"op": "ne", "args": [y, y]}]}
    if kind == "shift_mixed":
        return {"op": rng.choice(["shl", "shr", "bitand"]),
                "args": [{"op": "cast", "to": "i64", "args": [x]},
                         {"op": "cast", "to": "u64", "args": [b.leaf()[0]]}]}
    # the drawn kind does not suit x: the literal that fits nothing
    return {"op": "add", "args": [{"op": "cast", "to": "u8", "args": [x]},
                                  {"op": "lit", "value": 256, "text": "256"}]}


LONG_RUN_SHARE = 0.03     # cases whose innermost dimension is >= 4096
RETRIES = 4               # new draws for a case the oracle cannot check tightly
LOOSE_SHARE = 0.1         # more loosely checked elements than this: draw again


def make_case(seed, index):
    """Case number INDEX of run SEED: a dict with operands (name, dtype,
    shape, strides, zero_axes, data, source), tree, expr text, inplace
    (operand name or None), expect_error, elements, long_run, attempt.
    A case whose float result the oracle could only check loosely is drawn
    again (up to RETRIES times, from other seeds): see well_conditioned()."""
    for attempt in range(RETRIES + 1):
        case = draw_case(seed, index, attempt)
        if attempt == RETRIES or well_conditioned(case):
            return case


def well_conditioned(case):
    """False when CASE's float result has an element without an error bound,
    or more than LOOSE_SHARE of its elements with a bound above half their
    magnitude: a transcendental's few-ulp error amplified by cancellation
    (tanh(x) - 1, exp(b) - pow(b, b)) or a division by a value that may be
    zero.  Such a case would test little, so the generator avoids it."""
    if case["expect_error"]:
        return True
    try:
        value, bound = oracle(case)
    except (OracleError, AssertionError):
        return True             # reported by the callers, which run the oracle again
    if value.dtype.kind != "f" or value.size == 0:
        return True
    counts = bound_classes(value, bound)
    return counts["unbounded"] == 0 and counts["loose"] <= LOOSE_SHARE * value.size


def draw_case(seed, index, attempt):
    """One draw of case INDEX; attempt 0 keeps the seeds of the original
    generator so that most cases stay what they were."""
    if attempt == 0:
        rng = random.Random(seed * 1000003 + index)
        nprng = np.random.default_rng([seed, index])
    else:
        rng = random.Random("case-%d-%d-attempt-%d" % (seed, index, attempt))
        nprng = np.random.default_rng([seed, index, attempt])
    # drawn apart from RNG so that the other cases keep their draws
    long_run = random.Random("long-run-%d-%d" % (seed, index)).random() < LONG_RUN_SHARE
    count = rng.choice([1, 1, 2, 2, 2, 3, 3, 4, 5])
    shapes = long_shapes(rng, count) if long_run else random_shapes(rng, count)
    broadcast_error = rng.random() < 0.005
    if broadcast_error:                     # two operands whose shapes do not broadcast
        count = max(count, 2)
        shapes = random_shapes(rng, count)
        size = rng.randint(2, 4)
        shapes[0] = shapes[0] + [size]
        shapes[1] = shapes[1] + [size + rng.randint(1, 3)]
    names = ["a", "b", "c", "d", "e"][:count]
    dts = {n: NP_DTYPE[rng.choice(DTYPES)] for n in names}
    if rng.random() < 0.3:                  # same dtype everywhere happens a lot in practice
        dt = dts[names[0]]
        dts = {n: dt for n in names}
    b = Builder(rng, dts)
    expect_error = rng.random() < 0.04 or broadcast_error
    if broadcast_error:                     # ... read by the expression
        tree = {"op": "add", "args": [{"op": "add", "args": [b.node(rng.randint(0, 3))[0],
                                                          {"op": "operand", "name": "a"}]},
                                      {"op": "operand", "name": "b"}]}
    elif expect_error:
        tree = make_error_tree(b, rng)
    elif rng.random() < 0.01:
        tree = b.literal_for(np.dtype(np.float64) if rng.random() < 0.5 else np.dtype(np.int64))
    else:
        tree = b.node(rng.randint(1, 4))
        if tree[0]["op"] == "operand" and rng.random() < 0.7:
            tree = b.node(rng.randint(1, 4))
        tree = tree[0]
    try:
        result_shape = list(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        result_shape = [0]
    inplace = None
    if not expect_error and rng.random() < 0.2:
        full = [n for n, s in zip(names, shapes) if s == result_shape]
        if full:
            target = rng.choice(full)
            try:
                dt = result_dtype(tree, dts)
            except OracleError:
                dt = None
            if dt is not None and dt != dts[target] and not is_literal(tree):
                cast = {"op": "cast", "to": NAME_OF[dts[target]], "args": [tree]}
                ok = Builder.inexact_ok(cast, [tree], [True], dts[target]) or not tree_inexact(tree, dts)
                if ok:
                    tree, dt = cast, dts[target]
            if dt == dts[target]:
                inplace = target
    operands = []
    for n, s in zip(names, shapes):
        dt = dts[n]
        strides, zero = (long_strides if long_run else random_strides)(rng, s, allow_zero=(n != inplace))
        src = None
        r = rng.random()
        if r < 0.03:
            src, data = "ones", np.ones(s, dt)
        elif r < 0.05:
            src, data = "zeros", np.zeros(s, dt)
        else:
            data = random_data(rng, nprng, dt, s)
            for k in zero:
                data = np.broadcast_to(np.take(data, [0], axis=k), s) if s[k] > 0 else data
            data = np.array(data, dtype=dt, order="C", copy=True)
        operands.append({"name": n, "dtype": NAME_OF[dt], "shape": s, "strides": strides,
                         "zero_axes": zero, "data": data, "source": src})
    minimal = rng.random() < 0.5
    return {"seed": seed, "index": index, "operands": operands, "tree": tree,
            "expr": fmt(tree, minimal), "inplace": inplace, "expect_error": expect_error,
            "broadcast_error": broadcast_error, "long_run": long_run and not broadcast_error,
            "attempt": attempt,
            "elements": int(np.prod(result_shape)) if result_shape else 1}


def tree_inexact(tree, dts):
    """True when a transcendental's float result reaches the root."""
    op = tree["op"]
    if op in ("operand", "lit"):
        return False
    name = op[2:] if op.startswith("f_") else op
    if name in TRANSCENDENTAL or name == "pow":
        try:
            return result_dtype(tree, dts).kind == "f"
        except OracleError:
            return False
    return any(tree_inexact(a, dts) for a in tree["args"])


def operand_spec(op, path):
    """The -i argument for operand OP whose data file is PATH."""
    spec = "%s=%s[%s]" % (op["name"], op["dtype"], ",".join(str(d) for d in op["shape"]))
    if op["strides"] is not None:
        spec += "@[%s]" % ",".join(str(s) for s in op["strides"])
    return spec + "=" + (op["source"] or path)


def ops_in(tree, acc=None):
    acc = set() if acc is None else acc
    if tree["op"] in ("operand", "lit"):
        acc.add(tree["op"])
        return acc
    acc.add(tree["op"])
    for a in tree["args"]:
        ops_in(a, acc)
    return acc


if __name__ == "__main__":
    # run as a program, this module checks itself (kernel_numpy.py
    # --self-check, no bcgen needed); tests/run.sh skips it (leading "_")
    import sys
    import kernel_numpy
    sys.exit(kernel_numpy.main(["--self-check"] + sys.argv[1:]))
