Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
/lost+found is inode 14, which is not a directory.  Unlink it? yes
/lost+found is missing.  Make it? yes
directory 15 (its '..' says 12) is not reachable from the root.  Connect to /lost+found? yes
'..' in directory 15 names inode 12, its parent is 11.  Fix? yes
Pass 4: Checking reference counts
inode 12: link count is 1, should be 2.  Fix? yes
inode 14 (a regular file, 2000 bytes) is unattached.  Connect to /lost+found? yes
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4080 files (2.6% non-contiguous), 2472/4070 blocks
