Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
/lost+found is missing.  Make it? yes
directory 11 (its '..' says 2) is not reachable from the root.  Connect to /lost+found? yes
'..' in directory 11 names inode 2, its parent is 21.  Fix? yes
Pass 4: Checking reference counts
inode 2: link count is 5, should be 6.  Fix? yes
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 154/4072 files (2.5% non-contiguous), 2487/16280 blocks
