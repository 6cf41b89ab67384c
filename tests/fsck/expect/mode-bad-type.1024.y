Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
inode 2039: inode 2039: unknown file type in mode 0170644.  Clear? yes
Pass 2: Checking directory structure
entry 'small2.txt' in directory 2037 names inode 2039, which is not in use.  Clear? yes
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information
block bitmap of group 1 differs: -(8708--8709).  Fix? yes
group 1: 7446 free blocks recorded, 7448 counted.  Fix? yes
inode bitmap of group 1 differs: -2039.  Fix? yes
group 1: 1903 free inodes recorded, 1904 counted.  Fix? yes
superblock: 13794 free blocks recorded, 13796 counted.  Fix? yes
superblock: 3919 free inodes recorded, 3920 counted.  Fix? yes

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 152/4072 files (2.6% non-contiguous), 2484/16280 blocks
