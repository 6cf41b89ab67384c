Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
the root inode is not a directory (mode 033261).  Clear? yes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
the root directory is missing.  Make a new one? yes
/lost+found is missing.  Make it? yes
directory 11 (its '..' says 2) is not reachable from the root.  Connect to /lost+found? yes
directory 2037 (its '..' says 2) is not reachable from the root.  Connect to /lost+found? yes
directory 2046 (its '..' says 2) is not reachable from the root.  Connect to /lost+found? yes
directory 2167 (its '..' says 2) is not reachable from the root.  Connect to /lost+found? yes
'..' in directory 11 names inode 2, its parent is 21.  Fix? yes
'..' in directory 2037 names inode 2, its parent is 21.  Fix? yes
'..' in directory 2046 names inode 2, its parent is 21.  Fix? yes
'..' in directory 2167 names inode 2, its parent is 21.  Fix? yes
Pass 4: Checking reference counts
inode 2: link count is 65535, should be 3.  Fix? yes
inode 12 (a regular file, 293888 bytes) is unattached.  Connect to /lost+found? yes
inode 13 (a regular file, 279652 bytes) is unattached.  Connect to /lost+found? yes
inode 14 (a symbolic link, 13 bytes) is unattached.  Connect to /lost+found? yes
inode 15 (a symbolic link, 128 bytes) is unattached.  Connect to /lost+found? yes
inode 16 (a fifo, 0 bytes) is unattached.  Connect to /lost+found? yes
inode 17 (a character device, 0 bytes) is unattached.  Connect to /lost+found? yes
inode 18 (a block device, 0 bytes) is unattached.  Connect to /lost+found? yes
inode 19 (a regular file, 300 bytes) is unattached.  Connect to /lost+found? yes
inode 20 (a regular file, 400 bytes) is unattached.  Connect to /lost+found? yes
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 154/4072 files (2.5% non-contiguous), 2487/16280 blocks
