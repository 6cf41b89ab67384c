Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
inode 12: indirect block 1558 (mapping from logical block 12) has a bad checksum.  Clear? yes
inode 12: i_blocks is 580, should be 68.  Fix? yes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information
block bitmap of group 0 differs: -(1558--1813).  Fix? yes
group 0: 6348 free blocks recorded, 6604 counted.  Fix? yes
superblock: 13794 free blocks recorded, 14050 counted.  Fix? yes

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4072 files (2.6% non-contiguous), 2230/16280 blocks
