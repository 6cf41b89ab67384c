Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
inode 14 maps logical block 0 to block 4170, outside the filesystem.  Clear? yes
inode 14: i_blocks is 8, should be 0.  Fix? yes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4080 files (2.6% non-contiguous), 2471/4070 blocks
