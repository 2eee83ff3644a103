"""Compare two JUnit XML reports of the same test selection: one run on autograd, one with
``autograd`` bound to fastgrad.  Prints the counts, every test that passed on autograd but not on
fastgrad (a regression: exit status 1), and every test that failed on autograd but passed on
fastgrad.

    python compare.py autograd.xml fastgrad.xml
"""

import sys
import xml.etree.ElementTree as ET


def outcomes(path):
    """{(class name, test name): "passed" | "failed" | "skipped"} of a JUnit XML report."""
    result = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped" and outcome == "passed":
                outcome = "skipped"
        result[(case.get("classname"), case.get("name"))] = outcome
    return result


def main(reference_path, candidate_path):
    reference, candidate = outcomes(reference_path), outcomes(candidate_path)
    for name, runs in (("autograd", reference), ("fastgrad", candidate)):
        counts = {o: sum(1 for v in runs.values() if v == o) for o in ("passed", "failed", "skipped")}
        print("{}: {} tests, {passed} passed, {failed} failed, {skipped} skipped".format(name, len(runs), **counts))
    missing = sorted(set(reference) - set(candidate))
    regressions = sorted(k for k, v in reference.items() if v == "passed" and candidate.get(k, "passed") != "passed")
    fixed = sorted(k for k, v in reference.items() if v == "failed" and candidate.get(k) == "passed")
    for label, keys in (("not run under fastgrad", missing), ("regressions", regressions), ("fixed", fixed)):
        print("{}: {}".format(label, len(keys)))
        for cls, test in keys:
            print("  {}::{}".format(cls, test))
    return 1 if regressions or missing else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
