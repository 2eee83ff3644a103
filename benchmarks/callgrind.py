"""Instructions per gradient call of one workload, counted by callgrind (deterministic).

    python benchmarks/callgrind.py W1 W3 asv-short        # the compiled engine
    FASTGRAD_PURE=1 python benchmarks/callgrind.py W1     # the pure one
    python benchmarks/callgrind.py --autograd W1          # autograd, for comparison

Timings on a shared machine are noisy; instruction counts are not.  Each case runs twice
under ``valgrind --tool=callgrind``, with the same setup and warm-up calls, once with
``--calls`` more gradient calls than the other: the difference of the two totals divided
by ``--calls`` is the cost of one call, without the import and the setup.  Hash seeds are
fixed so that two runs of one build give the same count.  Nothing is written to the tree
(callgrind's output files go to a temporary directory).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _impl(autograd):
    if autograd:
        return "autograd"
    return "fastgrad-pure" if os.environ.get("FASTGRAD_PURE", "") not in ("", "0") else "fastgrad-compiled"


def _child(case, warmup, calls, autograd):
    sys.path.insert(0, str(HERE))
    import _impls

    np, grad, _ = _impls.load_autodiff(_impl(autograd))
    fun, args, argnum = _impls.make_case(case, np)
    g = grad(fun, argnum)
    for _ in range(warmup + calls):
        g(*args)


def _instructions(case, warmup, calls, out_dir, autograd):
    out = os.path.join(out_dir, "callgrind.out.{}.{}".format(case, calls))
    env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", OMP_NUM_THREADS="1")
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=" + out,
        sys.executable,
        __file__,
        "--child",
        case,
        "--warmup",
        str(warmup),
        "--calls",
        str(calls),
    ] + (["--autograd"] if autograd else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    found = re.search(r"Collected\s*:\s*(\d+)", proc.stderr)
    return int(found.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="+", help="W1..W9, asv-short, asv-long, asv-fan, ...")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--calls", type=int, default=3, help="measured calls (asv-short: 100 times more)")
    parser.add_argument("--autograd", action="store_true", help="measure autograd instead of fastgrad")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        _child(opts.cases[0], opts.warmup, opts.calls, opts.autograd)
        return
    impl = _impl(opts.autograd)
    with tempfile.TemporaryDirectory() as out_dir:
        for case in opts.cases:
            calls = opts.calls * (100 if case == "asv-short" else 1)
            base = _instructions(case, opts.warmup, 0, out_dir, opts.autograd)
            more = _instructions(case, opts.warmup, calls, out_dir, opts.autograd)
            print("{} {}: {:,} instructions per gradient call".format(case, impl, (more - base) // calls))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
