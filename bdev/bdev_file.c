/*
 * bdev_file.c - opening an image file or block device for the file
 * backends: its size, and whether O_DIRECT works at our block size.
 */
#include "bdev_i.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_BLOCK_SIZE 65536u
/* bdev_alloc_buf() alignment: a device that wants more cannot go direct. */
#define MAX_DMA_ALIGN 4096u

static int device_size(int fd, uint32_t block_size, uint64_t *size)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, size))
			return -errno;
	} else if (S_ISREG(st.st_mode)) {
		*size = (uint64_t)st.st_size;
	} else {
		return -ENOTBLK;
	}
	*size -= *size % block_size;
	return 0;
}

/* Whether a direct read of one block at offset 0 is accepted. */
static bool probe_read(int fd, uint32_t block_size)
{
	void *buf = bdev_alloc_buf(block_size);
	ssize_t n;

	if (!buf)
		return false;
	do
		n = pread(fd, buf, block_size, 0);
	while (n < 0 && errno == EINTR);
	bdev_free_buf(buf);
	return n >= 0 || errno != EINVAL;
}

/*
 * Why @fd, opened with O_DIRECT, cannot be used that way at @block_size
 * (NULL if it can); on success *dma_align is the buffer alignment it needs.
 */
static const char *dio_refusal(int fd, uint32_t block_size, uint32_t *dma_align,
			       char *why, size_t whylen)
{
	uint32_t mem, off;

	*dma_align = BDEV_MIN_DMA_ALIGN;
	if (bdev_dio_align(fd, &mem, &off)) {
		if (!probe_read(fd, block_size))
			return "a direct test read was refused";
		return NULL;
	}
	if (!off)
		return "the file system offers no direct I/O for it";
	if (block_size % off || mem > MAX_DMA_ALIGN) {
		snprintf(why, whylen, "direct I/O needs %u-byte offsets and "
			 "%u-byte buffers", off, mem);
		return why;
	}
	*dma_align = UT_MAX(mem, BDEV_MIN_DMA_ALIGN);
	return NULL;
}

/* Open @path with O_DIRECT if that works; otherwise say why not. */
static int open_direct(const char *path, int flags, struct bdev *bd,
		       const char **why, char *buf, size_t len)
{
	int fd = open(path, flags | O_DIRECT);

	if (fd < 0) {
		if (errno != EINVAL)
			return -errno;
		*why = "the file system refuses O_DIRECT";
		return -EINVAL;
	}
	*why = dio_refusal(fd, bd->block_size, &bd->dma_align, buf, len);
	if (*why) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

bool bdev_valid_block_size(uint32_t bs)
{
	return UT_IS_POW2(bs) && bs >= 512 && bs <= MAX_BLOCK_SIZE;
}

int bdev_file_open(const char *path, const struct bdev_open_opts *opts,
		   struct bdev *bd)
{
	int flags = (opts->read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	const char *why = "O_DIRECT disabled by option";
	char buf[96];
	int fd = -EINVAL, err;

	memset(bd, 0, sizeof(*bd));
	bd->block_size = opts->block_size ? opts->block_size : 1024;
	bd->read_only = opts->read_only;
	bd->dma_align = BDEV_MIN_DMA_ALIGN;
	if (!bdev_valid_block_size(bd->block_size))
		return -EINVAL;
	if (!opts->no_direct)
		fd = open_direct(path, flags, bd, &why, buf, sizeof(buf));
	if (fd == -EINVAL) {
		bd->dma_align = BDEV_MIN_DMA_ALIGN;
		fd = open(path, flags);
		fd = fd < 0 ? -errno : fd;
	}
	if (fd < 0)
		return fd;
	bd->fd = fd;
	bd->read_fd = fd;
	bd->direct = !why;
	if (bd->direct && opts->host_reads) {
		bd->read_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (bd->read_fd < 0) {
			err = -errno;
			close(fd);
			return err;
		}
		bd->host_reads = true;
	}
	err = device_size(fd, bd->block_size, &bd->size);
	if (!err && !(bd->path = strdup(path)))
		err = -ENOMEM;
	if (err) {
		if (bd->host_reads)
			close(bd->read_fd);
		close(fd);
		return err;
	}
	if (bd->direct)
		mlog_info("%s: O_DIRECT at %u-byte blocks, %u-byte buffer alignment%s",
			  path, bd->block_size, bd->dma_align,
			  bd->host_reads ? "; reads of one block through the host's cache" : "");
	else
		mlog_info("%s: buffered I/O: %s", path, why);
	return 0;
}

void bdev_file_close(struct bdev *bd)
{
	if (bd->host_reads)
		close(bd->read_fd);
	if (bd->fd >= 0)
		close(bd->fd);
	free(bd->path);
	bd->fd = -1;
	bd->read_fd = -1;
	bd->host_reads = false;
	bd->path = NULL;
}
