/*
 * mfsx.h - the random-operation exerciser's shared pieces: options, the
 * seeded generator, the operation log and the failure report.
 *
 * Every choice a run makes comes from one generator seeded by -S and from
 * the in-memory model, never from what the filesystem answered, so the
 * same command line replays the same operations up to the first mismatch.
 */
#ifndef MFSX_H
#define MFSX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How many of the most recent operations a failure report shows. */
#define MFSX_LOG_SHOWN 20

struct mfsx_opts {
	unsigned long nops;          /* -N: operations to run */
	uint64_t seed;               /* -S: never 0 once parsed */
	uint64_t maxlen;             /* -l: largest file (file mode) */
	uint64_t maxoplen;           /* -o: longest read or write */
	unsigned long check_every;   /* -k: full compare or walk every K ops */
	unsigned long reopen_every;  /* -c: close and reopen every N ops */
	unsigned long inject_op;     /* -Z: corrupt this op's data, 0 = never */
	unsigned long maxents;       /* -n: most entries in the tree */
	uint64_t disabled;           /* one bit per op kind of the mode */
	bool tree;                   /* -T: namespace operations */
	bool big;                    /* -B: sparse file past 4 GiB */
	bool quiet;                  /* -q */
	bool verbose;                /* -v: print every operation */
	bool keep;                   /* -K: leave the file or tree behind */
	const char *dir;             /* where to work */
	const char *name;            /* -f: file or tree name inside dir */
	const char *prog;            /* argv[0], for the reproduce line */
	char *xlist;                 /* -x, as given, for the reproduce line */
};

extern struct mfsx_opts mfsx_opt;

/* The number of the operation running now, 1-based; 0 before the first. */
extern unsigned long mfsx_opno;

/* One op kind of a mode: its name for -x and its share of the choices. */
struct mfsx_opkind {
	const char *name;
	unsigned weight;
};

/* The op kinds of each mode, indexed by the mode's own enum. */
extern const struct mfsx_opkind mfsx_file_kinds[];
extern const unsigned mfsx_file_nkinds;
extern const struct mfsx_opkind mfsx_tree_kinds[];
extern const unsigned mfsx_tree_nkinds;

/* The generator: splitmix64 stepped from the seed. */
uint64_t mfsx_rand(void);
/* Uniform in [0, n); n > 0. */
uint64_t mfsx_below(uint64_t n);
/* A stateless 64-bit hash; data patterns use it so bytes name their op. */
uint64_t mfsx_mix(uint64_t x);
/* An op kind by weight among those not disabled. */
unsigned mfsx_pick_kind(const struct mfsx_opkind *kinds, unsigned n);

/* Records one line for the current op (printed at once with -v). */
void mfsx_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A failure report: mfsx_fail_begin prints the headline, the caller may
 * print details to stderr, mfsx_fail_end prints the recent operations and
 * the command line that replays the run, and exits 1.
 */
void mfsx_fail_begin(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void mfsx_fail_end(void);
_Noreturn void mfsx_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Removes a file or a whole tree; 0, or -1 with errno. */
int mfsx_remove_all(const char *path);

int mfsx_file_run(void);
int mfsx_tree_run(void);

#endif
