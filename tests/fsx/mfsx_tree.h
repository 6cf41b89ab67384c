/*
 * mfsx_tree.h - tree mode's model: inodes with their link counts and the
 * directory entries that name them, shared by the operations
 * (mfsx_tree.c) and the full walk that compares the real tree
 * (mfsx_walk.c).  The process runs with the tree's top as its working
 * directory, so every path is relative to it.
 */
#ifndef MFSX_TREE_H
#define MFSX_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Deepest directory below the top; with names up to 255 bytes every path fits in PATH_MAX. */
#define TREE_MAX_DEPTH 8

struct tent;

/* One inode of the model. */
struct tnode {
	mode_t type;                 /* S_IFREG, S_IFDIR, S_IFLNK or S_IFIFO */
	unsigned nlink;              /* what st_nlink must say */
	ino_t ino;                   /* st_ino, recorded when it was created */
	unsigned char *data;         /* file contents or symlink target */
	size_t size;                 /* bytes of data */
	size_t cap;
	struct tnode *parent;        /* directories: the one holding it */
	char *name;                  /* directories: their name there */
	struct tent *ents;           /* directories: their entries */
	size_t nents;
	size_t cap_ents;
	size_t index;                /* place in tree_model.nodes */
};

struct tent {
	char *name;
	struct tnode *node;
};

struct tree_model {
	struct tnode **nodes;        /* every live inode, the top included */
	size_t nnodes;
	size_t cap;
	struct tnode *top;
	size_t nents;                /* entries in all directories */
};

extern struct tree_model tree;

/* The path of name in dir ("." for the top itself when name is NULL). */
void tree_path(const struct tnode *dir, const char *name, char *buf, size_t len);

/* Compares one entry's lstat (and with contents, its bytes) with the model. */
void tree_check_entry(const char *path, const struct tnode *n, bool contents);

/* Compares the whole real tree with the model; fails on the first difference. */
void tree_walk(const char *why);

/* The model as a listing on stderr, for a failure report. */
void tree_dump(void);

/*
 * path for a message: components over 32 bytes shortened to their first 8
 * and their length.  Returns one of a few static buffers in turn, so up to
 * four can appear in one printf.
 */
const char *tree_show(const char *path);

/* The name of an errno value, or "success" for 0. */
const char *tree_errname(int e);

#endif
