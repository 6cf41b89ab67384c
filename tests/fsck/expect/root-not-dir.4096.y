Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
the root inode is not a directory (mode 033261).  Clear? yes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
the root directory is missing.  Make a new one? yes
/lost+found is missing.  Make it? yes
directory 11 (its '..' says 2) is not reachable from the root.  Connect to /lost+found? yes
directory 12 (its '..' says 2) is not reachable from the root.  Connect to /lost+found? yes
directory 30 (its '..' says 2) is not reachable from the root.  Connect to /lost+found? yes
directory 151 (its '..' says 2) is not reachable from the root.  Connect to /lost+found? yes
'..' in directory 11 names inode 2, its parent is 154.  Fix? yes
'..' in directory 12 names inode 2, its parent is 154.  Fix? yes
'..' in directory 30 names inode 2, its parent is 154.  Fix? yes
'..' in directory 151 names inode 2, its parent is 154.  Fix? yes
Pass 4: Checking reference counts
inode 2: link count is 65535, should be 3.  Fix? yes
inode 21 (a regular file, 4321280 bytes) is unattached.  Connect to /lost+found? yes
inode 22 (a regular file, 4264036 bytes) is unattached.  Connect to /lost+found? yes
inode 23 (a symbolic link, 13 bytes) is unattached.  Connect to /lost+found? yes
inode 24 (a symbolic link, 128 bytes) is unattached.  Connect to /lost+found? yes
inode 25 (a fifo, 0 bytes) is unattached.  Connect to /lost+found? yes
inode 26 (a character device, 0 bytes) is unattached.  Connect to /lost+found? yes
inode 27 (a block device, 0 bytes) is unattached.  Connect to /lost+found? yes
inode 28 (a regular file, 300 bytes) is unattached.  Connect to /lost+found? yes
inode 29 (a regular file, 400 bytes) is unattached.  Connect to /lost+found? yes
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 154/4080 files (2.5% non-contiguous), 2473/4070 blocks
