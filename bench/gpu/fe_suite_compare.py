"""Per-file pass / fail / skip of NVIDIA's frontend test suite run twice (the real frontend, and
dnngraph through tests/python/cudnn_shim), from the two JUnit XML files, and how many of the tests
the real frontend passes dnngraph passes too (issue #18's measure).

    python3 bench/gpu/fe_suite_compare.py FRONTEND.xml[,...] DNNGRAPH.xml[,...]

A missing file (a pytest process killed at its time limit) is reported and counts as no result.
"""
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict


def outcomes(paths):
    """{(file, test name): 'pass' | 'fail' | 'skip'} of comma-separated JUnit XML files."""
    result = {}
    cases = []
    for path in paths.split(","):
        try:
            cases += list(ET.parse(path).getroot().iter("testcase"))
        except (OSError, ET.ParseError) as e:
            print(f"no results from {path}: {e}")
    for case in cases:
        file = case.get("classname", "").split(".")[0] + ".py"
        if case.find("skipped") is not None:
            state = "skip"
        elif case.find("failure") is not None or case.find("error") is not None:
            state = "fail"
        else:
            state = "pass"
        result[(file, case.get("name"))] = state
    return result


def main():
    theirs, ours = outcomes(sys.argv[1]), outcomes(sys.argv[2])
    files = sorted({f for f, _ in theirs} | {f for f, _ in ours})
    print("| file | real frontend pass/fail/skip | dnngraph pass/fail/skip | of the frontend's passes, dnngraph passes |")
    print("|---|---|---|---|")
    total_theirs = total_both = 0
    for file in files:
        count = {name: defaultdict(int) for name in ("theirs", "ours")}
        both = passed = 0
        for (f, test), state in theirs.items():
            if f != file:
                continue
            count["theirs"][state] += 1
            if state == "pass":
                passed += 1
                both += ours.get((f, test)) == "pass"
        for (f, _), state in ours.items():
            if f == file:
                count["ours"][state] += 1
        fmt = lambda c: f"{c['pass']}/{c['fail']}/{c['skip']}"
        print(f"| {file} | {fmt(count['theirs'])} | {fmt(count['ours'])} | {both} of {passed} |")
        total_theirs += passed
        total_both += both
    share = 100.0 * total_both / total_theirs if total_theirs else 0.0
    print(f"\nof the {total_theirs} tests the real frontend passes, dnngraph passes {total_both} ({share:.0f}%)")
    failing = sorted(k for k, v in theirs.items() if v == "pass" and ours.get(k) != "pass")
    for f, test in failing[:60]:
        print(f"  dnngraph {ours.get((f, test), 'absent')}: {f}::{test}")


if __name__ == "__main__":
    sys.exit(main())
