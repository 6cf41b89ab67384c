Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
inode 14: inode 14: unknown file type in mode 0170644.  Clear? yes
Pass 2: Checking directory structure
entry 'small2.txt' in directory 12 names inode 14, which is not in use.  Clear? yes
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information
block bitmap of group 0 differs: -1289.  Fix? yes
group 0: 1598 free blocks recorded, 1599 counted.  Fix? yes
inode bitmap of group 0 differs: -14.  Fix? yes
group 0: 3927 free inodes recorded, 3928 counted.  Fix? yes
superblock: 1598 free blocks recorded, 1599 counted.  Fix? yes
superblock: 3927 free inodes recorded, 3928 counted.  Fix? yes

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 152/4080 files (2.6% non-contiguous), 2471/4070 blocks
