fsck.miscfs: warning: primary superblock: inode count 4072 is not groups x inodes per group; looking for a backup superblock
fsck.miscfs: warning: using the backup superblock of group 1
the primary superblock is damaged; the backup of group 1 is used.  Write the backup over it? yes
Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4072 files (2.6% non-contiguous), 2486/16280 blocks
