Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
inode 20: xattr block 1844 xattr block 1844: checksum mismatch.  Clear? yes
inode 20: i_blocks is 4, should be 2.  Fix? yes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information
block bitmap of group 0 differs: -1844.  Fix? yes
group 0: 6348 free blocks recorded, 6349 counted.  Fix? yes
superblock: 13794 free blocks recorded, 13795 counted.  Fix? yes

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4072 files (2.6% non-contiguous), 2485/16280 blocks
