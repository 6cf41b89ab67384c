/*
 * t_bmap - the block-map walk costs what is on the disk, not what i_size
 * claims.  Inodes with checksums that match but sizes of 2^63 bytes, the
 * largest file with only a triple-indirect block, or indirect blocks that
 * all point at one another, are walked by the library and by miscfs-debug
 * (verify, ls) under a hard time limit: a walk that steps through holes
 * one block at a time, or follows the same blocks a billion times, fails
 * by timing out.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bdev_test.h"
#include "mfs.h"
#include "t.h"
#include "util.h"

#define BS 4096u
#define LIMIT_S 20           /* per tool run; a correct walk takes well under 1 s */

enum { HUGE_FILE = 12, HUGE_DIR = 13, SPARSE_DIR = 14, SPARSE_FILE = 15, BAD_PTR = 16,
       LOOP_DIR = 17 };

static struct bdev *bd;
static uint8_t *img;
static struct mfs_super *sb;

static uint8_t *block(uint64_t blk)
{
	return img + blk * BS;
}

static struct mfs_group_desc *gdesc(uint32_t g)
{
	return (struct mfs_group_desc *)block(1) + g;
}

/* Take the first free block of group 0 and mark it in use. */
static uint64_t alloc_block(void)
{
	struct mfs_group_desc *gd = gdesc(0);
	uint8_t *map = block(le32toh(gd->bg_block_bitmap));

	for (uint32_t i = 0; i < fmt_group_nblocks(sb, 0); i++) {
		if (map[i / 8] & (1u << (i % 8)))
			continue;
		map[i / 8] |= (uint8_t)(1u << (i % 8));
		gd->bg_block_bitmap_csum = htole32(fmt_bitmap_csum(sb, MFS_CSUM_BBITMAP, 0, map));
		gd->bg_checksum = htole32(fmt_gdesc_csum(sb, 0, gd));
		memset(block(i), 0, BS);
		return i;
	}
	t_fail("group 0 is full");
}

/* An indirect block of @ino with pointer @ptr in slot @slot (0: none). */
static uint64_t indirect(uint32_t ino, uint32_t slot, uint64_t ptr)
{
	uint64_t blk = alloc_block();

	((uint32_t *)block(blk))[slot] = htole32((uint32_t)ptr);
	fmt_block_set_csum(sb, MFS_CSUM_INDIRECT, ino, block(blk));
	return blk;
}

/* An indirect block of @ino whose every slot points at @ptr. */
static uint64_t indirect_all(uint32_t ino, uint64_t ptr)
{
	uint64_t blk = alloc_block();

	for (uint32_t i = 0; i < fmt_addr_per_block(BS); i++)
		((uint32_t *)block(blk))[i] = htole32((uint32_t)ptr);
	fmt_block_set_csum(sb, MFS_CSUM_INDIRECT, ino, block(blk));
	return blk;
}

/* A directory block of @ino holding "." and "..". */
static uint64_t dir_block(uint32_t ino)
{
	uint64_t blk = alloc_block();
	uint8_t *b = block(blk);
	struct mfs_dirent *dot = (void *)b, *dotdot = (void *)(b + 12);
	struct mfs_dir_tail *t = (void *)(b + BS - MFS_DIR_TAIL_SIZE);

	dot->inode = htole32(ino);
	dot->rec_len = htole16(12);
	dot->name_len = 1;
	dot->file_type = MFS_FT_DIR;
	memcpy(dot->name, ".", 1);
	dotdot->inode = htole32(MFS_ROOT_INO);
	dotdot->rec_len = htole16(BS - 12 - MFS_DIR_TAIL_SIZE);
	dotdot->name_len = 2;
	dotdot->file_type = MFS_FT_DIR;
	memcpy(dotdot->name, "..", 2);
	t->det_rec_len = htole16(MFS_DIR_TAIL_SIZE);
	t->det_type = MFS_FT_DIR_TAIL;
	fmt_block_set_csum(sb, MFS_CSUM_DIR, ino, b);
	return blk;
}

/* Write inode @ino with a matching checksum and mark it in use. */
static void put_inode(uint32_t ino, struct mfs_inode *in)
{
	struct mfs_group_desc *gd = gdesc(0);
	uint8_t *map = block(le32toh(gd->bg_inode_bitmap));
	uint32_t off;
	uint64_t blk = fmt_inode_block(sb, le32toh(gd->bg_inode_table), ino, &off);

	in->i_links_count = htole16(1);
	in->i_checksum = htole32(fmt_inode_csum(sb, ino, in));
	memcpy(block(blk) + off, in, sizeof(*in));
	map[(ino - 1) / 8] |= (uint8_t)(1u << ((ino - 1) % 8));
	gd->bg_inode_bitmap_csum = htole32(fmt_bitmap_csum(sb, MFS_CSUM_IBITMAP, 0, map));
	gd->bg_checksum = htole32(fmt_gdesc_csum(sb, 0, gd));
}

static struct mfs_inode new_inode(uint16_t mode, uint64_t size)
{
	struct mfs_inode in;

	memset(&in, 0, sizeof(in));
	in.i_mode = htole16(mode);
	in.i_size = htole64(size);
	return in;
}

static uint64_t max_blocks(void)
{
	return fmt_max_file_blocks(BS);
}

static uint64_t last_data;   /* the data block at the end of SPARSE_FILE */
static uint64_t bad_ind;     /* BAD_PTR's indirect block */
static char bad_why[128];    /* what is said about it */

static void craft(void)
{
	struct mfs_inode in;
	uint32_t last = fmt_addr_per_block(BS) - 1;

	t_assert(le32toh(sb->s_inodes_per_group) > LOOP_DIR, "inodes in group 0");
	in = new_inode(S_IFREG | 0644, 1ull << 63);
	in.i_block[MFS_TIND_BLOCK] = htole32((uint32_t)indirect(HUGE_FILE, 0, 0));
	put_inode(HUGE_FILE, &in);

	in = new_inode(S_IFDIR | 0755, 1ull << 63);
	in.i_block[0] = htole32((uint32_t)dir_block(HUGE_DIR));
	put_inode(HUGE_DIR, &in);

	/* The largest directory there can be, all holes after its first block. */
	in = new_inode(S_IFDIR | 0755, fmt_max_file_size(BS));
	in.i_block[0] = htole32((uint32_t)dir_block(SPARSE_DIR));
	in.i_block[MFS_DIND_BLOCK] = htole32((uint32_t)indirect(SPARSE_DIR, 0, 0));
	in.i_block[MFS_TIND_BLOCK] = htole32((uint32_t)indirect(SPARSE_DIR, 0, 0));
	put_inode(SPARSE_DIR, &in);

	/* The largest file, one block mapped at its very end. */
	last_data = alloc_block();
	in = new_inode(S_IFREG | 0644, fmt_max_file_size(BS));
	in.i_block[MFS_TIND_BLOCK] = htole32((uint32_t)indirect(SPARSE_FILE, last,
		indirect(SPARSE_FILE, last, indirect(SPARSE_FILE, last, last_data))));
	put_inode(SPARSE_FILE, &in);

	/* Slot 7 of the single-indirect block maps logical block 19. */
	in = new_inode(S_IFREG | 0644, 100 * BS);
	bad_ind = indirect(BAD_PTR, 7, 0xfffffff0u);
	in.i_block[MFS_IND_BLOCK] = htole32((uint32_t)bad_ind);
	put_inode(BAD_PTR, &in);
	snprintf(bad_why, sizeof(bad_why), "inode 16: indirect block %" PRIu64
		 " maps block 19 to 4294967280, outside the filesystem", bad_ind);

	/* Four blocks on disk that map one directory block a billion times. */
	in = new_inode(S_IFDIR | 0755, fmt_max_file_size(BS));
	in.i_block[0] = htole32((uint32_t)dir_block(LOOP_DIR));
	in.i_block[MFS_TIND_BLOCK] = htole32((uint32_t)indirect_all(LOOP_DIR,
		indirect_all(LOOP_DIR, indirect_all(LOOP_DIR, le32toh(in.i_block[0])))));
	put_inode(LOOP_DIR, &in);
}

/* ---- the library walk ---------------------------------------------------- */

struct seen {
	unsigned long data, indirect;
	uint64_t lblk, pblk;
};

static int on_data(void *arg, uint64_t lblk, uint64_t pblk)
{
	struct seen *s = arg;

	s->data++;
	s->lblk = lblk;
	s->pblk = pblk;
	return 0;
}

static int on_indirect(void *arg, uint64_t blk, int depth)
{
	(void)blk;
	(void)depth;
	((struct seen *)arg)->indirect++;
	return 0;
}

static int walk(struct fmt_raw *raw, uint32_t ino, uint64_t first, uint64_t end,
		struct seen *s)
{
	struct mfs_inode in;
	struct fmt_bmap_walk w;

	t_ok(fmt_raw_inode(raw, ino, &in));
	fmt_raw_bmap_walk_init(raw, ino, &in, &w);
	w.data = on_data;
	w.indirect = on_indirect;
	w.ctx = s;
	memset(s, 0, sizeof(*s));
	return fmt_bmap_walk(&w, first, end);
}

static void expect_why(struct fmt_raw *raw, const char *text)
{
	t_assert(strstr(raw->why, text), "message '%s' lacks '%s'", raw->why, text);
	printf("ok: refused: %s\n", raw->why);
}

static void check_library(void)
{
	struct fmt_raw raw;
	struct mfs_inode in;
	struct seen s;
	uint64_t pblk;

	t_ok(fmt_raw_open(bd, &raw));
	t_eq(walk(&raw, HUGE_FILE, 0, UINT64_MAX, &s), -EUCLEAN);
	expect_why(&raw, "inode 12: i_size 9223372036854775808 is beyond the largest file");
	t_eq(walk(&raw, HUGE_DIR, 0, 1, &s), -EUCLEAN);
	expect_why(&raw, "inode 13: i_size");

	t_ok(walk(&raw, SPARSE_DIR, 0, UINT64_MAX, &s));
	t_eq(s.data, 1);
	t_eq(s.indirect, 2);
	t_ok(walk(&raw, SPARSE_FILE, 0, UINT64_MAX, &s));
	t_eq(s.data, 1);
	t_eq(s.indirect, 3);
	t_eq(s.lblk, max_blocks() - 1);
	t_eq(s.pblk, last_data);
	t_ok(walk(&raw, SPARSE_FILE, max_blocks() - 1, max_blocks(), &s));
	t_eq(s.data, 1);
	t_ok(walk(&raw, SPARSE_FILE, 0, max_blocks() - 1, &s));
	t_eq(s.data, 0);

	t_ok(fmt_raw_inode(&raw, SPARSE_FILE, &in));
	t_ok(fmt_raw_bmap(&raw, SPARSE_FILE, &in, max_blocks() - 1, &pblk));
	t_eq(pblk, last_data);
	t_ok(fmt_raw_bmap(&raw, SPARSE_FILE, &in, 5000, &pblk));
	t_eq(pblk, 0);
	t_eq(fmt_raw_bmap(&raw, SPARSE_FILE, &in, max_blocks(), &pblk), -EUCLEAN);

	t_eq(walk(&raw, BAD_PTR, 0, UINT64_MAX, &s), -EUCLEAN);
	expect_why(&raw, bad_why);
	t_ok(walk(&raw, BAD_PTR, 0, 19, &s));   /* the bad slot is not asked for */

	t_eq(walk(&raw, LOOP_DIR, 0, UINT64_MAX, &s), -EUCLEAN);
	expect_why(&raw, "inode 17: the block map meets more than the 2048 blocks");
	t_ok(walk(&raw, LOOP_DIR, max_blocks() - 1, max_blocks(), &s));
	t_eq(s.data, 1);
	fmt_raw_close(&raw);
	printf("ok: library walks\n");
}

/* ---- miscfs-debug, with a hard time limit ------------------------------- */

static char dir[64], image[96], out[96], err[96];

static void child(char *const argv[])
{
	int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
		_exit(126);
	execv(argv[0], argv);
	_exit(127);
}

/* Run miscfs-debug IMAGE @cmd @arg; fail if it runs past LIMIT_S. */
static int run_debug(const char *cmd, const char *arg)
{
	char *argv[] = { getenv("DEBUGFS"), image, (char *)cmd, (char *)arg, NULL };
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	uint64_t start = ut_now_ns();
	int status;
	pid_t pid = fork();

	t_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		child(argv);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (ut_now_ns() - start > LIMIT_S * 1000000000ull) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			t_fail("miscfs-debug %s %s did not finish in %d s", cmd,
			       arg ? arg : "", LIMIT_S);
		}
		nanosleep(&tick, NULL);
	}
	t_assert(WIFEXITED(status), "miscfs-debug %s died of signal %d", cmd, WTERMSIG(status));
	printf("ok: miscfs-debug %s %s: exit %d in %.2f s\n", cmd, arg ? arg : "",
	       WEXITSTATUS(status), (ut_now_ns() - start) / 1e9);
	return WEXITSTATUS(status);
}

static void expect_file(const char *path, const char *text)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "r");
	size_t n;

	t_assert(f, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	t_assert(strstr(buf, text), "'%s' not in:\n%s", text, buf);
}

static void write_image(void)
{
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/t_bmap.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	t_assert(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(image, sizeof(image), "%s/img", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	f = fopen(image, "w");
	t_assert(f && fwrite(img, 1, bd->size, f) == bd->size && !fclose(f),
		 "writing %s", image);
}

static void test_tool(void)
{
	if (!getenv("DEBUGFS"))
		t_skip_case("DEBUGFS does not name miscfs-debug");
	write_image();
	t_eq(run_debug("verify", NULL), 1);
	expect_file(out, "problems: 4");
	expect_file(err, "inode 17: the block map meets more than the 2048 blocks");
	expect_file(err, "inode 12: i_size 9223372036854775808 is beyond the largest file");
	expect_file(err, "inode 13: i_size 9223372036854775808 is beyond the largest file");
	expect_file(err, bad_why);
	t_eq(run_debug("ls", "13"), 1);
	expect_file(err, "inode 13: i_size 9223372036854775808 is beyond the largest file");
	t_eq(run_debug("ls", "14"), 0);
	expect_file(out, "2 dir ..");
	t_eq(run_debug("ls", "17"), 1);
	expect_file(err, "inode 17: the block map meets more than the 2048 blocks");
	/* The fields are shown, and the impossible size is damage. */
	t_eq(run_debug("inode", "12"), 1);
	expect_file(out, "size: 9223372036854775808");
	expect_file(err, "inode 12: i_size 9223372036854775808 is beyond the largest file");
	unlink(image);
	unlink(out);
	unlink(err);
	rmdir(dir);
}

static void too_slow(int sig)
{
	static const char msg[] = "FAIL: a library walk did not finish in time\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

/* The library walks must not step through holes. */
static void test_library(void)
{
	signal(SIGALRM, too_slow);
	alarm(LIMIT_S);
	check_library();
	alarm(0);
}

/* The crafted image both cases walk; it stays open until the exit. */
static void setup(void)
{
	struct fmt_mkfs_opts o = { .block_size = BS, .zeroed = true };

	mlog_set_level(MLOG_ERR);
	t_ok(bdev_mem_create(8u << 20, BS, &bd));
	t_ok(fmt_mkfs(bd, &o));
	img = bdev_mem_data(bd);
	sb = (struct mfs_super *)(img + MFS_SB_OFFSET);
	craft();
}

T_MAIN_SETUP(setup(),
	     T_CASE(test_library),
	     T_CASE(test_tool))
