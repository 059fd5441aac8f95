"""Prints the equivalence table: program x frontend x backend -> graph hash, max error vs eager.

    python tests/equivalence/table.py            # both backends (one subprocess each)
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _rows_for_this_backend():
    import lazyx
    from corpus import PROGRAMS, make_inputs
    from harness import FRONTENDS, available, max_error, run_eager, run_lazy
    rows = []
    for program in PROGRAMS:
        arrays = make_inputs(program)
        for f in FRONTENDS:
            if not available(f) or f not in program.frontends:
                continue
            try:
                digest, result = run_lazy(program, f, arrays)
                err = max_error(result, run_eager(program, f, arrays)) if program.eager_comparable else None
            except Exception as exc:  # a row per failure: the table is a report, not a test
                digest, err = f"error: {type(exc).__name__}: {exc}"[:60], None
            rows.append({"program": program.name, "frontend": f, "backend": lazyx.backend(),
                         "hash": digest, "max_err": err})
    return rows


def main():
    if os.environ.get("_LAZYX_TABLE_CHILD"):
        print(json.dumps(_rows_for_this_backend()))
        return
    rows = []
    for backend in ("xla", "reference"):
        env = dict(os.environ, LAZYX_BACKEND=backend, _LAZYX_TABLE_CHILD="1")
        out = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True)
        if out.returncode:
            print(out.stderr, file=sys.stderr)
            sys.exit(out.returncode)
        rows += json.loads(out.stdout.strip().splitlines()[-1])
    print("| program | frontend | backend | graph hash | max err vs eager | same hash as others |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        peers = {x["hash"] for x in rows if x["program"] == r["program"] and x["backend"] == r["backend"]}
        err = "n/a (own stream)" if r["max_err"] is None else f"{r['max_err']:.2e}"
        print(f"| {r['program']} | {r['frontend']} | {r['backend']} | {r['hash']} | {err} | "
              f"{'yes' if len(peers) == 1 else 'NO'} |")


if __name__ == "__main__":
    main()
