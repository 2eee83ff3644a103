/* Scalar kernels: the arithmetic of the commonest primitives and of their reverse rules,
 * in C, for float64 scalars.
 *
 * On a NumPy float64 scalar, np.sin(x) or g * y costs a ufunc or scalar-math dispatch
 * (0.1-0.5 us) for one floating-point operation.  The engine calls these kernels instead
 * when every value involved is a float64 or a Python float (one operand of + - * / and of
 * their rules may also be an int that a double holds exactly: x * 2), and builds the
 * float64 result itself.  A kernel gives NumPy's bits on every CPU, by one of two means:
 *   - IEEE operations: + - * /, negation, |x|, x * x and sqrt are exact or correctly rounded by
 *     definition, so C and every NumPy loop (scalar or SIMD, any CPU) agree;
 *   - NumPy's own loop: for sin, cos, tan, exp, log, ..., power the kernel calls the inner loop
 *     NumPy itself runs for that ufunc on a float64 scalar (the one it selected for this
 *     CPU at import, NPY_DISABLE_CPU_FEATURES included), with the arguments NumPy passes
 *     it (n = 1 and NumPy's strides).  libm's sin and NumPy's SIMD sin may differ by an
 *     ulp; NumPy's loop and NumPy's loop cannot.  The engine binds a loop only after
 *     seeing NumPy call it (fg_probe_loop below, fastgrad/numpy/_scalar_kernels.py); an
 *     unbound kernel is never used.
 * A result that is not a normal finite number (inf, nan, zero, subnormal: the cases where
 * NumPy may warn or raise under np.errstate) is computed once more with the exception
 * flags cleared (fg_quiet_* below): a finite result that raised no flag (0 * y, a sum that
 * cancels) is kept, anything else is discarded and the Python path runs instead, so
 * warnings and errors are NumPy's own; so is the result of a NumPy loop that raised a
 * floating-point flag (an underflow inside tan, say), which NumPy would report.  Two zeros
 * are known to be exact without that (fg_sum, fg_zero_from_zero).
 * Each reverse kernel evaluates the same expression, in the same order, as the Python
 * rule it stands for in fastgrad/numpy/numpy_vjps.py (tests/test_scalar_kernels.py
 * checks them against each other); setup.py compiles this with -ffp-contract=off, so no
 * a * b + c becomes a fused multiply-add that NumPy would not do.
 */
#ifndef FASTGRAD_SCALAR_KERNELS_H
#define FASTGRAD_SCALAR_KERNELS_H

#include <math.h>
#include <float.h>
#include <fenv.h>
#include <string.h>

typedef double (*fg_kernel1)(double);
typedef double (*fg_kernel2)(double, double);
/* reverse kernels: the cotangent of one argument from g, ans and the arguments x, y */
typedef double (*fg_vjp_kernel)(double g, double ans, double x, double y);

/* What a reverse kernel reads besides g (the engine checks those values' types). */
#define FG_READS_ANS 1
#define FG_READS_X 2
#define FG_READS_Y 4
#define FG_Y_IS_TWO 8   /* the kernel stands for the rule's branch where y is the Python 2 or 2.0 */

static inline int fg_is_clean(double r) {
    double a = fabs(r);
    /* false for nan too; and for DBL_MIN itself, which a product just below it rounds up to
       with the underflow flag raised where the CPU detects tininess before rounding (x86) */
    return a > DBL_MIN && a <= DBL_MAX;
}

/* ---- NumPy's loops -------------------------------------------------------------------- */

/* A ufunc inner loop, as NumPy declares it (PyUFuncGenericFunction). */
typedef void (*fg_numpy_loop)(char **args, const Py_intptr_t *dimensions,
                              const Py_intptr_t *steps, void *data);

/* Where a ufunc keeps its float64 loop.  The table is read at every call, as NumPy does,
   so a loop replaced later (PyUFunc_ReplaceLoopBySignature) is the one called. */
typedef struct {
    fg_numpy_loop *functions;   /* the ufunc's loop table (PyUFuncObject.functions); NULL: unbound */
    void **data;                /* its loop data table (PyUFuncObject.data), may be NULL */
    int index;                  /* the entry of the float64 (, float64) -> float64 loop */
    Py_intptr_t steps[3];       /* the strides NumPy passes on scalars (inputs, then output) */
} fg_ufunc_loop;

/* the unary loops, then from FG_FIRST_BINARY the binary ones */
enum { FG_SIN, FG_COS, FG_TAN, FG_EXP, FG_LOG, FG_TANH, FG_SINH, FG_COSH, FG_ARCTAN,
       FG_LOG1P, FG_EXPM1, FG_LOG2, FG_LOG10, FG_POWER, FG_MAXIMUM, FG_MINIMUM, FG_FMAX,
       FG_FMIN, FG_N_LOOPS, FG_IEEE = -1, FG_FIRST_BINARY = FG_POWER };

/* indexed by the enum; each name is the ufunc's */
static const char *const fg_loop_names[FG_N_LOOPS] = {
    "sin", "cos", "tan", "exp", "log", "tanh", "sinh", "cosh", "arctan",
    "log1p", "expm1", "log2", "log10", "power", "maximum", "minimum", "fmax", "fmin"};
static fg_ufunc_loop fg_loops[FG_N_LOOPS];

/* The floating-point exceptions NumPy reports (np.errstate); 0 where the platform cannot
   test them, and then no loop is bound. */
#if defined(FE_DIVBYZERO) && defined(FE_OVERFLOW) && defined(FE_UNDERFLOW) && defined(FE_INVALID)
#define FG_FP_ERRORS (FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID)
#else
#define FG_FP_ERRORS 0
#endif

/* Whether one of the flags NumPy reports is up.  On x86-64 the flags of SSE arithmetic
   (all double arithmetic there: NumPy's loops and libm's included) are in MXCSR, read in
   a few cycles; fetestexcept also reads the x87 status word, which costs more than a
   kernel. */
#if FG_FP_ERRORS && (defined(__x86_64__) || defined(_M_X64))
#include <xmmintrin.h>
#define FG_MXCSR_ERRORS (_MM_EXCEPT_INVALID | _MM_EXCEPT_DIV_ZERO | _MM_EXCEPT_OVERFLOW | _MM_EXCEPT_UNDERFLOW)
static inline int fg_flags_up(void) { return (_mm_getcsr() & FG_MXCSR_ERRORS) != 0; }
#else
static inline int fg_flags_up(void) { return fetestexcept(FG_FP_ERRORS) != 0; }
#endif

/* The loop's result on one element, as NumPy computes np.<ufunc>(x) or np.<ufunc>(x, y)
   for float64 scalars: ``args`` holds the operands' addresses, then ``out``'s; NumPy's
   strides.  NaN (the Python path) when the loop is unbound or a floating-point exception
   flag is up afterwards.  NumPy clears the flags before its loop and reports what is up
   after it; the flags are not cleared here (that costs more than the loop), so a flag left
   up by earlier code also sends this one call to the Python path, where NumPy clears it. */
static inline double fg_loop_result(const fg_ufunc_loop *u, char **args, const double *out) {
    Py_intptr_t n = 1;
    if (u->functions == NULL)
        return NAN;
    u->functions[u->index](args, &n, u->steps, u->data == NULL ? NULL : u->data[u->index]);
    if (fg_flags_up())
        return NAN;
    return *out;
}

static inline double fg_run_loop(const fg_ufunc_loop *u, double x) {
    double out = 0.0;
    char *args[2] = {(char *)&x, (char *)&out};
    return fg_loop_result(u, args, &out);
}

static inline double fg_run_loop2(const fg_ufunc_loop *u, double x, double y) {
    double out = 0.0;
    char *args[3] = {(char *)&x, (char *)&y, (char *)&out};
    return fg_loop_result(u, args, &out);
}

/* A kernel's result that fg_is_clean refused, computed again with the exception flags
   cleared: kept (1, in *out) when it is finite and raised none of the flags NumPy reports,
   so that NumPy would give these bits and say nothing (a zero from a zero cotangent, the
   exact zero or subnormal of a sum).  The flags up before are put back as they were.  The
   operands go through volatile variables so that the compiler cannot move the arithmetic
   across the flag calls. */
#if FG_FP_ERRORS && (defined(__x86_64__) || defined(_M_X64))
/* (MXCSR, as in fg_flags_up: fenv.h's calls also save and load the x87 environment) */
#define FG_QUIET_BEGIN unsigned int fg_saved = _mm_getcsr(); _mm_setcsr(fg_saved & ~FG_MXCSR_ERRORS);
#define FG_QUIET_END(r) unsigned int fg_after = _mm_getcsr(); \
                        _mm_setcsr((fg_after & ~FG_MXCSR_ERRORS) | (fg_saved & FG_MXCSR_ERRORS)); \
                        *out = (r); \
                        return !(fg_after & FG_MXCSR_ERRORS) && isfinite(*out);
#elif FG_FP_ERRORS
#define FG_QUIET_BEGIN fexcept_t fg_saved; fegetexceptflag(&fg_saved, FG_FP_ERRORS); \
                       feclearexcept(FG_FP_ERRORS);
#define FG_QUIET_END(r) int fg_raised = fetestexcept(FG_FP_ERRORS); \
                        fesetexceptflag(&fg_saved, FG_FP_ERRORS); \
                        *out = (r); \
                        return !fg_raised && isfinite(*out);
#else
#define FG_QUIET_BEGIN
#define FG_QUIET_END(r) (void)(r); return 0;
#endif

/* (rare: kept out of the kernels' callers, whose common path stays short) */
#if defined(__GNUC__)
#define FG_COLD __attribute__((noinline, cold))
#define FG_NOINLINE __attribute__((noinline))
#else
#define FG_COLD
#define FG_NOINLINE
#endif

static FG_COLD int fg_quiet1(fg_kernel1 f, double x, double *out) {
    FG_QUIET_BEGIN
    volatile double r = f(x);
    FG_QUIET_END(r)
}

static FG_COLD int fg_quiet2(fg_kernel2 f, double x, double y, double *out) {
    FG_QUIET_BEGIN
    volatile double r = f(x, y);
    FG_QUIET_END(r)
}

static FG_COLD int fg_quiet_vjp(fg_vjp_kernel f, double g, double ans, double x, double y, double *out) {
    FG_QUIET_BEGIN
    volatile double r = f(g, ans, x, y);
    FG_QUIET_END(r)
}

static FG_COLD int fg_quiet_add(double a, double b, double *out) {
    volatile double va = a, vb = b;
    FG_QUIET_BEGIN
    volatile double r = va + vb;
    FG_QUIET_END(r)
}

/* a + b in *out, and whether NumPy gives these bits without a floating-point flag: a normal
   sum, or an exact cancellation (b == -a: zero, and no flag in any rounding or flush mode),
   else as fg_quiet_add decides.  (A zero cotangent added to a zero is the common case of the
   second: a gradient that has decayed to zero.) */
static inline int fg_sum(double a, double b, double *out) {
    double r = a + b;
    *out = r;
    if (fg_is_clean(r) || (r == 0.0 && a == -b))
        return 1;
    return fg_quiet_add(a, b, out);
}

/* Whether a reverse kernel's zero came from a zero cotangent: then it is exact and raised no
   flag NumPy reports.  Every reverse kernel multiplies or divides g by other values, and
   those are either checked (a NumPy loop's flags are read after it runs) or guarded (a first
   operation that may underflow gives NaN: fg_product_may_underflow); zero times a finite
   number and zero over a nonzero one are exact zeros, the rest are NaN.  A kernel added
   below must keep this so. */
static inline int fg_zero_from_zero(double g, double r) {
    return r == 0.0 && g == 0.0;
}

/* y is the int 2 or the float 2.0 (the exponent of power's squaring branch); out of line,
   so that the reverse kernels' common path stays short. */
static FG_NOINLINE int fg_is_python_two(PyObject *y) {
    int overflow = 0;
    if (PyLong_CheckExact(y))
        return PyLong_AsLongAndOverflow(y, &overflow) == 2 && !overflow;
    return PyFloat_CheckExact(y) && PyFloat_AS_DOUBLE(y) == 2.0;
}

/* Proof of which loop NumPy runs on a scalar: the engine puts fg_probe_loop in the
   ufunc's table in place of the loop, calls the ufunc on a float64 and on a float, and
   puts the loop back.  The probe records what NumPy passed and forwards to the loop, so
   the ufunc's results are unchanged meanwhile. */
typedef struct {
    fg_numpy_loop loop;         /* the loop the probe stands in for */
    int nargs;                  /* its operands and output: 2 for a unary ufunc, 3 for a binary one */
    int calls, consistent;      /* calls seen; every call had the first call's arguments */
    Py_intptr_t n, steps[3];    /* what the first call had (nargs strides) */
    void *data;
} fg_probe_record;
static fg_probe_record fg_probe;

static void fg_probe_loop(char **args, const Py_intptr_t *dimensions, const Py_intptr_t *steps,
                          void *data) {
    int k;
    if (fg_probe.calls++ == 0) {
        fg_probe.consistent = 1;
        fg_probe.n = dimensions[0];
        for (k = 0; k < fg_probe.nargs; k++)
            fg_probe.steps[k] = steps[k];
        fg_probe.data = data;
    } else {
        if (dimensions[0] != fg_probe.n || data != fg_probe.data)
            fg_probe.consistent = 0;
        for (k = 0; k < fg_probe.nargs; k++)
            if (steps[k] != fg_probe.steps[k])
                fg_probe.consistent = 0;
    }
    fg_probe.loop(args, dimensions, steps, data);
}

/* ---- forward kernels ---------------------------------------------------------------- */
static double fg_add(double x, double y) { return x + y; }
static double fg_subtract(double x, double y) { return x - y; }
static double fg_multiply(double x, double y) { return x * y; }
static double fg_divide(double x, double y) { return x / y; }
static double fg_negative(double x) { return -x; }
static double fg_square(double x) { return x * x; }
static double fg_sqrt(double x) { return sqrt(x); }
/* (clears the sign bit, as NumPy's absolute and fabs loops do: exact) */
static double fg_absolute(double x) { return fabs(x); }

#define FG_BY_NUMPY(name, loop) static double fg_np_##name(double x) { return fg_run_loop(&fg_loops[loop], x); }
FG_BY_NUMPY(sin, FG_SIN)
FG_BY_NUMPY(cos, FG_COS)
FG_BY_NUMPY(tan, FG_TAN)
FG_BY_NUMPY(exp, FG_EXP)
FG_BY_NUMPY(log, FG_LOG)
FG_BY_NUMPY(tanh, FG_TANH)
FG_BY_NUMPY(sinh, FG_SINH)
FG_BY_NUMPY(cosh, FG_COSH)
FG_BY_NUMPY(arctan, FG_ARCTAN)
FG_BY_NUMPY(log1p, FG_LOG1P)
FG_BY_NUMPY(expm1, FG_EXPM1)
FG_BY_NUMPY(log2, FG_LOG2)
FG_BY_NUMPY(log10, FG_LOG10)
#undef FG_BY_NUMPY
#define FG_BY_NUMPY2(name, loop) \
    static double fg_np_##name(double x, double y) { return fg_run_loop2(&fg_loops[loop], x, y); }
FG_BY_NUMPY2(power, FG_POWER)
FG_BY_NUMPY2(maximum, FG_MAXIMUM)
FG_BY_NUMPY2(minimum, FG_MINIMUM)
FG_BY_NUMPY2(fmax, FG_FMAX)
FG_BY_NUMPY2(fmin, FG_FMIN)
#undef FG_BY_NUMPY2

/* loop: the NumPy loop the kernel calls (it may be switched on only once that is bound),
   or FG_IEEE */
typedef struct { const char *name; fg_kernel1 f; int loop; } fg_named1;
typedef struct { const char *name; fg_kernel2 f; int loop; } fg_named2;

static const fg_named1 fg_unary_kernels[] = {
    {"negative", fg_negative, FG_IEEE}, {"square", fg_square, FG_IEEE}, {"sqrt", fg_sqrt, FG_IEEE},
    {"absolute", fg_absolute, FG_IEEE},
    {"sin", fg_np_sin, FG_SIN}, {"cos", fg_np_cos, FG_COS}, {"tan", fg_np_tan, FG_TAN},
    {"exp", fg_np_exp, FG_EXP}, {"log", fg_np_log, FG_LOG}, {"tanh", fg_np_tanh, FG_TANH},
    {"sinh", fg_np_sinh, FG_SINH}, {"cosh", fg_np_cosh, FG_COSH},
    {"arctan", fg_np_arctan, FG_ARCTAN}, {"log1p", fg_np_log1p, FG_LOG1P},
    {"expm1", fg_np_expm1, FG_EXPM1}, {"log2", fg_np_log2, FG_LOG2},
    {"log10", fg_np_log10, FG_LOG10},
    {NULL, NULL, FG_IEEE}};

static const fg_named2 fg_binary_kernels[] = {
    {"add", fg_add, FG_IEEE}, {"subtract", fg_subtract, FG_IEEE},
    {"multiply", fg_multiply, FG_IEEE}, {"divide", fg_divide, FG_IEEE},
    {"power", fg_np_power, FG_POWER}, {"maximum", fg_np_maximum, FG_MAXIMUM},
    {"minimum", fg_np_minimum, FG_MINIMUM}, {"fmax", fg_np_fmax, FG_FMAX},
    {"fmin", fg_np_fmin, FG_FMIN}, {NULL, NULL, FG_IEEE}};

/* ---- reverse kernels (the rule each mirrors, from numpy_vjps.py, in the comment) ----- */
/* (No kernel for true_divide's -g * x / y ** 2: NumPy's y ** 2 on a float64 calls the pow
   of the C library NumPy was built with, which may differ from y * y by an ulp and is not
   a loop the engine can call.) */
static double fg_v_neg_g(double g, double ans, double x, double y) { return -g; }        /* -g */
static double fg_v_g_times_y(double g, double ans, double x, double y) { return g * y; } /* g * y */
static double fg_v_x_times_g(double g, double ans, double x, double y) { return x * g; } /* x * g */
static double fg_v_g_over_y(double g, double ans, double x, double y) { return g / y; }  /* g / y */
static double fg_v_g_times_ans(double g, double ans, double x, double y) { return g * ans; } /* g * ans */
static double fg_v_g_over_x(double g, double ans, double x, double y) { return g / x; }      /* g / x */
static double fg_v_sin(double g, double ans, double x, double y) {                           /* g * cos(x) */
    return g * fg_run_loop(&fg_loops[FG_COS], x);
}
static double fg_v_cos(double g, double ans, double x, double y) {                           /* -g * sin(x) */
    return (-g) * fg_run_loop(&fg_loops[FG_SIN], x);
}
static double fg_v_sinh(double g, double ans, double x, double y) {                          /* g * cosh(x) */
    return g * fg_run_loop(&fg_loops[FG_COSH], x);
}
static double fg_v_cosh(double g, double ans, double x, double y) {                          /* g * sinh(x) */
    return g * fg_run_loop(&fg_loops[FG_SINH], x);
}
/* maximum, minimum, fmax, fmin: g times where the argument is the one selected, ties
   shared evenly: (x == ans) / (1 + (x == y)), exactly 0, 0.5 or 1 */
static double fg_v_selected_x(double g, double ans, double x, double y) {                    /* g * [x==ans] / (1+[x==y]) */
    return g * ((x == ans ? 1.0 : 0.0) / (1.0 + (x == y ? 1.0 : 0.0)));
}
static double fg_v_selected_y(double g, double ans, double x, double y) {                    /* g * [y==ans] / (1+[y==x]) */
    return g * ((y == ans ? 1.0 : 0.0) / (1.0 + (y == x ? 1.0 : 0.0)));
}
/* NumPy's sign of a float: 1, -1, 0 (for either zero), or x itself where x is nan */
static double fg_v_abs(double g, double ans, double x, double y) {                           /* g * sign(x) */
    return g * (x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : x == 0.0 ? 0.0 : x);
}
/* (x + 1 and ans + 1 below are never subnormal: a double within 2**-53 of -1 is -1) */
static double fg_v_log1p(double g, double ans, double x, double y) { return g / (x + 1.0); } /* g / (x + 1) */
static double fg_v_expm1(double g, double ans, double x, double y) { return g * (ans + 1.0); } /* g * (ans + 1) */
/* The kernels below do two operations.  The engine checks only the final result, so an
   underflow in the first operation (NumPy reports it under np.errstate(under=...)) would
   go unseen: where the first result is zero or subnormal from nonzero operands, they give
   NaN, which sends the call to the Python rule.  (A first operation that overflows makes
   the final result inf or nan, which the engine's check sees.) */
static inline int fg_product_may_underflow(double t, double a, double b) {
    return fabs(t) <= DBL_MIN && a != 0.0 && b != 0.0;
}
static double fg_v_tanh(double g, double ans, double x, double y) {                          /* g * (1 - ans * ans) */
    double t = ans * ans;
    return fg_product_may_underflow(t, ans, ans) ? NAN : g * (1.0 - t);
}
static double fg_v_sqrt(double g, double ans, double x, double y) {                          /* g * 0.5 / ans */
    double t = g * 0.5;
    return fg_product_may_underflow(t, g, 0.5) ? NAN : t / ans;
}
/* (g * 2 is exact, or inf) */
static double fg_v_square(double g, double ans, double x, double y) { return (g * 2.0) * x; } /* g * 2 * x */
static double fg_v_power_2(double g, double ans, double x, double y) {                       /* power, y 2: t * x * 2.0 */
    double t = g * x;
    return fg_product_may_underflow(t, g, x) ? NAN : t * 2.0;
}

typedef struct { const char *name; fg_vjp_kernel f; int reads; int loop; } fg_named_vjp;

static const fg_named_vjp fg_vjp_kernels[] = {
    {"-g", fg_v_neg_g, 0, FG_IEEE},
    {"g*y", fg_v_g_times_y, FG_READS_Y, FG_IEEE},
    {"x*g", fg_v_x_times_g, FG_READS_X, FG_IEEE},
    {"g/y", fg_v_g_over_y, FG_READS_Y, FG_IEEE},
    {"g*ans", fg_v_g_times_ans, FG_READS_ANS, FG_IEEE},
    {"g/x", fg_v_g_over_x, FG_READS_X, FG_IEEE},
    {"g*cos(x)", fg_v_sin, FG_READS_X, FG_COS},
    {"-g*sin(x)", fg_v_cos, FG_READS_X, FG_SIN},
    {"g*cosh(x)", fg_v_sinh, FG_READS_X, FG_COSH},
    {"g*sinh(x)", fg_v_cosh, FG_READS_X, FG_SINH},
    {"g/(x+1)", fg_v_log1p, FG_READS_X, FG_IEEE},
    {"g*sign(x)", fg_v_abs, FG_READS_X, FG_IEEE},
    {"g*(ans+1)", fg_v_expm1, FG_READS_ANS, FG_IEEE},
    {"g*[x==ans]/(1+[x==y])", fg_v_selected_x, FG_READS_ANS | FG_READS_X | FG_READS_Y, FG_IEEE},
    {"g*[y==ans]/(1+[y==x])", fg_v_selected_y, FG_READS_ANS | FG_READS_X | FG_READS_Y, FG_IEEE},
    {"g*(1-ans*ans)", fg_v_tanh, FG_READS_ANS, FG_IEEE},
    {"g*0.5/ans", fg_v_sqrt, FG_READS_ANS, FG_IEEE},
    {"g*2*x", fg_v_square, FG_READS_X, FG_IEEE},
    {"g*x*2 (y=2)", fg_v_power_2, FG_READS_X | FG_Y_IS_TWO, FG_IEEE},
    {NULL, NULL, 0, FG_IEEE}};

#endif
