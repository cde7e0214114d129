/*
 * djsb-stream -- the DJSB benchmark application (paper 001, sec. 2.3).
 *
 * A malleable, STREAM-like memory bandwidth program in C + OpenMP
 * (optionally + MPI).  "Based on a variant of the STREAM benchmark code"
 * (J. D. McCalpin): same four kernels, same loop forms (`#pragma omp parallel
 * for`, static schedule), same byte accounting and the same validation as
 * McCalpin's stream.c 5.10, but with run-time array sizes, a run-time amount
 * of work and a run-time (malleable) thread count.
 *
 * Build:  make -C apps        -> apps/bin/djsb-stream
 *                                apps/bin/djsb-stream-mpi (only if mpicc exists;
 *                                same source compiled with -DUSE_MPI)
 *
 * Usage:  djsb-stream [options]
 *
 *   --memory BYTES     memory per process; the three arrays a, b, c of doubles
 *                      get BYTES / (3*8) elements each.  BYTES accepts the
 *                      suffixes K, M, G, T and KiB, MiB, GiB, TiB (powers of
 *                      1024, as Slurm's --mem), KB, MB, GB, TB (powers of
 *                      1000), case-insensitive; decimals are allowed (1.5G).
 *   --elements N       elements per array, directly (exclusive with --memory;
 *                      default 10000000, STREAM 5.10's default size).
 *   --threads N        initial (= maximum) OpenMP thread count.  Default: the
 *                      OpenMP default, i.e. OMP_NUM_THREADS if set, otherwise
 *                      the number of CPUs in the affinity mask.
 *   --time SECONDS     run whole STREAM iterations (copy, scale, add, triad)
 *                      until SECONDS of wall time have passed since the first
 *                      iteration started; the iteration in progress at the
 *                      deadline is completed (so at least one iteration runs).
 *   --iterations N     run exactly N iterations (exclusive with --time;
 *                      default 10, STREAM's NTIMES).
 *   --control FILE     malleability (open stand-in for DLB-DROM): FILE holds
 *                      one integer K, the number of threads to use now.  It is
 *                      polled between kernels, at most every 20 ms (so a
 *                      change is seen within 20 ms plus one kernel).  A stat()
 *                      is the cheap test; the file is re-read when its
 *                      inode/size/mtime/ctime changed or while its mtime is
 *                      less than 2 s old (racy-timestamp rule: two writes in
 *                      one timestamp tick are not missed).  K < 1 or text
 *                      that is not one integer is ignored; K > the initial
 *                      count is clamped to it.  A missing or unreadable file
 *                      means "no change".  On a change to K the following
 *                      parallel regions use K threads and thread i of the new
 *                      team is pinned (sched_setaffinity) to the i-th CPU of
 *                      the initial process affinity mask, so the other CPUs
 *                      are really free; going back to the initial count
 *                      restores every thread's initial affinity.
 *   --output FILE      also write the JSON line to FILE.
 *   --verbose          diagnostics (thread changes, validation) on stderr.
 *   --help, --version
 *
 * Output: exactly one JSON line on stdout when the run ends (rank 0 only in
 * the MPI variant), with the fields
 *   app, version, elements, bytes_per_array, memory_bytes, threads_initial,
 *   threads_min_seen, threads_max_seen, thread_changes [[s_since_start, K]..]
 *   (changes only; the initial count is threads_initial), cpus_in_mask,
 *   iterations, mode ("time"|"iterations"), time_limit_s, elapsed_s (program
 *   start to end), loop_s (iteration loop only), max_iteration_s, start_unix,
 *   end_unix, bytes_per_kernel {copy,scale,add,triad}, best_rate_MBps,
 *   avg_time_s, min_time_s, max_time_s, validated, rel_err {a,b,c}, epsilon,
 *   mpi_ranks, pid.
 *
 * Rates are STREAM's: bytes per kernel = 2*8*N (copy, scale) and 3*8*N (add,
 * triad); best rate = 1e-6 * bytes / min time in MB/s; min/avg/max times over
 * all iterations but the first (STREAM's rule; with a single iteration, that
 * one).
 *
 * Validation is STREAM's checkSTREAMresults(): the expected values of a, b, c
 * are recomputed analytically from the iteration count and the average
 * relative absolute error of each array must be <= 1e-13.  A changing thread
 * count does not change the result: every element goes through the same
 * kernels, only the static partitioning differs.  One deviation from STREAM,
 * needed for long runs: each iteration multiplies a by 15 (scalar 3), which
 * overflows a double after ~260 iterations; so an iteration whose starting
 * expected value of a exceeds 1e100 uses the scalar 2^-30 instead of 3
 * (multiplying a by ~1.9e-9).  That choice depends only on the iteration
 * count, so the analytic recomputation follows it; the first ~84 iterations
 * are exactly STREAM's.
 *
 * MPI variant (-DUSE_MPI): every rank has its own arrays of the given size
 * and its own threads and control-file polling.  Each kernel is bracketed by
 * MPI_Barrier on every rank (as McCalpin's stream_mpi.c), so a kernel time is
 * that of the slowest rank; the aggregate rate = total bytes over all ranks /
 * (max over ranks of the min kernel time).  With --time, rank 0 decides when
 * to stop and broadcasts it, so all ranks do the same number of iterations.
 * Rank 0 prints the JSON: thread_changes are rank 0's, threads_min/max_seen
 * are over all ranks, validated is true only if every rank validated,
 * elements/bytes_per_array are per rank, bytes_per_kernel total.
 *
 * Exit status: 0 ok, 1 validation failed, 2 bad arguments (one line on
 * stderr), 3 run-time error (allocation, affinity query, writing --output).
 *
 * Testing hook: if the environment variable DJSB_STREAM_TEST_CORRUPT is set
 * to a non-empty value, a[0] is altered after the last iteration, so that the
 * validation-failure path (exit 1, "validated":false) can be tested.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#else
static int omp_get_max_threads(void) { return 1; }
static int omp_get_thread_num(void) { return 0; }
static int omp_get_num_threads(void) { return 1; }
static void omp_set_num_threads(int n) { (void)n; }
static void omp_set_dynamic(int d) { (void)d; }
#endif

#ifdef USE_MPI
#include <mpi.h>
#endif

#define APP_NAME "djsb-stream"
#define APP_VERSION 1
#define DEFAULT_ELEMENTS 10000000LL
#define DEFAULT_ITERATIONS 10LL
#define MAX_THREADS 4096
#define CONTROL_INTERVAL_S 0.020
#define CONTROL_RECENT_S 2.0
#define STREAM_SCALAR 3.0
#define RESCALE_LIMIT 1e100
#define RESCALE_SCALAR (1.0 / 1073741824.0) /* 2^-30 */
#define EPSILON 1.e-13

enum { K_COPY, K_SCALE, K_ADD, K_TRIAD, NKERNELS };
static const char *kernel_name[NKERNELS] = {"copy", "scale", "add", "triad"};

/* ------------------------------------------------------------------ state */

static int g_rank = 0, g_nranks = 1;
static int g_verbose = 0;

/* a, b, c: disjoint thirds of one block; restrict, see the kernels */
static double *restrict a, *restrict b, *restrict c;
static ssize_t N;

static int T0;          /* initial (maximum) thread count */
static int cur_threads; /* threads used by the next parallel region */
static int min_seen, max_seen;
static cpu_set_t proc_mask;    /* initial affinity mask of the process */
static int mask_cpus[CPU_SETSIZE];
static int n_mask_cpus;
static cpu_set_t *thread_mask; /* initial affinity of team member i (T0 entries) */

struct change { double t; int k; };
static struct change *changes;
static size_t n_changes, cap_changes;

static double t_start; /* monotonic time at program start */

static const char *control_path;
static struct stat control_st;
static int control_have_st;
static double control_last_check = -1e30;

/* ------------------------------------------------------------------ utils */

static double mysecond(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double unixtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void finish(int status)
{
#ifdef USE_MPI
    if (status == 0 || status == 1 || g_nranks == 1)
        MPI_Finalize();
    else
        MPI_Abort(MPI_COMM_WORLD, status);
#endif
    exit(status);
}

/* Usage error: one line on stderr, exit status 2. */
static void usage_error(const char *fmt, ...)
{
    if (g_rank == 0) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fprintf(stderr, APP_NAME ": error: %s (try --help)\n", msg);
        fflush(stderr);
    }
#ifdef USE_MPI
    MPI_Finalize();
#endif
    exit(2);
}

/* Run-time error: one line on stderr, exit status 3. */
static void fatal(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, APP_NAME ": fatal (rank %d): %s\n", g_rank, msg);
    fflush(stderr);
    finish(3);
}

static void vlog(const char *fmt, ...)
{
    if (!g_verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, APP_NAME "[%d] %.3f: ", g_rank, mysecond() - t_start);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static const char *usage_text =
    "Usage: " APP_NAME " [options]\n"
    "STREAM-like malleable memory bandwidth benchmark (DJSB, paper 001 sec. 2.3).\n"
    "\n"
    "Array size (per process; exclusive):\n"
    "  --memory BYTES     arrays a,b,c of doubles get BYTES/(3*8) elements each.\n"
    "                     Suffixes K,M,G,T,KiB,MiB,GiB,TiB = powers of 1024;\n"
    "                     KB,MB,GB,TB = powers of 1000 (case-insensitive).\n"
    "  --elements N       elements per array (default 10000000).\n"
    "Threads:\n"
    "  --threads N        initial/maximum OpenMP threads (default: OMP_NUM_THREADS,\n"
    "                     else the number of CPUs in the affinity mask).\n"
    "Work (exclusive):\n"
    "  --time SECONDS     run whole iterations (copy, scale, add, triad) until\n"
    "                     SECONDS of wall time have passed; report the count.\n"
    "  --iterations N     run exactly N iterations (default 10).\n"
    "Malleability:\n"
    "  --control FILE     FILE holds one integer K = threads to use now; polled\n"
    "                     between kernels every 20 ms; 1 <= K (clamped to the\n"
    "                     initial count); threads are re-pinned to the first K\n"
    "                     CPUs of the initial affinity mask. Missing file = no change.\n"
    "Output:\n"
    "  --output FILE      also write the JSON result line to FILE.\n"
    "  --verbose          diagnostics on stderr.\n"
    "  --help, --version\n"
    "\n"
    "Prints one JSON line on stdout. Exit status: 0 ok, 1 validation failed,\n"
    "2 bad arguments, 3 run-time error.\n";

/* ------------------------------------------------------- argument parsing */

static int parse_ll(const char *s, long long *out)
{
    char *end;
    errno = 0;
    if (!s || !*s || isspace((unsigned char)*s))
        return 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return 0;
    *out = v;
    return 1;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    if (!s || !*s || isspace((unsigned char)*s))
        return 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

/* "4G", "512MiB", "1.5GB", "1000000" -> bytes; 0 on syntax error. */
static int parse_bytes(const char *s, double *out)
{
    static const struct { const char *suf; double mul; } tab[] = {
        {"", 1.0},           {"b", 1.0},
        {"k", 1024.0},       {"kib", 1024.0},       {"kb", 1e3},
        {"m", 1048576.0},    {"mib", 1048576.0},    {"mb", 1e6},
        {"g", 1073741824.0}, {"gib", 1073741824.0}, {"gb", 1e9},
        {"t", 1099511627776.0}, {"tib", 1099511627776.0}, {"tb", 1e12},
    };
    char *end;
    if (!s || !*s || isspace((unsigned char)*s) || *s == '-' || *s == '+')
        return 0;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return 0;
    /* no hex / inf / nan forms */
    for (const char *p = s; p < end; p++)
        if (!isdigit((unsigned char)*p) && *p != '.')
            return 0;
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        if (strcasecmp(end, tab[i].suf) == 0) {
            *out = v * tab[i].mul;
            return 1;
        }
    }
    return 0;
}

struct options {
    long long elements;
    double memory;
    int have_memory, have_elements;
    int threads; /* 0 = default */
    double time_limit;
    long long iterations;
    int have_time, have_iterations;
    const char *control;
    const char *output;
};

static void parse_args(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            if (g_rank == 0)
                fputs(usage_text, stdout);
            fflush(stdout);
#ifdef USE_MPI
            MPI_Finalize();
#endif
            exit(0);
        }
        if (strcmp(arg, "--version") == 0) {
            if (g_rank == 0)
                printf(APP_NAME " %d\n", APP_VERSION);
            fflush(stdout);
#ifdef USE_MPI
            MPI_Finalize();
#endif
            exit(0);
        }
        if (strcmp(arg, "--verbose") == 0 || strcmp(arg, "-v") == 0) {
            g_verbose = 1;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0)
            usage_error("unexpected argument '%s'", arg);

        /* --name VALUE or --name=VALUE */
        char name[64];
        const char *val = NULL;
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof name)
            usage_error("unknown option '%s'", arg);
        memcpy(name, arg, len);
        name[len] = '\0';
        static const char *known[] = {"--memory", "--elements", "--threads", "--time",
                                      "--iterations", "--control", "--output"};
        int is_known = 0;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            if (strcmp(name, known[k]) == 0)
                is_known = 1;
        if (!is_known)
            usage_error("unknown option '%s'", name);
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        else
            usage_error("option %s needs a value", name);

        if (strcmp(name, "--memory") == 0) {
            if (!parse_bytes(val, &o->memory))
                usage_error("--memory: invalid size '%s'", val);
            o->have_memory = 1;
        } else if (strcmp(name, "--elements") == 0) {
            if (!parse_ll(val, &o->elements) || o->elements < 1)
                usage_error("--elements: expected a positive integer, got '%s'", val);
            o->have_elements = 1;
        } else if (strcmp(name, "--threads") == 0) {
            long long t;
            if (!parse_ll(val, &t) || t < 1 || t > MAX_THREADS)
                usage_error("--threads: expected an integer in 1..%d, got '%s'", MAX_THREADS, val);
            o->threads = (int)t;
        } else if (strcmp(name, "--time") == 0) {
            if (!parse_double(val, &o->time_limit) || !(o->time_limit > 0))
                usage_error("--time: expected a positive number of seconds, got '%s'", val);
            o->have_time = 1;
        } else if (strcmp(name, "--iterations") == 0) {
            if (!parse_ll(val, &o->iterations) || o->iterations < 1)
                usage_error("--iterations: expected a positive integer, got '%s'", val);
            o->have_iterations = 1;
        } else if (strcmp(name, "--control") == 0) {
            if (!*val)
                usage_error("--control: empty file name");
            o->control = val;
        } else if (strcmp(name, "--output") == 0) {
            if (!*val)
                usage_error("--output: empty file name");
            o->output = val;
        }
    }
    if (o->have_memory && o->have_elements)
        usage_error("--memory and --elements are mutually exclusive");
    if (o->have_time && o->have_iterations)
        usage_error("--time and --iterations are mutually exclusive");
    if (o->have_memory) {
        double e = floor(o->memory / (3.0 * sizeof(double)));
        if (e < 1)
            usage_error("--memory: %.0f bytes is less than one element per array (24 bytes)",
                        o->memory);
        o->elements = (long long)fmin(e, 9e18);
    } else if (!o->have_elements) {
        o->elements = DEFAULT_ELEMENTS;
    }
    if ((double)o->elements > (double)(SIZE_MAX / 3 / sizeof(double)) ||
        (double)o->elements > (double)PTRDIFF_MAX / 3 / sizeof(double))
        usage_error("array size of %lld elements is too large", o->elements);
    if (!o->have_time && !o->have_iterations)
        o->iterations = DEFAULT_ITERATIONS;
}

/* ------------------------------------------------ threads and malleability */

static void record_change(double now, int k)
{
    if (n_changes == cap_changes) {
        size_t cap = cap_changes ? 2 * cap_changes : 16;
        struct change *p = realloc(changes, cap * sizeof *p);
        if (!p)
            fatal("out of memory recording thread changes");
        changes = p;
        cap_changes = cap;
    }
    changes[n_changes].t = now - t_start;
    changes[n_changes].k = k;
    n_changes++;
}

/* Switch to K threads: a parallel region of K threads where each member sets
 * its own affinity (thread i -> i-th CPU of the initial process mask, or its
 * initial affinity when K is the initial count). */
static void set_threads(int k, double now)
{
    int team = 0, failed = 0;
    omp_set_num_threads(k);
#pragma omp parallel num_threads(k) reduction(+ : failed)
    {
        int id = omp_get_thread_num();
        cpu_set_t set;
        if (k == T0) {
            set = thread_mask[id];
        } else {
            CPU_ZERO(&set);
            CPU_SET(mask_cpus[id % n_mask_cpus], &set);
        }
        if (sched_setaffinity(0, sizeof set, &set) != 0)
            failed += 1;
#pragma omp master
        team = omp_get_num_threads();
    }
    if (failed)
        vlog("warning: sched_setaffinity failed for %d thread(s)", failed);
    cur_threads = team;
    if (team < min_seen)
        min_seen = team;
    if (team > max_seen)
        max_seen = team;
    record_change(now, team);
    vlog("threads -> %d (requested %d)", team, k);
}

/* Read the control file; 1 and *k on success, 0 = no change. */
static int read_control(int *k)
{
    char buf[64];
    int fd = open(control_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = buf, *end;
    while (isspace((unsigned char)*p))
        p++;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || errno)
        return 0;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return 0;
    if (v < 1)
        return 0;
    if (v > T0)
        v = T0;
    *k = (int)v;
    return 1;
}

static int same_time(struct timespec x, struct timespec y)
{
    return x.tv_sec == y.tv_sec && x.tv_nsec == y.tv_nsec;
}

/* Called between kernels with the current monotonic time. */
static void control_poll(double now)
{
    if (!control_path || now - control_last_check < CONTROL_INTERVAL_S)
        return;
    control_last_check = now;
    struct stat st;
    if (stat(control_path, &st) != 0) {
        control_have_st = 0;
        return;
    }
    double mtime = st.st_mtim.tv_sec + st.st_mtim.tv_nsec * 1e-9;
    int changed = !control_have_st || st.st_ino != control_st.st_ino ||
                  st.st_dev != control_st.st_dev || st.st_size != control_st.st_size ||
                  !same_time(st.st_mtim, control_st.st_mtim) ||
                  !same_time(st.st_ctim, control_st.st_ctim) ||
                  fabs(unixtime() - mtime) < CONTROL_RECENT_S;
    if (!changed)
        return;
    control_st = st;
    control_have_st = 1;
    int k;
    if (read_control(&k) && k != cur_threads)
        set_threads(k, now);
}

/* ---------------------------------------------------------------- kernels */
/* Same loops as McCalpin's stream.c; schedule(static) is libgomp's default
 * for STREAM's `parallel for` as well, stated here explicitly.
 * The arrays are file-scope restrict pointers (like STREAM's file-scope
 * static arrays, so GCC knows they do not overlap): with pointer parameters
 * GCC versions the loops for aliasing and does not turn copy into the
 * memcpy call it emits for STREAM (glibc's memcpy uses non-temporal stores
 * at these sizes, ~30% faster copy on the development machine). */

static void init_arrays(void)
{
    ssize_t j;
#pragma omp parallel for schedule(static)
    for (j = 0; j < N; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }
}

static void calibrate(void)
{
    ssize_t j;
#pragma omp parallel for schedule(static)
    for (j = 0; j < N; j++)
        a[j] = 2.0E0 * a[j];
}

static void stream_copy(void)
{
    ssize_t j;
#pragma omp parallel for schedule(static)
    for (j = 0; j < N; j++)
        c[j] = a[j];
}

static void stream_scale(double scalar)
{
    ssize_t j;
#pragma omp parallel for schedule(static)
    for (j = 0; j < N; j++)
        b[j] = scalar * c[j];
}

static void stream_add(void)
{
    ssize_t j;
#pragma omp parallel for schedule(static)
    for (j = 0; j < N; j++)
        c[j] = a[j] + b[j];
}

static void stream_triad(double scalar)
{
    ssize_t j;
#pragma omp parallel for schedule(static)
    for (j = 0; j < N; j++)
        a[j] = b[j] + scalar * c[j];
}

/* The scalar of an iteration, from the expected value of a at its start
 * (see the header: 3.0 as STREAM, 2^-30 when a would otherwise overflow). */
static double iteration_scalar(double aj)
{
    return fabs(aj) > RESCALE_LIMIT ? RESCALE_SCALAR : STREAM_SCALAR;
}

/* STREAM's checkSTREAMresults(), generalised to `iters` iterations.
 * Returns 1 if it validates; the average relative errors go to rel[3]. */
static int check_results(long long iters, double rel[3])
{
    double aj, bj, cj, scalar;
    double aSumErr = 0.0, bSumErr = 0.0, cSumErr = 0.0;
    ssize_t j;

    /* reproduce initialization */
    aj = 1.0;
    bj = 2.0;
    cj = 0.0;
    /* a[] is modified during timing check */
    aj = 2.0E0 * aj;
    /* now execute timing loop */
    for (long long k = 0; k < iters; k++) {
        scalar = iteration_scalar(aj);
        cj = aj;
        bj = scalar * cj;
        cj = aj + bj;
        aj = bj + scalar * cj;
    }

    /* accumulate deltas between observed and expected results */
#pragma omp parallel for schedule(static) reduction(+ : aSumErr, bSumErr, cSumErr)
    for (j = 0; j < N; j++) {
        aSumErr += fabs(a[j] - aj);
        bSumErr += fabs(b[j] - bj);
        cSumErr += fabs(c[j] - cj);
    }
    double aAvgErr = aSumErr / (double)N;
    double bAvgErr = bSumErr / (double)N;
    double cAvgErr = cSumErr / (double)N;
    rel[0] = fabs(aAvgErr / aj);
    rel[1] = fabs(bAvgErr / bj);
    rel[2] = fabs(cAvgErr / cj);

    int err = 0;
    const char *names[3] = {"a", "b", "c"};
    const double expect[3] = {aj, bj, cj};
    for (int i = 0; i < 3; i++) {
        /* written so that NaN errors fail too */
        if (!(rel[i] <= EPSILON)) {
            err++;
            fprintf(stderr,
                    APP_NAME ": rank %d: failed validation on array %s[]: expected %e, "
                             "AvgRelAbsErr %e > epsilon %e\n",
                    g_rank, names[i], expect[i], rel[i], EPSILON);
        }
    }
    if (err == 0)
        vlog("solution validates: avg error less than %e on all three arrays", EPSILON);
    return err == 0;
}

/* ----------------------------------------------------------------- output */

struct buf { char *p; size_t len, cap; };

static void bprintf(struct buf *s, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = s->cap - s->len;
        int n = vsnprintf(s->p ? s->p + s->len : NULL, s->p ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            fatal("formatting output");
        if (s->p && (size_t)n < room) {
            s->len += (size_t)n;
            return;
        }
        size_t cap = s->cap ? s->cap : 4096;
        while (cap - s->len <= (size_t)n)
            cap *= 2;
        char *p = realloc(s->p, cap);
        if (!p)
            fatal("out of memory formatting output");
        s->p = p;
        s->cap = cap;
    }
}

/* JSON number or null for non-finite values. */
static void bnum(struct buf *s, const char *fmt, double v)
{
    if (isfinite(v))
        bprintf(s, fmt, v);
    else
        bprintf(s, "null");
}

static void bstr(struct buf *s, const char *str)
{
    bprintf(s, "\"");
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        if (*p == '"' || *p == '\\')
            bprintf(s, "\\%c", *p);
        else if (*p < 0x20)
            bprintf(s, "\\u%04x", *p);
        else
            bprintf(s, "%c", *p);
    }
    bprintf(s, "\"");
}

/* ------------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    t_start = mysecond();
    double start_unix = unixtime();

#ifdef USE_MPI
    {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
        MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);
    }
#endif

    struct options opt;
    parse_args(argc, argv, &opt);
    N = (ssize_t)opt.elements;
    control_path = opt.control;

    /* --- threads and affinity --- */
    omp_set_dynamic(0);
    T0 = opt.threads > 0 ? opt.threads : omp_get_max_threads();
    if (T0 < 1)
        T0 = 1;
    if (sched_getaffinity(0, sizeof proc_mask, &proc_mask) != 0)
        fatal("sched_getaffinity: %s", strerror(errno));
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &proc_mask))
            mask_cpus[n_mask_cpus++] = cpu;
    if (n_mask_cpus == 0)
        fatal("empty CPU affinity mask");
    thread_mask = calloc((size_t)T0, sizeof *thread_mask);
    if (!thread_mask)
        fatal("out of memory");
    omp_set_num_threads(T0);
    int team = 0;
#pragma omp parallel num_threads(T0)
    {
        int id = omp_get_thread_num();
        if (sched_getaffinity(0, sizeof(cpu_set_t), &thread_mask[id]) != 0)
            thread_mask[id] = proc_mask;
#pragma omp master
        team = omp_get_num_threads();
    }
    cur_threads = team;
    min_seen = max_seen = team;
    if (team != T0)
        vlog("warning: asked for %d threads, got %d", T0, team);

    /* --- arrays: one block, a|b|c contiguous like STREAM's static arrays --- */
    size_t bytes_per_array = (size_t)N * sizeof(double);
    void *block = NULL;
    int rc = posix_memalign(&block, 4096, 3 * bytes_per_array);
    if (rc != 0 || !block)
        fatal("cannot allocate 3 x %zu bytes: %s", bytes_per_array, strerror(rc ? rc : ENOMEM));
    a = (double *)block;
    b = (double *)block + N;
    c = (double *)block + 2 * N;

    /* first touch in parallel (same partitioning as the kernels) */
    init_arrays();
    /* STREAM's timing-calibration pass (it modifies a; validation expects it) */
    calibrate();
    control_poll(mysecond());

    /* --- main loop --- */
    double bytes[NKERNELS] = {
        2.0 * sizeof(double) * (double)N, 2.0 * sizeof(double) * (double)N,
        3.0 * sizeof(double) * (double)N, 3.0 * sizeof(double) * (double)N};
    double sumtime[NKERNELS] = {0}, mintime[NKERNELS], maxtime[NKERNELS] = {0};
    double first[NKERNELS] = {0};
    for (int k = 0; k < NKERNELS; k++)
        mintime[k] = DBL_MAX;
    double max_iter = 0.0;
    long long iters = 0;
    double aj = 2.0; /* expected value of a at the start of the iteration */

#ifdef USE_MPI
    MPI_Barrier(MPI_COMM_WORLD);
#endif
    double loop_start = mysecond();
    for (;;) {
        if (opt.have_iterations || !opt.have_time) {
            if (iters >= opt.iterations)
                break;
        }
        double scalar = iteration_scalar(aj);
        double t[NKERNELS];
        double it0 = mysecond();
        for (int k = 0; k < NKERNELS; k++) {
#ifdef USE_MPI
            MPI_Barrier(MPI_COMM_WORLD);
#endif
            double t0 = mysecond();
            switch (k) {
            case K_COPY: stream_copy(); break;
            case K_SCALE: stream_scale(scalar); break;
            case K_ADD: stream_add(); break;
            default: stream_triad(scalar); break;
            }
#ifdef USE_MPI
            MPI_Barrier(MPI_COMM_WORLD);
#endif
            double t1 = mysecond();
            t[k] = t1 - t0;
            control_poll(t1);
        }
        { /* expected values, as check_results recomputes them */
            double cj = aj, bj = scalar * cj;
            cj = aj + bj;
            aj = bj + scalar * cj;
        }
        double it1 = mysecond();
        if (it1 - it0 > max_iter)
            max_iter = it1 - it0;
        for (int k = 0; k < NKERNELS; k++) {
            if (iters == 0) {
                first[k] = t[k];
                continue;
            }
            sumtime[k] += t[k];
            if (t[k] < mintime[k])
                mintime[k] = t[k];
            if (t[k] > maxtime[k])
                maxtime[k] = t[k];
        }
        iters++;
        if (opt.have_time) {
            int stop = (it1 - loop_start) >= opt.time_limit;
#ifdef USE_MPI
            MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
            if (stop)
                break;
        }
    }
    double loop_end = mysecond();

    /* --- summary (STREAM: skip the first iteration) --- */
    double avgtime[NKERNELS];
    for (int k = 0; k < NKERNELS; k++) {
        if (iters >= 2) {
            avgtime[k] = sumtime[k] / (double)(iters - 1);
        } else {
            avgtime[k] = mintime[k] = maxtime[k] = first[k];
        }
    }

    const char *corrupt = getenv("DJSB_STREAM_TEST_CORRUPT");
    if (corrupt && *corrupt)
        a[0] = a[0] * 2.0 + 1.0;
    double rel[3];
    int validated = check_results(iters, rel);
    double total_bytes[NKERNELS];
    for (int k = 0; k < NKERNELS; k++)
        total_bytes[k] = bytes[k] * g_nranks;
    int ranks_min_seen = min_seen, ranks_max_seen = max_seen;

#ifdef USE_MPI
    {
        double in[3 * NKERNELS + 1], out[3 * NKERNELS + 1];
        for (int k = 0; k < NKERNELS; k++) {
            in[k] = mintime[k];
            in[NKERNELS + k] = maxtime[k];
            in[2 * NKERNELS + k] = avgtime[k];
        }
        in[3 * NKERNELS] = max_iter;
        MPI_Allreduce(in, out, 3 * NKERNELS + 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        for (int k = 0; k < NKERNELS; k++) {
            mintime[k] = out[k];
            maxtime[k] = out[NKERNELS + k];
            avgtime[k] = out[2 * NKERNELS + k];
        }
        max_iter = out[3 * NKERNELS];
        int v = validated, vall;
        MPI_Allreduce(&v, &vall, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        validated = vall;
        MPI_Allreduce(&min_seen, &ranks_min_seen, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&max_seen, &ranks_max_seen, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        double rin[3] = {rel[0], rel[1], rel[2]};
        MPI_Allreduce(rin, rel, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
#endif

    double end_unix = unixtime();
    double t_end = mysecond();
    int status = validated ? 0 : 1;

    if (g_rank == 0) {
        struct buf s = {0};
        bprintf(&s, "{\"app\":\"" APP_NAME "\",\"version\":%d", APP_VERSION);
        bprintf(&s, ",\"elements\":%lld,\"bytes_per_array\":%zu,\"memory_bytes\":%zu",
                (long long)N, bytes_per_array, 3 * bytes_per_array);
        bprintf(&s, ",\"threads_initial\":%d,\"threads_min_seen\":%d,\"threads_max_seen\":%d", T0,
                ranks_min_seen, ranks_max_seen);
        bprintf(&s, ",\"thread_changes\":[");
        for (size_t i = 0; i < n_changes; i++)
            bprintf(&s, "%s[%.6f,%d]", i ? "," : "", changes[i].t, changes[i].k);
        bprintf(&s, "],\"cpus_in_mask\":%d", n_mask_cpus);
        bprintf(&s, ",\"control_file\":");
        if (control_path)
            bstr(&s, control_path);
        else
            bprintf(&s, "null");
        bprintf(&s, ",\"iterations\":%lld,\"mode\":\"%s\",\"time_limit_s\":", iters,
                opt.have_time ? "time" : "iterations");
        if (opt.have_time)
            bnum(&s, "%.6f", opt.time_limit);
        else
            bprintf(&s, "null");
        bprintf(&s, ",\"elapsed_s\":%.6f,\"loop_s\":%.6f,\"max_iteration_s\":%.6f", t_end - t_start,
                loop_end - loop_start, max_iter);
        bprintf(&s, ",\"start_unix\":%.6f,\"end_unix\":%.6f", start_unix, end_unix);
        bprintf(&s, ",\"bytes_per_kernel\":{");
        for (int k = 0; k < NKERNELS; k++)
            bprintf(&s, "%s\"%s\":%.0f", k ? "," : "", kernel_name[k], total_bytes[k]);
        bprintf(&s, "},\"best_rate_MBps\":{");
        for (int k = 0; k < NKERNELS; k++) {
            bprintf(&s, "%s\"%s\":", k ? "," : "", kernel_name[k]);
            bnum(&s, "%.3f", mintime[k] > 0 ? 1.0E-06 * total_bytes[k] / mintime[k] : NAN);
        }
        const char *tname[3] = {"avg_time_s", "min_time_s", "max_time_s"};
        double *tval[3] = {avgtime, mintime, maxtime};
        for (int q = 0; q < 3; q++) {
            bprintf(&s, "},\"%s\":{", tname[q]);
            for (int k = 0; k < NKERNELS; k++) {
                bprintf(&s, "%s\"%s\":", k ? "," : "", kernel_name[k]);
                bnum(&s, "%.9f", tval[q][k]);
            }
        }
        bprintf(&s, "},\"validated\":%s,\"rel_err\":{", validated ? "true" : "false");
        bprintf(&s, "\"a\":");
        bnum(&s, "%.3e", rel[0]);
        bprintf(&s, ",\"b\":");
        bnum(&s, "%.3e", rel[1]);
        bprintf(&s, ",\"c\":");
        bnum(&s, "%.3e", rel[2]);
        bprintf(&s, "},\"epsilon\":%.0e,\"mpi_ranks\":%d,\"pid\":%ld}\n", EPSILON, g_nranks,
                (long)getpid());

        fwrite(s.p, 1, s.len, stdout);
        fflush(stdout);
        if (opt.output) {
            FILE *f = fopen(opt.output, "w");
            if (!f || fwrite(s.p, 1, s.len, f) != s.len || fclose(f) != 0) {
                fprintf(stderr, APP_NAME ": fatal: cannot write %s: %s\n", opt.output,
                        strerror(errno));
                status = 3;
            }
        }
        free(s.p);
    }

    free(block);
    free(thread_mask);
    free(changes);
#ifdef USE_MPI
    MPI_Finalize();
#endif
    return status;
}
