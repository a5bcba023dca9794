"""shape_numpy.py - bcg_broadcast_shapes against numpy.broadcast_shapes.

Seeded random cases (1 to 5 operands, ranks 0 to 8, sizes 0, 1 and small
ones, both broadcastable sets and sets with a conflict injected) go through
libbcgen.so with ctypes and through NumPy.  A valid result must match NumPy's
exactly; NumPy raising must coincide with BCG_ERR_BROADCAST.  For every
conflict the error must name a pair of operands that really conflict at the
named dimension, and exactly the pair and dimension bcgen documents (the first
operand that does not fit those before it, the first earlier operand it
conflicts with, their rightmost conflicting dimension), with both sizes.
Two smaller categories check the in-place rule (NumPy's out= argument) and the
legacy warning.  Prints one TAP line per category and a summary.

Run from the repository root with /usr/bin/python3; BUILD names the build
directory (default "build"); SHAPE_SEED changes the seed.
"""
import ctypes
import os
import random
import sys

import numpy as np

BUILD = os.environ.get("BUILD", "build")
SEED = int(os.environ.get("SHAPE_SEED", "20240611"))
MAX_RANK = 64

BCG_OK, BCG_ERR_USAGE, BCG_ERR_SHAPE, BCG_ERR_BROADCAST = 0, 1, 2, 3
BCG_AXIS_NONE = -1000


class Error(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("column", ctypes.c_int),
                ("operand", ctypes.c_int), ("dimension", ctypes.c_int),
                ("message", ctypes.c_char * 512)]


class Options(ctypes.Structure):
    _fields_ = [("inplace", ctypes.c_int), ("axis", ctypes.c_int),
                ("strict_rank", ctypes.c_int), ("warn_legacy", ctypes.c_int),
                ("unroll_limit", ctypes.c_int), ("unroll_factor", ctypes.c_int)]


def load():
    lib = ctypes.CDLL(os.path.join(BUILD, "libbcgen.so"))
    fn = lib.bcg_broadcast_shapes
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.POINTER(ctypes.c_int64)),
                   ctypes.POINTER(ctypes.c_int), ctypes.c_void_p,
                   ctypes.POINTER(Options), ctypes.POINTER(ctypes.c_int64),
                   ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_size_t,
                   ctypes.POINTER(Error)]
    return fn


BROADCAST = load()


def ours(shapes, inplace=-1, warn_legacy=False):
    """(status, result tuple or None, Error, warning)"""
    count = len(shapes)
    arrays = [(ctypes.c_int64 * max(len(s), 1))(*s) for s in shapes]
    pointers = (ctypes.POINTER(ctypes.c_int64) * count)(
        *[ctypes.cast(a, ctypes.POINTER(ctypes.c_int64)) for a in arrays])
    ranks = (ctypes.c_int * count)(*[len(s) for s in shapes])
    options = Options(inplace, BCG_AXIS_NONE, 0, 1 if warn_legacy else 0, 0, 1)
    result = (ctypes.c_int64 * MAX_RANK)()
    rank = ctypes.c_int(-1)
    warning = ctypes.create_string_buffer(256)
    err = Error()
    status = BROADCAST(count, pointers, ranks, None, ctypes.byref(options), result,
                       ctypes.byref(rank), warning, 256, ctypes.byref(err))
    shape = tuple(result[:rank.value]) if status == BCG_OK else None
    return status, shape, err, warning.value.decode()


def numpy_shape(shapes):
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        return None


def aligned(shapes):
    rank = max(len(s) for s in shapes)
    return [(1,) * (rank - len(s)) + tuple(s) for s in shapes], rank


def conflict_dimension(a, b):
    for d in range(len(a) - 1, -1, -1):
        if a[d] != 1 and b[d] != 1 and a[d] != b[d]:
            return d
    return -1


def expected_conflict(shapes):
    """(later, earlier, dimension) by bcgen's documented rule."""
    rows, rank = aligned(shapes)
    running = [1] * rank
    for j, row in enumerate(rows):
        if conflict_dimension(running, row) >= 0:
            for i in range(j):
                d = conflict_dimension(rows[i], row)
                if d >= 0:
                    return j, i, d
            raise AssertionError("running conflict without a pairwise one")
        running = [r if s == 1 else s for r, s in zip(running, row)]
    return None


def fmt(shape):
    return "(" + ",".join(str(x) for x in shape) + ("," if len(shape) == 1 else "") + ")"


# ---- case generators --------------------------------------------------------

def size(rng):
    """Mostly small sizes, with 0 and 1 often."""
    r = rng.random()
    if r < 0.12:
        return 0
    if r < 0.45:
        return 1
    return rng.randint(2, 6)


def valid_set(rng):
    """Operands derived from one result shape, so they always broadcast."""
    rank = rng.randint(0, 8)
    result = [size(rng) for _ in range(rank)]
    shapes = []
    for _ in range(rng.randint(1, 5)):
        r = rng.randint(0, rank)
        tail = result[rank - r:]
        shapes.append(tuple(x if rng.random() < 0.6 else 1 for x in tail))
    return shapes


def invalid_set(rng):
    """A valid set with one size changed so that it conflicts."""
    for _ in range(100):
        shapes = valid_set(rng)
        if len(shapes) < 2:
            shapes.append(tuple(size(rng) for _ in range(rng.randint(1, 8))))
        rows, rank = aligned(shapes)
        if rank == 0:
            continue
        j = rng.randrange(len(shapes))
        if not shapes[j]:
            continue
        k = rng.randrange(len(shapes[j]))
        d = rank - len(shapes[j]) + k
        others = [rows[i][d] for i in range(len(shapes)) if i != j and rows[i][d] != 1]
        if not others:
            continue
        bad = rng.choice([0, 2, 3, 4, 5, 7])
        if bad in others or all(o == bad for o in others):
            continue
        s = list(shapes[j])
        s[k] = bad
        shapes[j] = tuple(s)
        if numpy_shape(shapes) is None:
            return shapes
    return [(2,), (3,)]


def random_set(rng):
    """Unconstrained: sizes 0-3 so that about half broadcast."""
    return [tuple(rng.choice([0, 1, 1, 1, 2, 3]) for _ in range(rng.randint(0, 8)))
            for _ in range(rng.randint(1, 5))]


def scalar_set(rng):
    """Rank-0 operands mixed with others."""
    shapes = random_set(rng) if rng.random() < 0.5 else valid_set(rng)
    for _ in range(rng.randint(1, 3)):
        shapes.insert(rng.randint(0, len(shapes)), ())
    return shapes[:5]


# ---- checks ------------------------------------------------------------------

class Category:
    def __init__(self, name):
        self.name = name
        self.cases = 0
        self.valid = 0
        self.failures = []   # the first 10, printed
        self.failed = 0

    def fail(self, shapes, why):
        self.failed += 1
        if len(self.failures) < 10:
            self.failures.append("%s: %s" % (shapes, why))


def check_plain(cat, shapes, messages):
    cat.cases += 1
    want = numpy_shape(shapes)
    status, got, err, _ = ours(shapes)
    if want is not None:
        cat.valid += 1
        if status != BCG_OK:
            cat.fail(shapes, "numpy gives %s, bcgen fails: %s" % (want, err.message.decode()))
        elif got != tuple(want):
            cat.fail(shapes, "numpy gives %s, bcgen %s" % (want, got))
        return
    if status != BCG_ERR_BROADCAST:
        cat.fail(shapes, "numpy raises, bcgen returns status %d" % status)
        return
    message = err.message.decode()
    rows, _ = aligned(shapes)
    later, earlier, dim = expected_conflict(shapes)
    messages.cases += 1
    # whatever the rule, the named operand and dimension must really conflict
    j, d = err.operand, err.dimension
    if not (0 <= j < len(shapes)) or not (0 <= d < len(rows[0])):
        messages.fail(shapes, "operand %d / dimension %d out of range" % (j, d))
        return
    if not any(conflict_dimension(rows[i], rows[j]) >= 0 and
               rows[i][d] != 1 and rows[j][d] != 1 and rows[i][d] != rows[j][d]
               for i in range(len(shapes)) if i != j):
        messages.fail(shapes, "dimension %d of operand %d conflicts with nothing" % (d, j))
        return
    # and they must be the documented pair and dimension, named in full
    text = ("cannot broadcast operand %d %s against operand %d %s: dimension %d has "
            "size %d in operand %d and %d in operand %d" %
            (later, fmt(shapes[later]), earlier, fmt(shapes[earlier]), dim,
             rows[later][dim], later, rows[earlier][dim], earlier))
    if (j, d) != (later, dim) or message != text:
        messages.fail(shapes, "message %r, expected %r" % (message, text))


def numpy_inplace(shapes, target):
    """NumPy's own verdict for two operands (np.add with out=), else the rule
    it implements: the broadcast shape must equal the target's shape."""
    want = numpy_shape(shapes)
    if len(shapes) != 2:
        return want is not None and tuple(want) == tuple(shapes[target])
    arrays = [np.zeros(s, dtype=np.int8) for s in shapes]
    try:
        np.add(arrays[0], arrays[1], out=arrays[target])
        return True
    except ValueError:
        return False


def check_inplace(cat, shapes, rng):
    cat.cases += 1
    target = rng.randrange(len(shapes))
    ok = numpy_inplace(shapes, target)
    status, got, err, _ = ours(shapes, inplace=target)
    if ok:
        cat.valid += 1
        if status != BCG_OK or got != tuple(shapes[target]):
            cat.fail(shapes, "in-place into %d: numpy accepts, bcgen status %d %s" %
                     (target, status, err.message.decode()))
    elif status != BCG_ERR_BROADCAST:
        cat.fail(shapes, "in-place into %d: numpy refuses, bcgen status %d" % (target, status))
    elif numpy_shape(shapes) is not None:
        message = err.message.decode()
        if not message.startswith("in-place result cannot change the shape of operand %d %s"
                                  % (target, fmt(shapes[target]))):
            cat.fail(shapes, "in-place message %r" % message)


def check_legacy(cat, shapes):
    cat.cases += 1
    want = numpy_shape(shapes)
    status, got, err, warning = ours(shapes, warn_legacy=True)
    if want is None:
        if status != BCG_ERR_BROADCAST:
            cat.fail(shapes, "status %d" % status)
        return
    cat.valid += 1
    counts = {int(np.prod(s, dtype=np.int64)) for s in shapes}
    should = len(counts) == 1 and len(set(shapes)) > 1 and tuple(want) != tuple(shapes[0])
    if status != BCG_OK or bool(warning) != should:
        cat.fail(shapes, "warning %r, expected %s" % (warning, "one" if should else "none"))
    elif should and "old pointwise (1-D) behaviour" not in warning:
        cat.fail(shapes, "warning text %r" % warning)


def legacy_set(rng):
    """Sets that often hold equal element counts: permutations of one shape."""
    base = [rng.choice([1, 2, 3, 4]) for _ in range(rng.randint(1, 4))]
    shapes = []
    for _ in range(rng.randint(2, 4)):
        s = base[:]
        rng.shuffle(s)
        if rng.random() < 0.3:
            s = [1] + s
        if rng.random() < 0.2:
            s[0] = rng.choice([1, 5])
        shapes.append(tuple(s))
    return shapes


def main():
    rng = random.Random(SEED)
    messages = Category("error messages name the documented pair and dimension")
    plan = [
        (Category("broadcastable sets (ranks 0-8, sizes 0/1/2-6, 1-5 operands)"), valid_set, 4000),
        (Category("sets with one conflict injected"), invalid_set, 3000),
        (Category("unconstrained sets of sizes 0-3"), random_set, 3000),
        (Category("sets with rank-0 operands"), scalar_set, 1000),
    ]
    for cat, generate, count in plan:
        for _ in range(count):
            check_plain(cat, generate(rng), messages)
    inplace = Category("in-place (NumPy out=): result must equal the target's shape")
    for _ in range(1500):
        shapes = valid_set(rng) if rng.random() < 0.7 else random_set(rng)
        check_inplace(inplace, shapes, rng)
    legacy = Category("legacy warning: different shapes, same element count")
    for _ in range(1000):
        check_legacy(legacy, legacy_set(rng))

    categories = [c for c, _, _ in plan] + [messages, inplace, legacy]
    total = failed = 0
    for n, cat in enumerate(categories, 1):
        total += cat.cases
        failed += cat.failed
        status = "ok" if not cat.failures else "not ok"
        print("%s %d - %s: %d cases (%d valid)" % (status, n, cat.name, cat.cases, cat.valid)
              if cat is not messages else
              "%s %d - %s: %d cases" % (status, n, cat.name, cat.cases))
        for f in cat.failures:
            print("#   " + f)
        if cat.failed > len(cat.failures):
            print("#   ... and %d more" % (cat.failed - len(cat.failures)))
    print("1..%d" % len(categories))
    print("# seed %d: %d comparisons, %d disagreements" % (SEED, total, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
