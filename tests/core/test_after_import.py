"""core/after_import: code run once a module is imported, without importing it."""
import subprocess
import sys
import textwrap


def test_callbacks_run_once_the_module_is_imported_and_at_once_if_it_already_is():
    # in a fresh process: colorsys is imported by nothing before the program's own import
    program = textwrap.dedent("""
        import sys
        from lazyx.core import after_import as a
        seen = []
        a.after_import("colorsys", lambda m: seen.append(("first", m.__name__)))
        a.after_import("colorsys", lambda m: seen.append(("second", hasattr(m, "rgb_to_hsv"))))
        assert "colorsys" not in sys.modules and not seen  # waiting, nothing imported
        import colorsys
        a.after_import("colorsys", lambda m: seen.append(("third", m is colorsys)))
        print(seen, a._Finder in sys.meta_path)
    """)
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[('first', 'colorsys'), ('second', True), ('third', True)] False"
