#!/usr/bin/env python3
"""Compiles a lesson's workload ahead of time with AOTInductor into a .pt2 package.

The lesson's `compiled.py` (beside its main.cpp) defines the workload as a torch.nn.Module, the
names of its inputs (INPUTS) and example(flags, dtype, device) -> (module, inputs, dynamic
dims). This script exports it with torch.export, compiles it with Inductor (kernel names kept in
the profiler's trace: cpp.enable_kernel_profile) and writes the package whole or not at all. The
package's metadata says what it is for, and the C++ loader (common/harness/aoti.cpp) refuses a
package made for another lesson, torch version, device, dtype or shape:

  pil_lesson, pil_torch_version, pil_device, pil_dtype, pil_flags ("--heads 4 --head-dim 32"),
  pil_inputs ("x[n,n] w[n,n] b[n,n]": a number is a fixed size, a name a dynamic one, the same
  name the same size)

Beside the package it always writes OUT.status (whole): `ok <wall seconds> s, <CPU seconds> s CPU`
(the CPU time of this process and the compilers it ran), or `failed <step>:
<reason>` where step is import, export, compile or write. With --keep-going (the build step) a
failure exits 0, so the rest of the build goes on and the variant reports the reason.

  aoti_compile.py --lesson-dir 03_mlp --device cpu --dtype fp32 --out build/aoti/03_mlp/cpu_fp32.pt2
  aoti_compile.py --lesson-dir 04_transformer --device cpu --dtype fp32 \\
      --flag heads=4 --flag head-dim=32 --out build/aoti/04_transformer/cpu_fp32_heads4_head-dim32.pt2

Exit codes: 0 compiled (or failed with --keep-going), 1 a step failed, 2 bad usage.
"""
import argparse
import importlib.util
import os
import sys
import tempfile
import time
import traceback

from folder_check import folder_problem

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


class StepFailed(Exception):
    def __init__(self, step, error):
        super().__init__("%s: %s" % (step, first_line(error)))
        self.step = step


def first_line(error):
    text = ("%s: %s" % (type(error).__name__, error)).strip()
    return text.splitlines()[0] if text else type(error).__name__


def cpu_seconds():
    """CPU time of this process and of the finished processes it started (the C++ compiler)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def write_whole(path, text):
    """Writes `text` to `path` whole or not at all (a temporary file, then a rename)."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".status.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def parse_flags(parser, pairs):
    flags = {}
    for p in pairs:
        name, sep, value = p.partition("=")
        if not sep or not name or name.startswith("-") or not value.isdigit():
            parser.error("--flag %s: expected NAME=INTEGER (heads=4)" % p)
        flags["--" + name] = int(value)
    return flags


def signature(inputs, names, dynamic):
    """'x[n,n] w[n,n]': each input's dims, a number where fixed, the Dim's name where dynamic."""
    parts = []
    for name, t, dims in zip(names, inputs, dynamic):
        dims = dims or {}
        sizes = [getattr(dims[i], "__name__", "*") if i in dims else str(s) for i, s in enumerate(t.shape)]
        parts.append("%s[%s]" % (name, ",".join(sizes)))
    return " ".join(parts)


def compile_package(args, flags):
    """Imports, exports, compiles and writes; raises StepFailed naming the step that failed."""
    step = "import"
    try:
        import torch  # noqa: the cached wheel (PYTHONPATH) or the user's torch
        spec = importlib.util.spec_from_file_location("compiled", os.path.join(args.lesson_dir, "compiled.py"))
        workload = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(workload)
        dtype = getattr(torch, DTYPES[args.dtype])
        step = "export"
        torch.manual_seed(0)
        module, inputs, dynamic = workload.example(flags, dtype, torch.device(args.device))
        program = torch.export.export(module, inputs, dynamic_shapes=dynamic)
        step = "compile"
        lesson = os.path.basename(os.path.normpath(args.lesson_dir))
        metadata = {
            "pil_lesson": lesson,
            "pil_torch_version": torch.__version__.split("+")[0],
            "pil_device": args.device,
            "pil_dtype": args.dtype,
            "pil_flags": " ".join("%s %d" % kv for kv in sorted(flags.items())),
            "pil_inputs": signature(inputs, workload.INPUTS, dynamic),
        }
        out_dir = os.path.dirname(os.path.abspath(args.out))
        stem = os.path.basename(args.out)[:-len(".pt2")]
        fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=stem + ".partial.", suffix=".pt2")
        os.close(fd)
        try:
            torch._inductor.aoti_compile_and_package(
                program, package_path=tmp,
                inductor_configs={"cpp.enable_kernel_profile": True, "aot_inductor.metadata": metadata})
            step = "write"
            os.replace(tmp, args.out)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    except Exception as e:  # one line for the status file; the traceback for the build log
        traceback.print_exc()
        raise StepFailed(step, e)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lesson-dir", required=True, help="the lesson's folder (holds compiled.py)")
    p.add_argument("--device", choices=["cpu", "cuda"], required=True)
    p.add_argument("--dtype", choices=sorted(DTYPES), required=True)
    p.add_argument("--flag", action="append", default=[], metavar="NAME=N",
                   help="a lesson flag the package is made for (repeatable): --flag heads=4")
    p.add_argument("--out", required=True, help="the package to write (NAME.pt2); NAME.status beside it")
    p.add_argument("--keep-going", action="store_true", help="exit 0 on a failed step (the build step)")
    args = p.parse_args()
    flags = parse_flags(p, args.flag)
    if not args.out.endswith(".pt2"):
        p.error("--out %s: the package's name must end in .pt2" % args.out)
    if not os.path.isfile(os.path.join(args.lesson_dir, "compiled.py")):
        p.error("--lesson-dir %s: no compiled.py there" % args.lesson_dir)
    # A folder that takes no file (/proc) is said now, not in two tracebacks after compiling.
    if folder_problem(os.path.dirname(os.path.abspath(args.out))):
        p.error("--out %s: %s" % (args.out, folder_problem(os.path.dirname(os.path.abspath(args.out)))))
    status = args.out[:-len(".pt2")] + ".status"
    start, cpu_start = time.monotonic(), cpu_seconds()
    try:
        compile_package(args, flags)
    except StepFailed as e:
        if os.path.exists(args.out):  # a failed build leaves no package: the old one is stale
            os.remove(args.out)
        write_whole(status, "failed %s\n" % e)
        print("aoti_compile.py: %s: failed at %s" % (args.out, e), file=sys.stderr)
        return 0 if args.keep_going else 1
    seconds, cpu = time.monotonic() - start, cpu_seconds() - cpu_start
    write_whole(status, "ok %.1f s, %.1f s CPU\n" % (seconds, cpu))
    print("aoti_compile.py: %s compiled in %.1f s (%.1f s CPU)" % (args.out, seconds, cpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
