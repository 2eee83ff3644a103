/* Scalar kernels: the arithmetic of the commonest primitives and of their reverse rules,
 * in C, for float64 scalars.
 *
 * On a NumPy float64 scalar, np.sin(x) or g * y costs a ufunc or scalar-math dispatch
 * (0.1-0.5 us) for one floating-point operation.  The engine calls these kernels instead
 * when every value involved is a float64 or a Python float, and builds the float64 result
 * itself.  A kernel is used only where its result is bit for bit NumPy's:
 *   - + - * / and negation are IEEE operations, the same in NumPy and in C;
 *   - a kernel is switched on only after fastgrad.numpy has checked at import that it
 *     gives the same bits as the NumPy function or Python rule it stands for, on this
 *     machine (libm and NumPy's own loops may differ: fastgrad/numpy/_scalar_kernels.py);
 *   - a result that is not a normal finite number (inf, nan, zero, subnormal: the cases
 *     where NumPy may warn or raise under np.errstate) is discarded and the Python path
 *     runs instead, so warnings and errors are NumPy's own.
 * Each reverse kernel evaluates the same expression, in the same order, as the Python
 * rule it stands for in fastgrad/numpy/numpy_vjps.py (tests/test_scalar_kernels.py
 * checks them against each other); setup.py compiles this with -ffp-contract=off, so no
 * a * b + c becomes a fused multiply-add that NumPy would not do.
 */
#ifndef FASTGRAD_SCALAR_KERNELS_H
#define FASTGRAD_SCALAR_KERNELS_H

#include <math.h>
#include <float.h>
#include <string.h>

typedef double (*fg_kernel1)(double);
typedef double (*fg_kernel2)(double, double);
/* reverse kernels: the cotangent of one argument from g, ans and the arguments x, y */
typedef double (*fg_vjp_kernel)(double g, double ans, double x, double y);

/* What a reverse kernel reads besides g (the engine checks those values' types). */
#define FG_READS_ANS 1
#define FG_READS_X 2
#define FG_READS_Y 4

static inline int fg_is_clean(double r) {
    double a = fabs(r);
    return a >= DBL_MIN && a <= DBL_MAX;   /* false for nan too */
}

/* ---- forward kernels ---------------------------------------------------------------- */
static double fg_add(double x, double y) { return x + y; }
static double fg_subtract(double x, double y) { return x - y; }
static double fg_multiply(double x, double y) { return x * y; }
static double fg_divide(double x, double y) { return x / y; }
static double fg_negative(double x) { return -x; }
static double fg_square(double x) { return x * x; }

typedef struct { const char *name; fg_kernel1 f; } fg_named1;
typedef struct { const char *name; fg_kernel2 f; } fg_named2;

/* libm functions: enabled per function after the import-time check */
static const fg_named1 fg_unary_kernels[] = {
    {"negative", fg_negative}, {"square", fg_square},
    {"sin", sin}, {"cos", cos}, {"tan", tan}, {"exp", exp}, {"log", log},
    {"sqrt", sqrt}, {"tanh", tanh}, {"sinh", sinh}, {"cosh", cosh}, {"arctan", atan},
    {"log1p", log1p}, {"expm1", expm1}, {"log2", log2}, {"log10", log10},
    {NULL, NULL}};

static const fg_named2 fg_binary_kernels[] = {
    {"add", fg_add}, {"subtract", fg_subtract}, {"multiply", fg_multiply},
    {"divide", fg_divide}, {NULL, NULL}};

/* ---- reverse kernels (the rule each mirrors, from numpy_vjps.py, in the comment) ----- */
static double fg_v_neg_g(double g, double ans, double x, double y) { return -g; }        /* -g */
static double fg_v_g_times_y(double g, double ans, double x, double y) { return g * y; } /* g * y */
static double fg_v_x_times_g(double g, double ans, double x, double y) { return x * g; } /* x * g */
static double fg_v_g_over_y(double g, double ans, double x, double y) { return g / y; }  /* g / y */
/* NumPy's y ** 2 on a float64 calls libm's pow, which here can differ from y * y by an
   ulp; called through a pointer, the compiler cannot turn pow(y, 2.0) into y * y. */
static double (*volatile fg_libm_pow)(double, double) = pow;
static double fg_v_div_y(double g, double ans, double x, double y) {                      /* -g * x / y ** 2 */
    return ((-g) * x) / fg_libm_pow(y, 2.0);
}
static double fg_v_g_times_ans(double g, double ans, double x, double y) { return g * ans; } /* g * ans */
static double fg_v_g_over_x(double g, double ans, double x, double y) { return g / x; }      /* g / x */
static double fg_v_sin(double g, double ans, double x, double y) { return g * cos(x); }      /* g * cos(x) */
static double fg_v_cos(double g, double ans, double x, double y) { return (-g) * sin(x); }   /* -g * sin(x) */
static double fg_v_tanh(double g, double ans, double x, double y) {                          /* g * (1 - ans * ans) */
    return g * (1.0 - ans * ans);
}
static double fg_v_sqrt(double g, double ans, double x, double y) { return (g * 0.5) / ans; } /* g * 0.5 / ans */
static double fg_v_square(double g, double ans, double x, double y) { return (g * 2.0) * x; } /* g * 2 * x */

typedef struct { const char *name; fg_vjp_kernel f; int reads; } fg_named_vjp;

static const fg_named_vjp fg_vjp_kernels[] = {
    {"-g", fg_v_neg_g, 0},
    {"g*y", fg_v_g_times_y, FG_READS_Y},
    {"x*g", fg_v_x_times_g, FG_READS_X},
    {"g/y", fg_v_g_over_y, FG_READS_Y},
    {"-g*x/y**2", fg_v_div_y, FG_READS_X | FG_READS_Y},
    {"g*ans", fg_v_g_times_ans, FG_READS_ANS},
    {"g/x", fg_v_g_over_x, FG_READS_X},
    {"g*cos(x)", fg_v_sin, FG_READS_X},
    {"-g*sin(x)", fg_v_cos, FG_READS_X},
    {"g*(1-ans*ans)", fg_v_tanh, FG_READS_ANS},
    {"g*0.5/ans", fg_v_sqrt, FG_READS_ANS},
    {"g*2*x", fg_v_square, FG_READS_X},
    {NULL, NULL, 0}};

#endif
