#!/usr/bin/env python3
"""A small training program in Python and in C++, side by side: where their profiles differ.

Runs docs/examples/profile_training.py (Python's torch.profiler) and the C++ program
profile_training (pil::profiler) twice, as written and with --name-optimizer, and compares,
step by step, what each recorded step holds: the rows of the operator table with their call
counts (the table's `# of Calls` counts the trace's slices of a name, counted here from the
traces, by one function for both), and every slice's chain of enclosing slices. Expected, and
checked to the count, are exactly the differences that come from LibTorch itself:

  Optimizer.zero_grad#SGD.zero_grad,   Python's optimizers record these ranges, LibTorch's none:
  Optimizer.step#SGD.step              1 per step in Python, 0 in C++ unless the program names
                                       them (--name-optimizer), then 1 in both
  aten::linear                         Python's F.linear is the aten::linear operator; C++'s
                                       F::linear calls addmm (2-D input) itself: one per Linear
                                       layer in Python, none in C++
  aten::detach_ (and the detach_       C++'s Optimizer::zero_grad detaches every gradient before
  record inside it)                    it drops it; Python's sets it to None: one per parameter
                                       in C++, none in Python
  aten::add_ inside aten::add_         C++'s BatchNorm counts batches with add_(Scalar), which
                                       calls add_(Tensor): one more per BatchNorm in C++
  aten::empty, aten::empty_strided     the gradient seed ones_like(loss): C++'s empty_like calls
  (inside ones_like > empty_like)      empty, Python's (preserve_format) empty_strided

Every other row must have the same calls in every recorded step, and the chains must match once
the rows above are taken out of them. Times are not compared: they are the machine's.

  PYTHONPATH=~/.cache/profiling-in-libtorch/torch-2.11.0 \\
    python3 scripts/compare_training.py --program build/bin/profile_training

Exit 0 when the programs differ exactly as expected, 1 otherwise, 2 on bad usage, 77 when no
Python torch is importable (a skip).
"""
import argparse
import glob
import importlib.util
import os
import re
import subprocess
import sys
from collections import Counter, namedtuple

sys.dont_write_bytecode = True  # no __pycache__ in the source tree from the imports below
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_with_python import SKIP, chains, python_torch  # noqa: E402
from folder_check import folder_problem  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TWIN = os.path.join(ROOT, "docs", "examples", "profile_training.py")
STEP = re.compile(r"^ProfilerStep#\d+$")


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        print("compare_training: %s (see --help)" % message, file=sys.stderr)
        sys.exit(2)


def run(what, command, folder):
    """Runs one program writing its trace into `folder`; returns (stdout, the trace's path)."""
    os.makedirs(folder, exist_ok=True)
    for old in glob.glob(os.path.join(folder, "*.pt.trace.json")):
        os.remove(old)
    done = subprocess.run(command + [folder], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("compare_training: %s failed (exit %d):\n%s%s"
                 % (what, done.returncode, done.stdout, done.stderr))
    traces = glob.glob(os.path.join(folder, "*.pt.trace.json"))
    if len(traces) != 1:
        sys.exit("compare_training: %s wrote %d traces into %s, expected 1"
                 % (what, len(traces), folder))
    return done.stdout, traces[0]


def per_step(trace_path):
    """{step name: (Counter of slice names, Counter of chains)} for each recorded step."""
    steps = {}
    for chain in chains(trace_path):
        step = chain[0] if STEP.match(chain[0]) else "(outside the steps)"
        names, nests = steps.setdefault(step, (Counter(), Counter()))
        names[chain[-1]] += 1
        nests[chain] += 1
    return steps


def model_facts():
    """The counts of the twin's model the expected differences follow from."""
    spec = importlib.util.spec_from_file_location("profile_training", TWIN)
    twin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(twin)
    model = twin.make_model()
    from torch import nn
    return {"parameters": len(list(model.parameters())),
            "linear": sum(isinstance(m, nn.Linear) for m in model.modules()),
            "batchnorm": sum(isinstance(m, nn.BatchNorm2d) for m in model.modules())}


# One expected difference: the slices ending a chain with `suffix` (the row is its last name),
# `python` calls per step in Python (None: whatever Python records), `delta` more in C++.
# `splice`: a range around others; its children are compared with it taken out of their chains.
Expect = namedtuple("Expect", "suffix python delta splice why")


def expected(facts, named):
    """The differences LibTorch 2.11 makes in this program, in calls per step."""
    params, linear, bn = facts["parameters"], facts["linear"], facts["batchnorm"]
    opt = ("named by hand in C++ (--name-optimizer)" if named
           else "Python's optimizers record this range; LibTorch's record none")
    return [
        Expect(("Optimizer.zero_grad#SGD.zero_grad",), 1, 0 if named else -1, not named, opt),
        Expect(("Optimizer.step#SGD.step",), 1, 0 if named else -1, not named, opt),
        Expect(("aten::linear",), linear, -linear, True,
               "Python's F.linear is the aten::linear operator (aten::t and aten::addmm inside); "
               "C++'s F::linear calls aten::t and aten::addmm itself on a 2-D input"),
        Expect(("aten::detach_",), 0, params, False,
               "C++'s zero_grad detaches each gradient, then drops it; Python's sets it to None"),
        Expect(("aten::detach_", "detach_"), 0, params, False,
               "the autograd-level record inside each aten::detach_"),
        Expect(("aten::add_", "aten::add_"), params + bn, bn, False,
               "C++'s BatchNorm counts batches with `num_batches_tracked += 1`: add_(Scalar), "
               "which calls add_(Tensor); Python's `add_(1)` calls add_(Tensor) directly. The "
               "other add_ calls are SGD's, one per parameter"),
        Expect(("aten::ones_like", "aten::empty_like", "aten::empty"), None, 1, False,
               "C++'s backward() makes the gradient seed ones_like(loss) contiguous: "
               "empty_like calls empty"),
        Expect(("aten::ones_like", "aten::empty_like", "aten::empty_strided"), 1, -1, False,
               "Python's backward() makes it with preserve_format: empty_like calls empty_strided"),
    ]


def spliced(nests, names):
    """The chains with `names` taken out: their own chains dropped, removed from the others'."""
    out = Counter()
    for chain, n in nests.items():
        if chain[-1] not in names:
            out[tuple(c for c in chain if c not in names)] += n
    return out


def compare(title, py, cpp, expect):
    """Checks one C++ run against the Python run; prints the differences; returns the failures."""
    print("== %s" % title)
    if sorted(py) != sorted(cpp) or not any(STEP.match(s) for s in py):
        return ["recorded steps: Python %s, C++ %s" % (sorted(py), sorted(cpp))]
    failures = []
    rows = {e.suffix[-1]: e for e in expect}
    splice = {e.suffix[-1] for e in expect if e.splice}
    measured = {}
    for step in sorted(py):
        (py_names, py_nests), (cpp_names, cpp_nests) = py[step], cpp[step]
        # The rows: the expected ones to the count, every other one the same in both.
        for name in sorted(set(py_names) | set(cpp_names) | set(rows)):
            p, c = py_names[name], cpp_names[name]
            e = rows.get(name)
            measured.setdefault(name, set()).add((p, c))
            if e is None and p != c:
                failures.append("%s: row %s: Python %d, C++ %d calls" % (step, name, p, c))
            elif e is not None and (c - p != e.delta or e.python not in (None, p)):
                failures.append("%s: row %s: Python %d, C++ %d calls; expected %s and %s more"
                                % (step, name, p, c, "any" if e.python is None else e.python,
                                   e.delta))
        # The nesting: after the splice, only the expected chains may differ, by their delta.
        a, b = spliced(py_nests, splice), spliced(cpp_nests, splice)
        left = {e.suffix: e.delta for e in expect if not e.splice}
        for chain in sorted(set(a) | set(b)):
            d = b[chain] - a[chain]
            if not d:
                continue
            suffix = next((s for s in left if chain[-len(s):] == s), None)
            if suffix is None:
                failures.append("%s: chain %s: Python %d, C++ %d"
                                % (step, " > ".join(chain), a[chain], b[chain]))
            else:
                left[suffix] -= d
        failures += ["%s: chains ending %s: C++ has %d more than expected"
                     % (step, " > ".join(s), -d) for s, d in left.items() if d]
    print("| row | Python, calls per step | C++, calls per step | where the calls differ | why |")
    print("|---|---:|---:|---|---|")
    for e in expect:
        calls = measured.get(e.suffix[-1], {(0, 0)})
        where = "under " + " > ".join(e.suffix[:-1]) if len(e.suffix) > 1 else ""
        if len(calls) == 1:
            (p, c), = calls
            print("| `%s` | %d | %d | %s | %s |" % (e.suffix[-1], p, c, where, e.why))
        else:
            print("| `%s` | varies: %s | | %s | %s |" % (e.suffix[-1], sorted(calls), where, e.why))
    same = [n for n, calls in measured.items() if n not in rows]
    print("\n%d other rows: the same calls in each of the %d recorded steps (%s)"
          % (len(same), len(py), ", ".join(sorted(py))))
    if not failures:
        print("the same nesting, but for the chains above")
    print()
    return failures


def main():
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", required=True,
                    help="the built C++ program: build/bin/profile_training")
    ap.add_argument("--out", help="folder for the traces (default: compare-training beside the "
                    "program's bin/ folder: build/compare-training)")
    args = ap.parse_args()
    if not os.access(args.program, os.X_OK) or os.path.isdir(args.program):
        print("compare_training: --program %s: not an executable; allowed: the built C++ program "
              "(build/bin/profile_training)" % args.program, file=sys.stderr)
        return 2
    if args.out and folder_problem(args.out):
        print("compare_training: --out: %s; allowed: a folder to write into" % folder_problem(args.out),
              file=sys.stderr)
        return 2
    if not python_torch():
        return SKIP
    os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # no "gpuGetDeviceCount failed" without a GPU
    # Beside the build, not a new temporary folder each run: the traces stay where the next run
    # replaces them (each subfolder's old trace is removed first).
    out = args.out or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(args.program))),
                                   "compare-training")
    facts = model_facts()

    py_table, py_trace = run("the Python twin", [sys.executable, TWIN], os.path.join(out, "python"))
    cpp_table, cpp_trace = run("the C++ program", [args.program], os.path.join(out, "cpp"))
    named_table, named_trace = run("the C++ program with --name-optimizer",
                                   [args.program, "--name-optimizer"],
                                   os.path.join(out, "cpp-named"))
    print("Python's table:\n%s\nC++'s table:\n%s\nC++'s table, --name-optimizer:\n%s"
          % (py_table, cpp_table, named_table))
    print("The model: %(parameters)d parameters, %(linear)d Linear and %(batchnorm)d BatchNorm2d "
          "layer(s); one backward and one optimizer step per step\n" % facts)
    py = per_step(py_trace)
    failures = compare("Python against C++ as written", py, per_step(cpp_trace),
                       expected(facts, named=False))
    failures += compare("Python against C++ with --name-optimizer", py, per_step(named_trace),
                        expected(facts, named=True))
    print("traces: %s, %s, %s" % (py_trace, cpp_trace, named_trace))
    if failures:
        for f in failures:
            print("differs: %s" % f)
        print("RESULT: FAILED (%d differences beyond the expected ones)" % len(failures))
        return 1
    print("RESULT: PASSED (the same rows, calls per step and nesting, but for the expected "
          "differences)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
