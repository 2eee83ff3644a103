"""The one switch between the compiled engine and its pure-Python twin.

FASTGRAD_PURE=1 forces the pure engine.  If the compiled one cannot be imported, the pure
one is used with a single warning, unless FASTGRAD_REQUIRE_EXTENSIONS=1 (CI sets it), in
which case the import error propagates: a silent fallback would make fastgrad slow unnoticed.
"""

import os
import warnings


def _flag(name):
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


if _flag("FASTGRAD_PURE"):
    from . import _core_py as engine

    COMPILED = False
else:
    try:
        from . import _core as engine

        COMPILED = True
    except ImportError as exc:
        if _flag("FASTGRAD_REQUIRE_EXTENSIONS"):
            raise ImportError(
                "fastgrad's compiled engine (fastgrad._core) is required "
                "(FASTGRAD_REQUIRE_EXTENSIONS=1) but could not be imported: {}".format(exc)
            ) from exc
        warnings.warn(
            "fastgrad: the compiled engine could not be imported ({}); using the slower "
            "pure-Python engine. Reinstall fastgrad with a C compiler to fix this.".format(exc),
            RuntimeWarning,
            stacklevel=2,
        )
        from . import _core_py as engine  # noqa: F401  (the module's one export)

        COMPILED = False
