/*
 * fsck_cli.h - the parts of fsck.miscfs: its options and state
 * (fsck_main.c), what it shows on the terminal (fsck_show.c) and the JSON
 * report (fsck_json.c).  The checker itself is the fsck/ layer.
 */
#ifndef MISCFS_FSCK_CLI_H
#define MISCFS_FSCK_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fsck.h"

/* ---- the JSON report (fsck_json.c) --------------------------------------- */

struct cli_json {
	FILE *f;
	bool close;              /* a file we opened, not stdout */
	bool any_problem;        /* a problem was written: the next needs a comma */
};

/* Open @path ("-": stdout) and write the document's head.  -errno. */
int cli_json_open(struct cli_json *j, const char *path, const char *image,
		  const char *mode);
void cli_json_problem(struct cli_json *j, const struct fsck_report *r,
		      enum fsck_answer answer);
/* Write the tail (@error: why nothing was checked, or NULL) and close.
 * -errno when the report could not be written whole. */
int cli_json_close(struct cli_json *j, int exit_status, const struct fsck_result *res,
		   bool checked, const char *error);
/* @len bytes at @s as a JSON string with its quotes (see fsck_json.c for
 * the bytes that are not UTF-8); the string @s, or null. */
void cli_json_bytes(FILE *f, const char *s, size_t len);
void cli_json_string(FILE *f, const char *s);

/* ---- the program's state ------------------------------------------------- */

struct cli_bar {
	bool on;                 /* -C 0 and stdout is a terminal */
	bool drawn;              /* a bar is on the screen now */
	enum fsck_pass pass;
	uint64_t last_done;      /* what the last redraw or line showed */
	uint64_t last_ns;        /* of the last redraw or progress line */
};

struct cli {
	/* options */
	const char *image;
	enum fsck_mode mode;
	char mode_opt;           /* the letter that chose it; 0: none given */
	bool force, verbose, dir_index;
	int progress_fd;         /* -C: -1 none, 0 a bar on stdout, N > 0 lines
	                            to fd N */
	const char *json_path;
	/* while running */
	const struct fsck_result *res;   /* being filled by fsck_run */
	FILE *out;               /* stdout, or stderr when the JSON goes there */
	bool yes_to_all;         /* 'a' was answered */
	bool told_recovery;
	struct cli_bar bar;
	struct cli_json json;
	bool json_on;
};

/* Set by SIGINT and SIGTERM; fsck_run stops at the next problem. */
extern volatile sig_atomic_t cli_cancel;
/* -C N<0 starts with progress off; SIGUSR1 turns it on, SIGUSR2 off. */
extern volatile sig_atomic_t cli_progress_on;

/* ---- what the terminal shows (fsck_show.c) ------------------------------- */

const char *cli_pass_name(enum fsck_pass pass);
const char *cli_answer_name(enum fsck_answer a);
enum fsck_answer cli_on_problem(void *arg, const struct fsck_report *r);
void cli_on_pass(void *arg, enum fsck_pass pass, const char *title);
void cli_on_progress(void *arg, enum fsck_pass pass, uint64_t done, uint64_t total);
void cli_bar_clear(struct cli *c);
/* The lines after the run: modified, warnings, the summary, -v. */
void cli_show_result(struct cli *c, const struct fsck_result *res);

#endif /* MISCFS_FSCK_CLI_H */
