Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
directory 2040 (its '..' says 2037) is not reachable from the root.  Connect to /lost+found? yes
'..' in directory 2040 names inode 2037, its parent is 11.  Fix? yes
Pass 4: Checking reference counts
inode 2037: link count is 1, should be 2.  Fix? yes
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4072 files (2.6% non-contiguous), 2486/16280 blocks
