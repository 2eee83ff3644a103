"""Numbers and cells of the benchmark report: medians, ratios of medians, units."""

import statistics

TOLERANCE = 1e-10  # PERF.md: every gradient within this relative error of autograd's


def median(res):
    return statistics.median(res["times"]) if res and res.get("times") else None


def ratio(num, den):
    """num / den of two medians, None when either is missing."""
    return num / den if num and den else None


def fmt_time(t, unit_of=None):
    """'1.23 ms'; with ``unit_of``, in that value's unit and without the unit's name."""
    ref = t if unit_of is None else unit_of
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if ref >= scale or unit == "ns":
            v = t / scale  # a max of 1650 us next to a median of 988 us stays "1650"
            return (f"{v:.3g}" if v < 1000 else f"{v:.0f}") + ("" if unit_of is not None else f" {unit}")


def fmt_bytes(b):
    if b is None:
        return "—"
    sign, b = ("-", -b) if b < 0 else ("", b)
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= scale:
            return f"{sign}{b / scale:.3g} {unit}"
    return f"{sign}{b} B"


def fmt_ns(t):
    """Seconds as a count of nanoseconds: '1,234' or '56.7'."""
    ns = t * 1e9
    return f"{ns:,.0f}" if ns >= 100 else f"{ns:.3g}"


def fmt_x(v):
    return "—" if v is None else f"{v:.3g}x"


def time_cell(res):
    """'1.68 ms (1.67–1.73)': median (min–max over the rounds) of one result."""
    if res is None:
        return "—"
    if "error" in res:
        return "error"
    if not res.get("times"):
        return "—"
    t, m = res["times"], statistics.median(res["times"])
    if len(t) == 1:
        return f"{fmt_time(m)} (1 round)"
    return f"{fmt_time(m)} ({fmt_time(min(t), m)}–{fmt_time(max(t), m)})"


def mark(ok):
    return "?" if ok is None else ("✓" if ok else "✗ **missed**")


def met(ok):
    """The #16 acceptance wording: met / missed / not measured."""
    return "? not measured" if ok is None else ("✓ met" if ok else "✗ **missed**")


def fmt_err(err):
    if err is None:
        return "—"
    return f"{err:.1e}" + ("" if err <= TOLERANCE else " **FAIL**")
