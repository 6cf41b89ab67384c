Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
'..' in directory 2042 names inode 2046, its parent is 2040.  Fix? yes
Pass 4: Checking reference counts
inode 2040: link count is 4, should be 3.  Fix? yes
inode 2046: link count is 1, should be 2.  Fix? yes
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4072 files (2.6% non-contiguous), 2486/16280 blocks
