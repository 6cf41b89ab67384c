/*
 * problems.h - every problem fsck knows, in one table.
 *
 * FSCK_PROBLEM(code, pass, flags, question, message), included with a
 * definition of FSCK_PROBLEM wherever the table is needed (the codes in
 * fsck_i.h, the entries in problem.c).
 *
 * flags:   P_PREEN     -p fixes it unasked
 *          P_UNFIXABLE nothing can be done: a note that leaves an error
 *          P_INFO      a note that is no error (what was done)
 * question: what a yes does; NULL for notes.
 * message: names the objects with %-tokens filled from the problem's
 *          context: %i inode, %I second inode, %d directory, %b block,
 *          %B second block, %N number (%x: in hex), %M second number, %g group,
 *          %n entry name (escaped), %s text, %% a percent sign.
 *
 * The codes are stable: the report lists them as "<pass>.<CODE>" and the
 * tests match them.  Append; never renumber by meaning.
 */

/* ---- journal ---- */
FSCK_PROBLEM(J_RECOVER, JOURNAL, P_PREEN, "Replay it",
	"the journal needs recovery (%s)")
FSCK_PROBLEM(J_REPLAYED, JOURNAL, P_INFO, NULL,
	"journal replayed: %N transactions, %M blocks")
FSCK_PROBLEM(J_SB_BAD, JOURNAL, 0, "Make an empty journal",
	"the journal superblock is damaged: %s")
FSCK_PROBLEM(J_INODE_BAD, JOURNAL, 0, "Make a new journal",
	"the journal inode is damaged: %s")
FSCK_PROBLEM(J_ERRNO, JOURNAL, P_PREEN, "Clear it",
	"the journal recorded an abort (%s)")
FSCK_PROBLEM(J_RECOVER_FLAG, JOURNAL, P_PREEN, "Clear it",
	"the superblock says the journal needs recovery, but the log is empty")
FSCK_PROBLEM(J_NO_JOURNAL, JOURNAL, 0, "Set its journal flag",
	"the filesystem has no journal")

/* ---- pass 0: superblock, descriptors, regions ---- */
FSCK_PROBLEM(SB_PRIMARY, 0, 0, "Write the backup over it",
	"the primary superblock is damaged; the backup of group %g is used")
FSCK_PROBLEM(SB_TORN, 0, P_PREEN, "Rewrite it",
	"the primary superblock's checksum is stale but its fields are whole "
	"(a write torn by a power cut), and no backup is intact")
FSCK_PROBLEM(SB_BACKUP, 0, P_PREEN, "Rewrite it",
	"the backup superblock of group %g %s")
FSCK_PROBLEM(SB_STATE, 0, P_PREEN, "Clear them",
	"the superblock's state has unknown bits 0x%x")
FSCK_PROBLEM(SB_ERRORS_MODE, 0, P_PREEN, "Set it to continue",
	"the superblock's error behaviour %N is unknown")
FSCK_PROBLEM(SB_RESERVED, 0, P_PREEN, "Clear them",
	"the superblock's reserved bytes are not zero")
FSCK_PROBLEM(SB_MARKED, 0, P_INFO, NULL,
	"the filesystem was marked with errors")
FSCK_PROBLEM(SB_FUTURE, 0, P_PREEN, "Set it to now",
	"the superblock's %s time %N is in the future (now %M)")
FSCK_PROBLEM(GD_CSUM, 0, P_PREEN, "Fix",
	"the descriptor of group %g has a bad checksum")
FSCK_PROBLEM(GD_LOC, 0, P_PREEN, "Fix",
	"the descriptor of group %g puts its %s at block %b, the layout at %B")
FSCK_PROBLEM(GD_RESERVED, 0, P_PREEN, "Clear them",
	"the descriptor of group %g has flags or reserved bytes set")
FSCK_PROBLEM(RGN_TABLE, 0, 0, "Clear the table (the regions' contents stay in place)",
	"the region table (block %b) is damaged: %s")
FSCK_PROBLEM(RGN_TABLE_CSUM, 0, P_PREEN, "Fix",
	"the region table (block %b) passes its checks but its checksum does not match")
FSCK_PROBLEM(RGN_BAD, 0, 0, "Remove it from the table (its contents stay in place)",
	"region %n (blocks %b to %B) %s")

/* ---- the orphan list ---- */
FSCK_PROBLEM(ORPHAN_LIST, 0, P_PREEN, "Clear the list",
	"the orphan list is damaged at inode %i: %s")
FSCK_PROBLEM(ORPHAN_FREE, 0, P_PREEN, "Free it",
	"inode %i is an unlinked orphan")
FSCK_PROBLEM(ORPHAN_TRUNC, 0, P_PREEN, "Finish truncating it",
	"inode %i is an orphan truncated to %N bytes")

/* ---- pass 1: inodes ---- */
FSCK_PROBLEM(INODE_CSUM, 1, P_PREEN, "Fix",
	"inode %i passes its checks but its checksum does not match")
FSCK_PROBLEM(INODE_GARBAGE, 1, 0, "Clear",
	"inode %i is damaged: its checksum does not match and %s")
FSCK_PROBLEM(INODE_BAD, 1, 0, "Clear",
	"inode %i: %s")
FSCK_PROBLEM(INODE_RESERVED, 1, 0, "Clear",
	"reserved inode %i is in use (mode 0%N)")
FSCK_PROBLEM(ROOT_NOT_DIR, 1, 0, "Clear",
	"the root inode is not a directory (mode 0%N)")
FSCK_PROBLEM(JOURNAL_INODE, 1, 0, "Make a new journal",
	"the journal inode %i %s")
FSCK_PROBLEM(INODE_FLAGS, 1, P_PREEN, "Clear them",
	"inode %i has unknown flags 0x%x")
FSCK_PROBLEM(INODE_NSEC, 1, P_PREEN, "Clear it",
	"inode %i has a nanosecond field of %N")
FSCK_PROBLEM(INODE_NO_MAP, 1, P_PREEN, "Clear them",
	"inode %i (%s) has a size or a block map")
FSCK_PROBLEM(NEXT_ORPHAN, 1, P_PREEN, "Clear it",
	"inode %i is not on the orphan list but links to inode %N")
FSCK_PROBLEM(BLOCK_BAD, 1, 0, "Clear",
	"inode %i maps logical block %N to block %b, %s")
FSCK_PROBLEM(IND_CSUM, 1, 0, "Clear",
	"inode %i: indirect block %b (mapping from logical block %N) has a bad checksum")
FSCK_PROBLEM(I_BLOCKS, 1, P_PREEN, "Fix",
	"inode %i: i_blocks is %N, should be %M")
FSCK_PROBLEM(DIR_HOLE, 1, P_PREEN, "Fill it",
	"directory %i has a hole at block %N")
FSCK_PROBLEM(DIR_SIZE, 1, P_PREEN, "Fix",
	"directory %i: size %N, should be %M")
FSCK_PROBLEM(SLOW_LINK, 1, 0, "Clear",
	"symbolic link %i maps no block for its target")
FSCK_PROBLEM(XATTR_INODE, 1, 0, "Clear the in-inode attributes",
	"%s")
FSCK_PROBLEM(XATTR_BLOCK, 1, 0, "Clear",
	"inode %i: xattr block %b %s")
FSCK_PROBLEM(DUP_FOUND, 1, P_INFO, NULL,
	"%N blocks are claimed by more than one inode")

/* ---- pass 1b: blocks claimed twice ---- */
FSCK_PROBLEM(DUP_CLONE, 1B, 0, "Clone them",
	"inode %i shares %N blocks with other inodes")
FSCK_PROBLEM(DUP_META, 1B, 0, "Clear",
	"inode %i: %s block %b is also claimed elsewhere")

/* ---- pass 2: directories ---- */
FSCK_PROBLEM(DB_CSUM, 2, P_PREEN, "Fix",
	"directory %i block %N (%b) passes its checks but its checksum does not match")
FSCK_PROBLEM(DB_BAD, 2, 0, "Salvage",
	"directory %i block %N (%b) is damaged: %s")
FSCK_PROBLEM(NO_DOT, 2, 0, "Fix",
	"directory %i has no '.' entry")
FSCK_PROBLEM(NO_DOTDOT, 2, 0, "Fix",
	"directory %i has no '..' entry")
FSCK_PROBLEM(BAD_DOT, 2, P_PREEN, "Fix",
	"'.' in directory %i names inode %I")
FSCK_PROBLEM(DOT_PLACE, 2, 0, "Clear",
	"directory %d has an entry '%n' (inode %i) that is not its first")
FSCK_PROBLEM(ENTRY_RESERVED, 2, 0, "Clear",
	"entry '%n' in directory %d names reserved inode %i")
FSCK_PROBLEM(ENTRY_FREE, 2, P_PREEN, "Clear",
	"entry '%n' in directory %d names inode %i, which is not in use")
FSCK_PROBLEM(ENTRY_TYPE, 2, P_PREEN, "Fix",
	"entry '%n' in directory %d has file type %N, inode %i is of type %M")
FSCK_PROBLEM(DIR_LINK, 2, 0, "Clear",
	"entry '%n' in directory %d is a second link to directory %i (the first is in %I)")
FSCK_PROBLEM(DUP_NAME, 2, 0, "Clear",
	"directory %d has a second entry '%n' (inode %i)")

/* ---- pass 3: connectivity ---- */
FSCK_PROBLEM(NO_ROOT, 3, 0, "Make a new one",
	"the root directory is missing")
FSCK_PROBLEM(UNCONNECTED, 3, 0, "Connect to /lost+found",
	"directory %i (its '..' says %I) is not reachable from the root")
FSCK_PROBLEM(LOOP, 3, 0, "Connect to /lost+found",
	"directory %i is in a loop of directories")
FSCK_PROBLEM(DOTDOT, 3, P_PREEN, "Fix",
	"'..' in directory %i names inode %I, its parent is %N")
FSCK_PROBLEM(NO_LF, 3, P_PREEN, "Make it",
	"/lost+found is missing")
FSCK_PROBLEM(LF_NOT_DIR, 3, P_PREEN, "Unlink it",
	"/lost+found is inode %i, which is not a directory")
FSCK_PROBLEM(NO_ROOM, 3, P_UNFIXABLE, NULL,
	"cannot reconnect inode %i: %s")

/* ---- pass 4: reference counts ---- */
FSCK_PROBLEM(UNATTACHED_EMPTY, 4, P_PREEN, "Clear",
	"inode %i (%s) is unattached and empty")
FSCK_PROBLEM(UNATTACHED, 4, 0, "Connect to /lost+found",
	"inode %i (%s, %N bytes) is unattached")
FSCK_PROBLEM(LINKS, 4, P_PREEN, "Fix",
	"inode %i: link count is %N, should be %M")

/* ---- pass 5: bitmaps and counts ---- */
FSCK_PROBLEM(BBITMAP, 5, P_PREEN, "Fix",
	"block bitmap of group %g differs:%s")
FSCK_PROBLEM(IBITMAP, 5, P_PREEN, "Fix",
	"inode bitmap of group %g differs:%s")
FSCK_PROBLEM(BBITMAP_CSUM, 5, P_PREEN, "Fix",
	"block bitmap of group %g is right but its checksum does not match")
FSCK_PROBLEM(IBITMAP_CSUM, 5, P_PREEN, "Fix",
	"inode bitmap of group %g is right but its checksum does not match")
FSCK_PROBLEM(GD_FREE_BLOCKS, 5, P_PREEN, "Fix",
	"group %g: %N free blocks recorded, %M counted")
FSCK_PROBLEM(GD_FREE_INODES, 5, P_PREEN, "Fix",
	"group %g: %N free inodes recorded, %M counted")
FSCK_PROBLEM(GD_DIRS, 5, P_PREEN, "Fix",
	"group %g: %N directories recorded, %M counted")
FSCK_PROBLEM(SB_FREE_BLOCKS, 5, P_PREEN, "Fix",
	"superblock: %N free blocks recorded, %M counted")
FSCK_PROBLEM(SB_FREE_INODES, 5, P_PREEN, "Fix",
	"superblock: %N free inodes recorded, %M counted")

/* ---- multi-mount protection (before pass 0; repaired after pass 1b) ---- */
FSCK_PROBLEM(MMP_BAD, 0, P_PREEN, "Rewrite it released",
	"the MMP block %b is damaged (%s); the check goes on without claiming "
	"the filesystem")

/* ---- directory indexes (pass 2, as each indexed directory ends) ---- */
FSCK_PROBLEM(DX_BAD, 2, P_PREEN, "Rebuild it",
	"directory %i: its index %s")
FSCK_PROBLEM(DX_ONE_BLOCK, 2, P_PREEN, "Clear it",
	"directory %i has one block and the index flag, which only a directory "
	"of more blocks can have")
FSCK_PROBLEM(DX_DROPPED, 3, P_INFO, NULL,
	"directory %i: its index dropped, as an entry was added or removed")
FSCK_PROBLEM(DX_BUILT, 2, P_INFO, NULL,
	"directory %i: index built (-D)")
FSCK_PROBLEM(DX_TOO_BIG, 2, P_INFO, NULL,
	"directory %i: more entries than an index holds: index dropped")
