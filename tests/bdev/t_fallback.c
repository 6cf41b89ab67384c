/*
 * t_fallback.c - when io_uring cannot be set up (here: a seccomp filter
 * refuses io_uring_setup with EPERM, as container runtimes do),
 * bdev_open falls back to pread/pwrite with one log line saying why, and
 * the device works.
 */
#include "t_bdev.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

static bool refuse_io_uring(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(code) / sizeof(code[0])), code };

	return !prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) &&
	       !prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

/* The filter stays for the rest of the process: one case only. */
static void test_pread_when_uring_refused(void)
{
	struct bdev_open_opts o = { .block_size = 4096 };
	unsigned char *src, *dst;
	struct bdev *bd;
	char *path;

	if (!refuse_io_uring())
		t_skip_case("cannot install a seccomp filter: %s", strerror(errno));
	path = t_image("img", 1 << 20);
	src = t_alloc(8192);
	dst = t_alloc(8192);
	t_log_capture();
	t_ok(bdev_open(path, &o, &bd));
	t_assert(!strcmp(bd->ops->name, "pread"), "backend %s, expected pread", bd->ops->name);
	t_assert(t_log_count("io_uring") == 1, "%u log lines about io_uring, expected 1",
		t_log_count("io_uring"));
	t_assert(t_log_count("io_uring_queue_init failed: Operation not permitted") == 1,
		"the fallback line does not say why");
	t_fill(src, 8192, 1);
	t_ok(bdev_write(bd, 4096, src, 8192));
	t_ok(bdev_read(bd, 4096, dst, 8192));
	t_assert(!memcmp(src, dst, 8192), "read back differs");
	t_ok(bdev_flush(bd));
	bdev_close(bd);
	/* Asking for io_uring alone fails instead. */
	t_eq(bdev_open_uring(path, &o, &bd), -EPERM);
	bdev_free_buf(src);
	bdev_free_buf(dst);
	free(path);
}

T_MAIN(T_CASE(test_pread_when_uring_refused))
