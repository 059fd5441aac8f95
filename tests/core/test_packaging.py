"""The wheel ships every package of the source tree (a missing entry only shows up installed)."""
import os

try:
    import tomllib
except ImportError:  # Python 3.10: the same parser, as the tomli package (the test extra)
    import tomli as tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOT_SHIPPED = {"tests", "build", "dist", "docs", "examples", "scripts", "benchmarks"}


def _source_packages():
    found = {"lazyx"}
    for folder, dirs, files in os.walk(ROOT):
        rel = os.path.relpath(folder, ROOT)
        top = rel.split(os.sep)[0]
        if rel != "." and (top in NOT_SHIPPED or top.startswith(".")):
            dirs[:] = []
            continue
        if rel != "." and "__init__.py" in files:
            found.add("lazyx." + rel.replace(os.sep, "."))
    return found


def test_every_source_package_is_in_the_wheel():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        listed = set(tomllib.load(f)["tool"]["setuptools"]["packages"])
    assert _source_packages() == listed
