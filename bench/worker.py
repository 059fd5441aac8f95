"""`python -m lazyx.bench.worker SYSTEM W1,W2,.. [--quick]`: one system, one process.

Prints one tagged JSON line per workload on stdout (the parent reads only those lines).
"""
import json
import sys

from .harness import PLANS, RESULT_TAG, run_system_here


def main(argv):
    system, workloads = argv[0], argv[1].split(",")
    plan = PLANS["quick" if "--quick" in argv[2:] else "full"]
    for result in run_system_here(system, workloads, plan):
        print(RESULT_TAG + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
