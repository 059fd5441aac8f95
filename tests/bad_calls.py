"""The bad-call corpora's shared judge (tests/frontends/*/test_bad_calls.py, docs/errors.md).

Each corpus entry is a source line run twice: on the eager framework, where it must raise, and
through lazyx, where it must raise at the call an instance of the framework's own (public)
exception type. Anything else is classified: a wrong type, an error only when the value is
read ("late"), or no error at all ("silent": a wrong value the user never hears about).
"""
import warnings

OUTCOMES = ("at the call, framework's type", "at the call, other type", "late", "silent",
            "not a bad call in eager")


def public_type(error_type):
    """NumPy raises private subclasses (_ArrayMemoryError): judge by the public base."""
    for k in error_type.__mro__:
        if not k.__qualname__.startswith("_"):
            return k
    return error_type


def judge(run, force, source):
    """(outcome, eager error, lazy error) for one corpus line; run(source, lazy) evaluates it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            run(source, False)
        except Exception as err:  # noqa: BLE001
            eager = err
        else:
            return OUTCOMES[4], None, None
        try:
            result = run(source, True)
        except Exception as err:  # noqa: BLE001
            kind = OUTCOMES[0] if isinstance(err, public_type(type(eager))) else OUTCOMES[1]
            return kind, eager, err
        try:
            force(result)
        except Exception as err:  # noqa: BLE001
            return OUTCOMES[2], eager, err
        return OUTCOMES[3], eager, None


def table(frontend, calls, run, force):
    """Markdown rows: the counts per outcome, then each call that missed."""
    counts = dict.fromkeys(OUTCOMES, 0)
    misses = []
    for name, source in calls:
        kind, eager, lazy = judge(run, force, source)
        counts[kind] += 1
        if kind != OUTCOMES[0]:
            misses.append(f"  {name}: {kind} (eager {type(eager).__name__}, "
                          f"lazy {type(lazy).__name__ if lazy else None})")
    bad = len(calls) - counts[OUTCOMES[4]]
    row = f"| {frontend} | {bad} | " + " | ".join(str(counts[k]) for k in OUTCOMES[:4]) + " |"
    return "\n".join([row] + misses)
