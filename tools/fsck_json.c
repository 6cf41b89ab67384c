/*
 * fsck_json.c - the JSON report of fsck.miscfs (-j FILE, --json FILE).
 *
 * One document, written as the check goes: the head, each problem as it is
 * answered, and the result at the end, so a check that finds a million
 * problems keeps none of them in memory.
 *
 * Strings: entry names may hold any byte but '/' and NUL, and JSON wants
 * UTF-8.  Valid UTF-8 passes through as it is; '"', '\\' and the control
 * bytes (below 0x20, and 0x7f) are escaped; every byte that is not part of
 * a valid UTF-8 sequence is written as the lone surrogate \udcXX (XX the
 * byte, 80 to ff), as Python's "surrogateescape" does, so the exact bytes
 * can be had back: name.encode("utf-8", "surrogateescape").
 */
#include "fsck_cli.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

/* The length of the valid UTF-8 sequence that starts at @s, of @left > 0
 * bytes, or 0 when none does: overlong forms, surrogates and code points
 * past U+10FFFF are not valid. */
static size_t utf8_len(const unsigned char *s, size_t left)
{
	static const uint32_t least[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t n;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1fu;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0fu;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07u;
	else
		return 0;
	if (n > left)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void cli_json_bytes(FILE *f, const char *bytes, size_t len)
{
	const unsigned char *s = (const unsigned char *)bytes, *end = s + len;

	fputc('"', f);
	while (s < end) {
		size_t n = utf8_len(s, (size_t)(end - s));

		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if (*s < 0x20 || *s == 0x7f)
			fprintf(f, "\\u%04x", *s);
		else if (n)
			fwrite(s, 1, n, f);
		else
			fprintf(f, "\\udc%02x", *s);
		s += n ? n : 1;
	}
	fputc('"', f);
}

void cli_json_string(FILE *f, const char *s)
{
	if (s)
		cli_json_bytes(f, s, strlen(s));
	else
		fputs("null", f);
}

static void field_str(FILE *f, const char *indent, const char *key, const char *val)
{
	fprintf(f, "%s\"%s\": ", indent, key);
	cli_json_string(f, val);
}

int cli_json_open(struct cli_json *j, const char *path, const char *image,
		  const char *mode)
{
	memset(j, 0, sizeof(*j));
	if (!strcmp(path, "-")) {
		j->f = stdout;
	} else {
		j->f = fopen(path, "we");
		if (!j->f)
			return -errno;
		j->close = true;
	}
	fprintf(j->f, "{\n  \"program\": \"fsck.miscfs\",\n  \"version\": \"%s\",\n",
		MISCFS_VERSION);
	field_str(j->f, "  ", "image", image);
	fputs(",\n", j->f);
	field_str(j->f, "  ", "mode", mode);
	fputs(",\n  \"problems\": [", j->f);
	return 0;
}

void cli_json_problem(struct cli_json *j, const struct fsck_report *r,
		      enum fsck_answer answer)
{
	FILE *f = j->f;

	fputs(j->any_problem ? ",\n    {" : "\n    {", f);
	j->any_problem = true;
	field_str(f, "", "code", r->code);
	field_str(f, ", ", "pass", cli_pass_name(r->pass));
	field_str(f, ", ", "message", r->message);
	field_str(f, ", ", "question", r->question);
	field_str(f, ", ", "answer", r->question ? cli_answer_name(answer) : NULL);
	fprintf(f, ", \"preen_ok\": %s, \"inode\": %" PRIu32 ", \"dir\": %" PRIu32
		", \"block\": %" PRIu64 ", \"group\": %" PRIu32,
		r->preen_ok ? "true" : "false", r->ino, r->dir, r->block, r->group);
	fputs(", \"name\": ", f);
	if (r->name)
		cli_json_bytes(f, r->name, r->name_len);
	else
		fputs("null", f);
	fputc('}', f);
}

static void write_flags(FILE *f, const struct fsck_result *r, int exit_status)
{
	static const char *const fmt = "  \"%s\": %s,\n";

	fprintf(f, fmt, "skipped_clean", r->skipped_clean ? "true" : "false");
	fprintf(f, fmt, "recovered", r->recovered ? "true" : "false");
	fprintf(f, fmt, "needs_recovery", r->needs_recovery ? "true" : "false");
	fprintf(f, fmt, "preen_halted", r->preen_halted ? "true" : "false");
	fprintf(f, fmt, "changed", r->changed ? "true" : "false");
	fprintf(f, fmt, "cancelled", exit_status & FSCK_EXIT_CANCELED ? "true" : "false");
}

static void write_counts(FILE *f, const struct fsck_result *r)
{
	const struct { const char *key; uint64_t v; } n[] = {
		{ "problems", r->problems }, { "fixed", r->fixed },
		{ "inodes_used", r->inodes_used }, { "inodes_count", r->inodes_count },
		{ "blocks_used", r->blocks_used }, { "blocks_count", r->blocks_count },
		{ "regular", r->regular }, { "directories", r->directories },
		{ "symlinks", r->symlinks }, { "fast_symlinks", r->fast_symlinks },
		{ "chrdevs", r->chrdevs }, { "blkdevs", r->blkdevs },
		{ "fifos", r->fifos }, { "sockets", r->sockets },
		{ "hard_links", r->hard_links }, { "noncontig", r->noncontig },
		{ "ind_blocks", r->ind_blocks }, { "dind_blocks", r->dind_blocks },
		{ "tind_blocks", r->tind_blocks }, { "xattr_blocks", r->xattr_blocks },
		{ "largest_file", r->largest_file },
	};

	fputs("  \"counts\": {", f);
	for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++)
		fprintf(f, "%s\n    \"%s\": %" PRIu64, i ? "," : "", n[i].key, n[i].v);
	fputs("\n  }\n}\n", f);
}

int cli_json_close(struct cli_json *j, int exit_status, const struct fsck_result *res,
		   bool checked, const char *error)
{
	FILE *f = j->f;
	int err = 0;

	fputs(j->any_problem ? "\n  ],\n" : "],\n", f);
	fprintf(f, "  \"exit\": %d,\n  \"checked\": %s,\n", exit_status,
		checked ? "true" : "false");
	field_str(f, "  ", "error", error);
	fputs(",\n", f);
	field_str(f, "  ", "label", checked ? res->label : NULL);
	fputs(",\n", f);
	write_flags(f, res, exit_status);
	write_counts(f, res);
	errno = 0;
	if (fflush(f) || ferror(f))
		err = -(errno ? errno : EIO);
	if (j->close && fclose(f) && !err)
		err = -errno;
	j->f = NULL;
	return err;
}
