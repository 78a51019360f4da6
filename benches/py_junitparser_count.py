"""Counts a JUnit XML report with junitparser (the Python peer in parsers_vs_python.sh).

Prints the same line as `examples/parse_report.rs`: tests/passed/failed/errored/skipped.
"""
import sys

from junitparser import Error, Failure, JUnitXml, Skipped, TestSuite


def main(path):
    xml = JUnitXml.fromfile(path)
    suites = [xml] if isinstance(xml, TestSuite) else list(xml)
    passed = failed = errored = skipped = 0
    for suite in suites:
        for case in suite:
            kinds = {type(r) for r in case.result}
            if Error in kinds:
                errored += 1
            elif Failure in kinds:
                failed += 1
            elif Skipped in kinds:
                skipped += 1
            else:
                passed += 1
    total = passed + failed + errored + skipped
    print(f"tests={total} passed={passed} failed={failed} errored={errored} skipped={skipped}")


if __name__ == "__main__":
    main(sys.argv[1])
