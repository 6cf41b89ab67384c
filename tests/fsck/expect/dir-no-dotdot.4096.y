Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
Pass 2: Checking directory structure
directory 17 has no '..' entry.  Fix? yes
Pass 3: Checking directory connectivity
'..' in directory 17 names inode 17, its parent is 15.  Fix? yes
Pass 4: Checking reference counts
inode 15: link count is 4, should be 3.  Fix? yes
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4080 files (2.6% non-contiguous), 2472/4070 blocks
