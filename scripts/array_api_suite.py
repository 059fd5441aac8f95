"""Run the Array API conformance suite (data-apis/array-api-tests) against lazyx.frontends.numpy.

    python scripts/array_api_suite.py /path/to/array-api-tests --backend xla [--max-examples 20]
        [--files test_linalg.py ...] [--report out.json]

The suite is not on PyPI and is never vendored: check it out (with its `array-api` submodule,
the spec the suite reads signatures from) and give its path. Its own dependencies are the
`arrayapi` extra (`pip install -e '.[arrayapi]'`). The suite runs in a child pytest (version
2023.12, `-p no:xdist`, hypothesis's deadline off: the shared CI machines are slow and a
first call compiles), and this script prints pass/fail/skip counts, the pass rate over the
tests that ran (passed / (passed + failed)), and each failing test id with the first line of
its error.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _lazyx_path():
    """A directory from which `import lazyx` finds this checkout (.dev holds a lazyx link)."""
    dev = REPO / ".dev"
    return str(dev) if (dev / "lazyx").exists() else str(REPO.parent)


def run(suite, backend, max_examples, files, report, extra):
    env = dict(os.environ, ARRAY_API_TESTS_MODULE="lazyx.frontends.numpy",
               ARRAY_API_TESTS_VERSION="2023.12", LAZYX_BACKEND=backend)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_lazyx_path(), env.get("PYTHONPATH")) if p)
    targets = [str(Path("array_api_tests") / f) for f in files] or ["array_api_tests"]
    cmd = [sys.executable, "-m", "pytest", *targets, "-q", "-p", "no:xdist", "-p",
           "no:cacheprovider", f"--max-examples={max_examples}", "--disable-deadline",
           "--json-report", f"--json-report-file={report}", "--json-report-omit", "log",
           "streams", "warnings", *extra]
    print("running:", " ".join(cmd), f"(in {suite}, LAZYX_BACKEND={backend})", flush=True)
    subprocess.run(cmd, cwd=suite, env=env, stdout=subprocess.DEVNULL)


def summarize(report):
    data = json.loads(Path(report).read_text())
    counts = collections.Counter()
    failures = []
    for test in data["tests"]:
        outcome = test["outcome"]
        counts[outcome] += 1
        if outcome in ("failed", "error"):
            stage = next((test[k] for k in ("setup", "call", "teardown")
                          if k in test and test[k].get("outcome") == "failed"), {})
            crash = stage.get("crash", {}).get("message", "").strip().splitlines()
            failures.append((test["nodeid"], crash[0][:160] if crash else ""))
    ran = counts["passed"] + counts["failed"] + counts["error"]
    print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    if ran:
        print(f"pass rate: {counts['passed']}/{ran} = {100 * counts['passed'] / ran:.1f} % "
              f"of the tests that ran ({sum(counts.values())} collected)")
    for nodeid, message in failures:
        print(f"FAILED {nodeid} -- {message}")
    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", type=Path, help="checkout of data-apis/array-api-tests")
    parser.add_argument("--backend", default="xla", choices=("xla", "reference"))
    parser.add_argument("--max-examples", type=int, default=20)
    parser.add_argument("--files", nargs="*", default=[],
                        help="test files of the suite to run (default: all)")
    parser.add_argument("--report", help="keep the pytest-json-report file here")
    parser.add_argument("pytest_args", nargs="*", help="after --: more pytest arguments")
    args = parser.parse_args(argv)
    if not (args.suite / "array-api" / "spec" / "2023.12").is_dir():
        parser.error(f"{args.suite} has no array-api/spec/2023.12: check out the suite with "
                     f"its array-api submodule")
    with tempfile.TemporaryDirectory() as tmp:
        report = args.report or str(Path(tmp) / "report.json")
        run(args.suite.resolve(), args.backend, args.max_examples, args.files, report,
            args.pytest_args)
        counts = summarize(report)
    return 0 if counts["failed"] + counts["error"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
