/*
 * mfs_format.h - the miscfs on-disk format, as C structures.
 *
 * docs/FORMAT.md is the specification; this header must agree with it
 * byte for byte (tests/fs/t_format_offsets reads fields at the documented
 * offsets).  Every multi-byte field is little-endian: read it with
 * le16toh()/le32toh()/le64toh(), write it with htole*().
 *
 * This header is included through mfs.h, the filesystem's public header.
 */
#ifndef MISCFS_MFS_FORMAT_H
#define MISCFS_MFS_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* ---- constants ----------------------------------------------------------- */

#define MFS_MAGIC               0x3153464Du   /* bytes "MFS1" */
#define MFS_REV_LEVEL           1u

#define MFS_SB_OFFSET           1024u   /* primary superblock, in bytes */
#define MFS_SB_SIZE             1024u
#define MFS_MIN_BLOCK_LOG       10      /* 1024 */
#define MFS_MAX_BLOCK_LOG       12      /* 4096 */
#define MFS_INODE_SIZE          256u
#define MFS_DESC_SIZE           64u
#define MFS_NAME_LEN            255u
#define MFS_LINK_MAX            65000u
#define MFS_LABEL_LEN           32u
#define MFS_REGION_NAME_LEN     32u
#define MFS_REGION_ALIGN        4096u   /* regions are mmap()ed: page aligned */

/* Reserved inode numbers. */
#define MFS_ROOT_INO            2u
#define MFS_JOURNAL_INO         8u
#define MFS_FIRST_INO           11u     /* first ordinary inode: lost+found */

/* Block map. */
#define MFS_NDIR_BLOCKS         12
#define MFS_IND_BLOCK           12
#define MFS_DIND_BLOCK          13
#define MFS_TIND_BLOCK          14
#define MFS_N_BLOCKS            15

/* Superblock s_state bits. */
#define MFS_STATE_VALID         0x0001u  /* cleanly unmounted */
#define MFS_STATE_ERRORS        0x0002u  /* errors were detected */

/* s_errors: behaviour when an error is detected. */
#define MFS_ERRORS_CONTINUE     1u
#define MFS_ERRORS_RO           2u

/* Feature sets: an unknown incompat bit forbids mounting, an unknown
 * ro_compat bit forbids mounting read-write, compat bits are advisory. */
#define MFS_FEATURE_COMPAT_HAS_JOURNAL   0x0001u
#define MFS_FEATURE_COMPAT_EXT_ATTR      0x0002u
#define MFS_FEATURE_COMPAT_REGIONS       0x0004u
#define MFS_FEATURE_COMPAT_SUPP          0x0007u

#define MFS_FEATURE_INCOMPAT_FILETYPE    0x0001u
#define MFS_FEATURE_INCOMPAT_RECOVER     0x0002u  /* journal needs replay */
#define MFS_FEATURE_INCOMPAT_MMP         0x0004u  /* multi-mount protection */
#define MFS_FEATURE_INCOMPAT_SUPP        0x0007u

#define MFS_FEATURE_RO_COMPAT_SPARSE_SUPER  0x0001u
#define MFS_FEATURE_RO_COMPAT_LARGE_FILE    0x0002u
#define MFS_FEATURE_RO_COMPAT_METADATA_CSUM 0x0004u
#define MFS_FEATURE_RO_COMPAT_DIR_INDEX     0x0008u  /* hashed directory index */
#define MFS_FEATURE_RO_COMPAT_SUPP          0x000Fu

/* Default data mode kept in s_default_mount_opts. */
#define MFS_DEFM_DATA_ORDERED   0x0000u
#define MFS_DEFM_DATA_JOURNAL   0x0001u
#define MFS_DEFM_DATA_WRITEBACK 0x0002u
#define MFS_DEFM_DATA_MASK      0x0003u

/* Inode flags: the values of Linux's FS_*_FL, so FS_IOC_GETFLAGS /
 * FS_IOC_SETFLAGS pass them through unchanged. */
#define MFS_SYNC_FL             0x00000008u
#define MFS_IMMUTABLE_FL        0x00000010u
#define MFS_APPEND_FL           0x00000020u
#define MFS_NODUMP_FL           0x00000040u
#define MFS_NOATIME_FL          0x00000080u
#define MFS_INDEX_FL            0x00001000u  /* directory: hashed index */
#define MFS_JOURNAL_DATA_FL     0x00004000u
#define MFS_DIRSYNC_FL          0x00010000u
#define MFS_USER_FL_MASK        0x000140F8u  /* what chattr may change */
#define MFS_USER_FL_VISIBLE     (MFS_USER_FL_MASK | MFS_INDEX_FL)  /* lsattr */

/* Directory entry file types. */
#define MFS_FT_UNKNOWN          0
#define MFS_FT_REG_FILE         1
#define MFS_FT_DIR              2
#define MFS_FT_CHRDEV           3
#define MFS_FT_BLKDEV           4
#define MFS_FT_FIFO             5
#define MFS_FT_SOCK             6
#define MFS_FT_SYMLINK          7
#define MFS_FT_MAX              8
#define MFS_FT_DIR_TAIL         0xDE   /* the checksum tail's marker */

#define MFS_DIRENT_HEADER       8u     /* inode, rec_len, name_len, type */
#define MFS_DIR_TAIL_SIZE       12u
/* The smallest rec_len that holds a name of @len bytes. */
#define MFS_DIRENT_LEN(len)     ((MFS_DIRENT_HEADER + (len) + 3u) & ~3u)

/* Extended attribute name indexes (prefixes). */
#define MFS_XATTR_INDEX_USER            1
#define MFS_XATTR_INDEX_ACL_ACCESS      2
#define MFS_XATTR_INDEX_ACL_DEFAULT     3
#define MFS_XATTR_INDEX_TRUSTED         4
#define MFS_XATTR_INDEX_SECURITY        6
#define MFS_XATTR_BLOCK_MAGIC           0x4D584154u  /* "TAXM" */
#define MFS_INODE_XATTR_SIZE            84u

#define MFS_REGION_MAGIC        0x4E47524Du   /* bytes "MRGN" */
#define MFS_REGION_HDR_SIZE     64u
#define MFS_REGION_ENTRY_SIZE   64u

/*
 * Checksum salts.  Every metadata checksum is the low 32 bits of
 * XXH3_64bits_withSeed(bytes, len, s_csum_seed + salt), where the salt
 * names the structure's kind (top byte) and identity (low bits), so a
 * block copied to the wrong place, or another filesystem's block, fails.
 * The superblock alone uses seed 0, because it carries s_csum_seed.
 */
#define MFS_SALT(kind, id)      (((uint64_t)(kind) << 56) | (uint64_t)(id))
#define MFS_CSUM_GDESC          1u   /* id: group number */
#define MFS_CSUM_BBITMAP        2u   /* id: group number */
#define MFS_CSUM_IBITMAP        3u   /* id: group number */
#define MFS_CSUM_INODE          4u   /* id: inode number */
#define MFS_CSUM_DIR            5u   /* id: directory inode number */
#define MFS_CSUM_INDIRECT       6u   /* id: owning inode number */
#define MFS_CSUM_XATTR          7u   /* id: block number */
#define MFS_CSUM_REGION         8u   /* id: 0 */
#define MFS_CSUM_MMP            9u   /* id: block number */
/* Not a checksum: the seed of the names' hash of a directory index is
 * s_csum_seed + MFS_SALT(MFS_HASH_DIR, 0). */
#define MFS_HASH_DIR            10u

/* ---- superblock (1024 bytes at byte 1024; backups in sparse groups) ------ */

struct mfs_super {
	uint32_t s_magic;               /*   0 */
	uint32_t s_rev_level;           /*   4 */
	uint32_t s_feature_compat;      /*   8 */
	uint32_t s_feature_incompat;    /*  12 */
	uint32_t s_feature_ro_compat;   /*  16 */
	uint32_t s_log_block_size;      /*  20: block size = 1024 << this */
	uint64_t s_blocks_count;        /*  24: blocks in block groups */
	uint64_t s_free_blocks_count;   /*  32 */
	uint64_t s_r_blocks_count;      /*  40: reserved for root */
	uint32_t s_inodes_count;        /*  48 */
	uint32_t s_free_inodes_count;   /*  52 */
	uint32_t s_first_data_block;    /*  56: 1 for 1 KiB blocks, else 0 */
	uint32_t s_blocks_per_group;    /*  60 */
	uint32_t s_inodes_per_group;    /*  64 */
	uint32_t s_groups_count;        /*  68 */
	uint16_t s_inode_size;          /*  72 */
	uint16_t s_desc_size;           /*  74 */
	uint16_t s_state;               /*  76 */
	uint16_t s_errors;              /*  78 */
	uint16_t s_block_group_nr;      /*  80: group holding this copy */
	uint16_t s_mnt_count;           /*  82 */
	int16_t  s_max_mnt_count;       /*  84: -1: no forced check */
	uint16_t s_gdt_blocks;          /*  86: blocks of descriptors */
	uint32_t s_first_ino;           /*  88 */
	uint32_t s_journal_inum;        /*  92 */
	uint32_t s_journal_blocks;      /*  96 */
	uint32_t s_last_orphan;         /* 100: head of the orphan list */
	uint32_t s_default_mount_opts;  /* 104 */
	uint32_t s_region_count;        /* 108 */
	uint64_t s_region_table;        /* 112: block of the region table */
	uint64_t s_regions_start;       /* 120: first block after the groups */
	uint64_t s_device_blocks;       /* 128: groups plus region area */
	int64_t  s_mkfs_time;           /* 136 */
	int64_t  s_mtime;               /* 144: last mount */
	int64_t  s_wtime;               /* 152: last write */
	int64_t  s_lastcheck;           /* 160 */
	int64_t  s_checkinterval;       /* 168: seconds, 0: none */
	uint64_t s_csum_seed;           /* 176 */
	uint8_t  s_uuid[16];            /* 184 */
	char     s_volume_name[MFS_LABEL_LEN];  /* 200 */
	char     s_last_mounted[64];    /* 232 */
	uint64_t s_mmp_block;           /* 296: the MMP block (INCOMPAT_MMP) */
	uint16_t s_mmp_interval;        /* 304: seconds between its stamps */
	uint8_t  s_reserved[714];       /* 306: zero */
	uint32_t s_checksum;            /* 1020: seed 0 over bytes 0..1019 */
};

/* ---- group descriptor (64 bytes each, in the blocks after a superblock) -- */

struct mfs_group_desc {
	uint32_t bg_block_bitmap;       /*  0 */
	uint32_t bg_inode_bitmap;       /*  4 */
	uint32_t bg_inode_table;        /*  8 */
	uint32_t bg_free_blocks_count;  /* 12 */
	uint32_t bg_free_inodes_count;  /* 16 */
	uint32_t bg_used_dirs_count;    /* 20 */
	uint32_t bg_flags;              /* 24: zero */
	uint32_t bg_block_bitmap_csum;  /* 28 */
	uint32_t bg_inode_bitmap_csum;  /* 32 */
	uint8_t  bg_reserved[24];       /* 36 */
	uint32_t bg_checksum;           /* 60 */
};

/* ---- inode (256 bytes) --------------------------------------------------- */

struct mfs_inode {
	uint16_t i_mode;                /*   0 */
	uint16_t i_links_count;         /*   2 */
	uint32_t i_uid;                 /*   4 */
	uint32_t i_gid;                 /*   8 */
	uint32_t i_flags;               /*  12 */
	uint64_t i_size;                /*  16 */
	uint64_t i_blocks;              /*  24: 512-byte sectors in use */
	int64_t  i_atime;               /*  32 */
	int64_t  i_mtime;               /*  40 */
	int64_t  i_ctime;               /*  48 */
	int64_t  i_crtime;              /*  56 */
	uint32_t i_atime_nsec;          /*  64 */
	uint32_t i_mtime_nsec;          /*  68 */
	uint32_t i_ctime_nsec;          /*  72 */
	uint32_t i_crtime_nsec;         /*  76 */
	uint32_t i_generation;          /*  80 */
	uint32_t i_xattr_block;         /*  84 */
	uint32_t i_next_orphan;         /*  88 */
	uint32_t i_block[MFS_N_BLOCKS]; /*  92: or a fast symlink's target */
	int64_t  i_dtime;               /* 152 */
	uint64_t i_rdev;                /* 160: device number, makedev() form */
	uint8_t  i_xattr[MFS_INODE_XATTR_SIZE]; /* 168: in-inode xattrs */
	uint32_t i_checksum;            /* 252 */
};

/* ---- directory entry and checksum tail ----------------------------------- */

struct mfs_dirent {
	uint32_t inode;                 /* 0: 0 = unused record */
	uint16_t rec_len;               /* 4 */
	uint8_t  name_len;              /* 6 */
	uint8_t  file_type;             /* 7 */
	char     name[];                /* 8 */
};

struct mfs_dir_tail {
	uint32_t det_zero;              /* 0: inode 0 */
	uint16_t det_rec_len;           /* 4: 12 */
	uint8_t  det_name_len;          /* 6: 0 */
	uint8_t  det_type;              /* 7: MFS_FT_DIR_TAIL */
	uint32_t det_checksum;          /* 8 */
};

/*
 * ---- directory index (RO_COMPAT_DIR_INDEX, directories with MFS_INDEX_FL)
 *
 * Blocks of the directory itself that a linear walk sees as empty blocks:
 * one unused record from byte 0 to the checksum tail, and the index in the
 * bytes that record spans.  Entries never move; the index says where each
 * one is (a record per name, by hash) and how much room each block has.
 */
#define MFS_DX_MAGIC            0x58444D4Du   /* bytes "MMDX" */
#define MFS_DX_ROOT_LBLK        1u            /* the root's place */
#define MFS_DX_ROOT             1u            /* dx_kind */
#define MFS_DX_NODE             2u
#define MFS_DX_FMAP             3u
#define MFS_DX_MAX_LEVEL        2u            /* the root's level at most */
#define MFS_DX_FMAP_MAX         64u           /* room map blocks */
#define MFS_DX_HEAD_OFF         8u            /* after the unused record */

struct mfs_dx_head {
	uint32_t dx_magic;              /* 0 */
	uint8_t  dx_kind;               /* 4 */
	uint8_t  dx_level;              /* 5: 0: records name entries */
	uint16_t dx_count;              /* 6: records, or room map bytes */
	uint32_t dx_lblk;               /* 8: this block's place */
	uint32_t dx_zero;               /* 12 */
};

/* Sorted by (hash, lblk).  In a level-0 block, the entry whose name has
 * that hash is in data block lblk; above, node lblk holds the hashes
 * from this one up to the next record's. */
struct mfs_dx_rec {
	uint32_t dr_hash_lo;            /* 0 */
	uint32_t dr_hash_hi;            /* 4 */
	uint32_t dr_lblk;               /* 8 */
};

/* After the root's head, before its records. */
struct mfs_dx_root_info {
	uint32_t dr_fmap_count;         /* 0: room map blocks */
	uint32_t dr_zero;               /* 4 */
	uint32_t dr_fmap[MFS_DX_FMAP_MAX];  /* 8: their places */
};

/* ---- extended attributes ------------------------------------------------- */

struct mfs_xattr_entry {
	uint8_t  e_name_index;          /* 0: 0 ends the list */
	uint8_t  e_name_len;            /* 1 */
	uint16_t e_value_size;          /* 2 */
	char     e_name[];              /* 4: name, then value, padded to 4 */
};

struct mfs_xattr_header {
	uint32_t h_magic;               /* 0 */
	uint32_t h_refcount;            /* 4: 1 */
	uint32_t h_used;                /* 8: bytes of entries after header */
	uint32_t h_reserved;            /* 12 */
	/* entries from byte 16; checksum in the block's last 4 bytes */
};

/* ---- reserved-region table (one block) ----------------------------------- */

struct mfs_region_header {
	uint32_t rh_magic;              /*  0 */
	uint32_t rh_count;              /*  4 */
	uint32_t rh_entry_size;         /*  8: 64 */
	uint8_t  rh_reserved[52];       /* 12 */
};

struct mfs_region_entry {
	char     re_name[MFS_REGION_NAME_LEN]; /*  0: NUL-padded */
	uint64_t re_start;              /* 32: first block */
	uint64_t re_blocks;             /* 40 */
	uint64_t re_bytes;              /* 48: size as requested */
	uint32_t re_flags;              /* 56: zero */
	uint32_t re_reserved;           /* 60 */
};

/* ---- multi-mount protection block (one block) ---------------------------- */

/*
 * The node that has the filesystem open stamps a new sequence number here
 * every s_mmp_interval seconds; a second node that sees it change refuses
 * to open the filesystem.  The checksum is in the block's last 4 bytes;
 * the rest of the block after the fields is zero.
 */
#define MFS_MMP_MAGIC           0x504D4D4Du   /* bytes "MMMP" */
#define MFS_MMP_SEQ_CLEAN       0xFF4D4D50u   /* no one has it open */
#define MFS_MMP_SEQ_MAX         0xE24D4D4Fu   /* stamps are 1 .. this */
#define MFS_MMP_INTERVAL_MAX    300u
#define MFS_MMP_INTERVAL_DEFAULT 5u

struct mfs_mmp {
	uint32_t mmp_magic;             /*   0 */
	uint32_t mmp_seq;               /*   4: stamp, or MFS_MMP_SEQ_CLEAN */
	int64_t  mmp_time;              /*   8: of the last stamp, seconds */
	char     mmp_nodename[64];      /*  16: uname's node name, NUL-padded */
	char     mmp_program[32];       /*  80: "miscfs", "fsck.miscfs" */
	uint32_t mmp_pid;               /* 112 */
	uint16_t mmp_interval;          /* 116: the stamper's interval, seconds */
	uint16_t mmp_reserved;          /* 118: zero */
};

_Static_assert(sizeof(struct mfs_mmp) == 120, "MMP block fields");
_Static_assert(sizeof(struct mfs_super) == MFS_SB_SIZE, "superblock size");
_Static_assert(offsetof(struct mfs_super, s_checksum) == 1020, "sb checksum");
_Static_assert(sizeof(struct mfs_group_desc) == MFS_DESC_SIZE, "gdesc size");
_Static_assert(sizeof(struct mfs_inode) == MFS_INODE_SIZE, "inode size");
_Static_assert(offsetof(struct mfs_inode, i_xattr) == 168, "inode xattr");
_Static_assert(sizeof(struct mfs_dirent) == MFS_DIRENT_HEADER, "dirent size");
_Static_assert(sizeof(struct mfs_dir_tail) == MFS_DIR_TAIL_SIZE, "tail size");
_Static_assert(sizeof(struct mfs_dx_head) == 16, "dx head size");
_Static_assert(sizeof(struct mfs_dx_rec) == 12, "dx record size");
_Static_assert(sizeof(struct mfs_dx_root_info) == 264, "dx root size");
_Static_assert(sizeof(struct mfs_xattr_header) == 16, "xattr header");
_Static_assert(sizeof(struct mfs_region_header) == MFS_REGION_HDR_SIZE, "rgn hdr");
_Static_assert(sizeof(struct mfs_region_entry) == MFS_REGION_ENTRY_SIZE, "rgn ent");

#endif /* MISCFS_MFS_FORMAT_H */
