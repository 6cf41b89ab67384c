Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
inode 21 maps logical block 12 to block 4077, outside the filesystem.  Clear? yes
inode 21: i_blocks is 8464, should be 8456.  Fix? yes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4080 files (2.6% non-contiguous), 2471/4070 blocks
