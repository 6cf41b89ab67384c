/*
 * t_fsck_json - the strings of fsck.miscfs's JSON report: valid UTF-8
 * passes through, quotes, backslashes and control bytes are escaped, and
 * every byte outside a valid UTF-8 sequence becomes \udcXX, so that any
 * entry name is valid JSON and its bytes can be had back.
 */
#include <unistd.h>

#include "fsck_cli.h"
#include "t.h"

static void check(const char *in, const char *want)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	t_assert(f, "open_memstream");
	cli_json_string(f, in);
	t_assert(fclose(f) == 0, "fclose");
	if (strcmp(buf, want))
		t_fail("'%s' gave %s, expected %s", in ? in : "(null)", buf, want);
	free(buf);
}

/* Bytes with a length: a NUL is a byte like another, and a sequence cut
 * by the length is not UTF-8 even when the byte after it would complete it. */
static void check_bytes(const char *in, size_t len, const char *want)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	t_assert(f, "open_memstream");
	cli_json_bytes(f, in, len);
	t_assert(fclose(f) == 0, "fclose");
	if (strcmp(buf, want))
		t_fail("%zu bytes gave %s, expected %s", len, buf, want);
	free(buf);
}

static void test_report_roundtrip(void)
{
	char path[] = "/tmp/t_fsck_json.XXXXXX";
	struct cli_json j;
	struct fsck_result res = { .problems = 1, .inodes_used = 11 };
	struct fsck_report r = {
		.code = "2.X", .pass = FSCK_PASS_2, .message = "m", .question = "Fix",
		.ino = 12, .dir = 2, .name = "n\xff", .name_len = 2,
	};
	char doc[4096];
	int fd = mkstemp(path);
	FILE *f;
	size_t n;

	t_assert(fd >= 0, "mkstemp");
	close(fd);
	t_ok(cli_json_open(&j, path, "img\"", "yes"));
	cli_json_problem(&j, &r, FSCK_ANSWER_YES);
	r.question = NULL;                      /* a note: no answer */
	cli_json_problem(&j, &r, FSCK_ANSWER_NO);
	t_ok(cli_json_close(&j, 1, &res, true, NULL));
	f = fopen(path, "r");
	t_assert(f, "fopen");
	n = fread(doc, 1, sizeof(doc) - 1, f);
	doc[n] = 0;
	fclose(f);
	unlink(path);
	t_assert(strstr(doc, "\"image\": \"img\\\"\""), "%s", doc);
	t_assert(strstr(doc, "\"pass\": \"2\""), "%s", doc);
	t_assert(strstr(doc, "\"question\": \"Fix\", \"answer\": \"yes\""), "%s", doc);
	t_assert(strstr(doc, "\"question\": null, \"answer\": null"), "%s", doc);
	t_assert(strstr(doc, "\"inode\": 12, \"dir\": 2"), "%s", doc);
	t_assert(strstr(doc, "\"name\": \"n\\udcff\"}"), "%s", doc);
	t_assert(strstr(doc, "},\n    {\"code\""), "%s", doc);
	t_assert(strstr(doc, "\"exit\": 1,"), "%s", doc);
	t_assert(strstr(doc, "\"inodes_used\": 11"), "%s", doc);
}

/* Quotes, backslashes and control bytes escaped; no string is null. */
static void test_escapes(void)
{
	check(NULL, "null");
	check("", "\"\"");
	check("plain name.txt", "\"plain name.txt\"");
	check("a\"b\\c/", "\"a\\\"b\\\\c/\"");
	check("\x01\n\x1f\x7f", "\"\\u0001\\u000a\\u001f\\u007f\"");
}

/* Valid UTF-8 of 2, 3 and 4 bytes passes through. */
static void test_utf8_valid(void)
{
	check("caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e\"");
	check("\xef\xbf\xbf\xf4\x8f\xbf\xbf", "\"\xef\xbf\xbf\xf4\x8f\xbf\xbf\"");
}

/* Not UTF-8: a lone byte, a sequence cut short at the end or by an ASCII
 * byte, overlong forms, a surrogate, past U+10FFFF. */
static void test_utf8_invalid(void)
{
	check("\xff", "\"\\udcff\"");
	check("a\x80z", "\"a\\udc80z\"");
	check("\xc3", "\"\\udcc3\"");
	check("\xe2\x82", "\"\\udce2\\udc82\"");
	check("\xc3(", "\"\\udcc3(\"");
	check("\xc0\xaf", "\"\\udcc0\\udcaf\"");
	check("\xc1\xbf", "\"\\udcc1\\udcbf\"");
	check("\xe0\x80\xaf", "\"\\udce0\\udc80\\udcaf\"");
	check("\xf0\x80\x80\xaf", "\"\\udcf0\\udc80\\udc80\\udcaf\"");
	check("\xed\xa0\x80", "\"\\udced\\udca0\\udc80\"");
	check("\xf4\x90\x80\x80", "\"\\udcf4\\udc90\\udc80\\udc80\"");
	check("\xf5\x80\x80\x80", "\"\\udcf5\\udc80\\udc80\\udc80\"");
	/* After a bad byte the next valid sequence is whole again. */
	check("\xc3\xc3\xa9", "\"\\udcc3\xc3\xa9\"");
}

static void test_bytes(void)
{
	check_bytes("a\0b", 3, "\"a\\u0000b\"");
	check_bytes("\xc3\xa9", 1, "\"\\udcc3\"");
	check_bytes("abcd\x0d\0\0\0", 4, "\"abcd\"");
	check_bytes("", 0, "\"\"");
}

T_MAIN(T_CASE(test_escapes),
       T_CASE(test_utf8_valid),
       T_CASE(test_utf8_invalid),
       T_CASE(test_bytes),
       T_CASE(test_report_roundtrip))
