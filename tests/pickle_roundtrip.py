#!/usr/bin/env python3
"""pickle_roundtrip.py DUMP SCRATCH [CASES] - memflow's pickle reader against CPython's.

Builds random plain data (dicts, lists, tuples, sets from protocol 4, str with non-ASCII and
lone surrogates, bytes, ints of every width, floats, bools, None), with
objects shared between places (so the pickle refers back with GET), pickles
each with protocols 2 to 5, by the C pickler (what pickle.dump uses) and by
the pure-Python one (pickle._dumps, which ends a batch of one with APPEND),
and checks that tests/pickle_dump (DUMP) reports exactly what pickle.loads
builds from the same bytes, read from memory and from a file descriptor.
Only the Python standard library; the reader under test never runs Python.
"""
import json
import os
import pickle
import random
import subprocess
import sys

DUMP, SCRATCH = sys.argv[1], sys.argv[2]
CASES = int(sys.argv[3]) if len(sys.argv) > 3 else 300


def canon(x):
    """The form pickle_dump prints for x."""
    if x is None:
        return ["none"]
    if isinstance(x, bool):
        return ["bool", int(x)]
    if isinstance(x, int):
        if -2**63 <= x < 2**63:
            return ["int", str(x)]
        return ["bigint", pickle.encode_long(x).hex()]
    if isinstance(x, float):
        return ["float", x.hex()]
    if isinstance(x, str):
        return ["str", x.encode("utf-8", "surrogatepass").hex()]
    if isinstance(x, (bytes, bytearray)):
        return ["bytes", bytes(x).hex()]
    if isinstance(x, tuple):
        return ["tuple", [canon(i) for i in x]]
    if isinstance(x, list):
        return ["list", [canon(i) for i in x]]
    if isinstance(x, dict):
        return ["dict", [[canon(k), canon(v)] for k, v in x.items()]]
    if isinstance(x, (set, frozenset)):
        kind = "set" if isinstance(x, set) else "frozenset"
        return [kind, sorted((canon(i) for i in x), key=json.dumps)]
    raise TypeError(type(x))


def normal(c):
    """pickle_dump's output with floats in Python's hex form and sets sorted."""
    kind = c[0]
    if kind == "float":
        return ["float", float.fromhex(c[1]).hex()]
    if kind in ("tuple", "list"):
        return [kind, [normal(i) for i in c[1]]]
    if kind in ("set", "frozenset"):
        return [kind, sorted((normal(i) for i in c[1]), key=json.dumps)]
    if kind == "dict":
        return [kind, [[normal(k), normal(v)] for k, v in c[1]]]
    return c


class Gen:
    def __init__(self, rng, proto):
        self.rng = rng
        self.proto = proto
        self.shared = []
        self.reused = 0

    def scalar(self):
        r = self.rng
        choice = r.randrange(12)
        if choice == 0:
            return None
        if choice == 1:
            return r.random() < 0.5
        if choice == 2:
            return r.randrange(256)
        if choice == 3:
            return r.randrange(-2**31, 2**31)
        if choice == 4:
            return r.choice([2**63 - 1, -2**63, 2**63, 2**64 - 1, -2**64, 2**200 + 7, -2**100])
        if choice == 5:
            return r.choice([0.0, -0.0, 1.5, -2.25e300, 5e-324, 3.141592653589793])
        if choice in (6, 7):
            return r.choice(["", "a", "filename.py", "caf\u00e9", "\u4e2d\u6587",
                             "\U0001f600", "x" * 300, "lone \udc80 surrogate"])
        if choice == 8 and self.proto >= 3:
            return r.choice([b"", b"\x00\xff", b"y" * 260])
        if choice == 9 and self.proto >= 5:
            return bytearray(b"ba")
        if choice == 10:
            return tuple(self.scalar() for _ in range(r.randrange(5)))
        return r.randrange(1 << 40)

    def key(self):
        while True:
            k = self.scalar()
            try:
                hash(k)
                return k
            except TypeError:       # a bytearray, or a tuple holding one
                pass

    def value(self, depth):
        r = self.rng
        if self.shared and r.random() < 0.15 and self.reused < 20:
            self.reused += 1
            return r.choice(self.shared)
        if depth <= 0 or r.random() < 0.35:
            return self.scalar()
        choice = r.randrange(6 if self.proto >= 4 else 4)   # sets need protocol 4
        n = r.choice([0, 1, 1, 2, 3, 5, 10])
        if choice == 0 and r.random() < 0.05:
            n = r.choice([999, 1000, 1001, 2001])
            x = [self.scalar() for _ in range(n)]      # batches of 1000
        elif choice in (0, 1):
            x = [self.value(depth - 1) for _ in range(n)]
        elif choice in (2, 3):
            x = {self.key(): self.value(depth - 1) for _ in range(n)}
        elif choice == 4:
            x = {self.key() for _ in range(n)}
        else:
            x = frozenset(self.key() for _ in range(n))
        if r.random() < 0.3:
            self.shared.append(x)
        return x


def run(path, extra):
    p = subprocess.run([DUMP, "--keep"] + extra + [path], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def check(case, data, blob):
    path = os.path.join(SCRATCH, "case.pkl")
    with open(path, "wb") as f:
        f.write(blob)
    want = canon(pickle.loads(blob))
    for extra in ([], ["--fd"]):
        rc, out, err = run(path, extra)
        if rc != 0:
            sys.exit(f"case {case}: pickle_dump {extra} exited {rc}: {err.strip()}")
        got = normal(json.loads(out))
        if got != want:
            with open(os.path.join(SCRATCH, f"fail-{case}.pkl"), "wb") as f:
                f.write(blob)
            sys.exit(f"case {case}: {extra} differs from pickle.loads (see fail-{case}.pkl)\n"
                     f"want {json.dumps(want)[:400]}\ngot  {json.dumps(got)[:400]}")
    # a look-ahead too short to decide: the same report, or a refusal, never another value
    rc, out, err = run(path, ["--lookahead", "8"])
    if rc == 0:
        if normal(json.loads(out)) != want:
            sys.exit(f"case {case}: a short look-ahead reported other data")
        return 0
    if rc != 12 or "could not look ahead far enough" not in err:
        sys.exit(f"case {case}: a short look-ahead failed otherwise: {err.strip()}")
    return 1


def main():
    os.makedirs(SCRATCH, exist_ok=True)
    rng = random.Random(20)
    done = refused = 0
    for case in range(CASES):
        proto = 2 + case % 4
        g = Gen(rng, proto)
        data = g.value(4)
        dumps = pickle.dumps if case % 3 else pickle._dumps
        refused += check(case, data, dumps(data, protocol=proto))
        done += 1
    # the shapes that start alike: [[], [x]] against [[[x]], y], and dicts
    fixed = [[[], [{"a": 1}], "x"], [[[{"a": 1}]], "x"], [[], []], [[[]]], [[[], []]],
             {"k": {}, "a": [1]}, {"k": {"a": [1]}}, [{}, "a", [1]], [{"a": [1]}, 2],
             [[1] * 1001, [2]], [[]] * 3, list(range(2500)), {str(i): [i] for i in range(1500)}]
    # larger than the file reader's 256 KiB window, strings of every length: the
    # look-ahead steps over string bodies that end past the window
    r = random.Random(7)
    fixed.append([{"action": "alloc", "addr": i, "frames": [
        {"filename": "f" * r.randrange(4000), "line": i, "name": "g"} for _ in range(3)]}
        for i in range(400)])
    for i, data in enumerate(fixed):
        for proto in (2, 4, 5):
            refused += check(f"fixed{i}/{proto}", data, pickle.dumps(data, protocol=proto))
            refused += check(f"fixed{i}/{proto}/py", data, pickle._dumps(data, protocol=proto))
            done += 2
    print(f"pickle_roundtrip: {done} pickles read as pickle.loads reads them; with an 8-byte "
          f"look-ahead {done - refused} read the same and {refused} refused")


main()
