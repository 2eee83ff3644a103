"""Machinery shared by the distribution modules of fastgrad.scipy.stats.

Keyword arguments are not traced by the engine, so each public function (``norm.pdf``)
is a thin wrapper that moves its keyword arguments into positions and calls a primitive
whose arguments are all positional.  That makes ``norm.pdf(x, loc=traced)`` differentiable.

Continuous location-scale families share their rules: with ``z = (x - loc) / scale`` and
the standardized log density ``l(z; shapes)``,

* logpdf = l(z) - log(scale):  d/dx = l'(z) / scale, d/dloc = -l'(z) / scale,
  d/dscale = -(z l'(z) + 1) / scale, d/dshape = dl/dshape;
* pdf = exp(logpdf): the logpdf partials times the pdf;
* cdf = F(z): d/dx = pdf, d/dloc = -pdf, d/dscale = -z pdf, d/dshape from the family
  when it has one in closed form;
* logcdf, sf, logsf follow from the cdf ones (stably, as exp(logpdf - ans)).

A family therefore only provides l'(z) and dl/dshape, written with traced functions.
"""

import numpy as onp

from ...numpy import numpy_wrapper as anp
from ...tracer import getval, primitive
from .._util import MISSING, def_elementwise, make_wrapper


def _named(f, name):
    f.__name__ = f.__qualname__ = name
    return f


class LocScaleFamily:
    """Primitives, rules and wrappers of a continuous location-scale family.

    ``dist``: the scipy.stats distribution; ``shapes``: names of its shape parameters;
    ``dz(z, *shapes)``: d l / dz; ``dshapes[i](z, *shapes)``: d l / d shape_i;
    ``dcdf_shapes[i](z, *shapes)``: d F / d shape_i (MISSING where not available)."""

    METHODS = ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf")

    def __init__(self, dist, shapes, dz, dshapes=(), dcdf_shapes=None):
        self.dist, self.shapes, self.dz = dist, list(shapes), dz
        self.dshapes = list(dshapes)
        self.dcdf_shapes = list(dcdf_shapes) if dcdf_shapes is not None else [MISSING] * len(shapes)
        self.prims = {m: self._primitive(m) for m in self.METHODS}
        self._rules()

    def _primitive(self, method):
        f = getattr(self.dist, method)
        k = len(self.shapes)

        def raw(x, *rest):
            return f(x, *rest[:k], loc=rest[k], scale=rest[k + 1])

        return primitive(_named(raw, method))

    def wrappers(self):
        params = ["x"] + self.shapes + ["loc", "scale"]
        out = {}
        for m in self.METHODS:
            doc = "{}.{}({}) with gradients; see scipy.stats.{}.{}".format(
                self.dist.name, m, ", ".join(params), self.dist.name, m
            )
            out[m] = make_wrapper(m, params, (0.0, 1.0), self.prims[m], doc)
        return out

    # ---- the rules ----------------------------------------------------------------------
    def _split(self, args):
        k = len(self.shapes)
        x, shapes, loc, scale = args[0], args[1 : 1 + k], args[1 + k], args[2 + k]
        return x, shapes, loc, scale, (x - loc) / scale

    def _logpdf_partials(self):
        """d logpdf / d (x, shapes..., loc, scale) as functions of (ans, *args)."""

        def px(ans, *args):
            x, sh, loc, scale, z = self._split(args)
            return self.dz(z, *sh) / scale

        def ploc(ans, *args):
            return -px(ans, *args)

        def pscale(ans, *args):
            x, sh, loc, scale, z = self._split(args)
            return -(z * self.dz(z, *sh) + 1.0) / scale

        def pshape(i):
            if self.dshapes[i] is MISSING:
                return MISSING

            def p(ans, *args):
                x, sh, loc, scale, z = self._split(args)
                return self.dshapes[i](z, *sh)

            return p

        return [px] + [pshape(i) for i in range(len(self.shapes))] + [ploc, pscale]

    def _rules(self):
        logpdf_parts = self._logpdf_partials()
        def_elementwise(self.prims["logpdf"], *logpdf_parts)

        def times_pdf(p):
            if p is MISSING:
                return MISSING

            def q(ans, *args):
                if onp.any(getval(ans) == 0):  # outside the support: zero, not 0 * inf
                    with onp.errstate(invalid="ignore", divide="ignore"):
                        d = ans * p(ans, *args)
                    return anp.where3(getval(ans) > 0, d, 0.0)
                return ans * p(ans, *args)

            return q

        def_elementwise(self.prims["pdf"], *[times_pdf(p) for p in logpdf_parts])

        logpdf = self.prims["logpdf"]
        # cdf-like methods: partial = sign * weight(ans, args) * (1, dF/dshape, -1, -z)
        for method, sign, weight in (
            ("cdf", 1.0, lambda ans, args: anp.exp(logpdf(*args))),
            ("sf", -1.0, lambda ans, args: anp.exp(logpdf(*args))),
            ("logcdf", 1.0, lambda ans, args: anp.exp(logpdf(*args) - ans)),
            ("logsf", -1.0, lambda ans, args: anp.exp(logpdf(*args) - ans)),
        ):
            self._cdf_rules(self.prims[method], sign, weight, method.startswith("log"))

    def _cdf_rules(self, prim, sign, weight, is_log):
        def px(ans, *args):
            return sign * weight(ans, args)

        def ploc(ans, *args):
            return -sign * weight(ans, args)

        def pscale(ans, *args):
            z = self._split(args)[4]
            return -sign * weight(ans, args) * z

        def pshape(i):
            dF = self.dcdf_shapes[i]
            if dF is MISSING:
                return MISSING

            def p(ans, *args):
                x, sh, loc, scale, z = self._split(args)
                d = sign * dF(z, *sh)
                return d * anp.exp(-ans) if is_log else d

            return p

        def_elementwise(prim, px, *[pshape(i) for i in range(len(self.shapes))], ploc, pscale)


def install(module_globals, family):
    """Put the family's wrapped methods into a distribution module's namespace."""
    w = family.wrappers()
    module_globals.update(w)
    return sorted(w)
