Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
inode 21: indirect block 1308 (mapping from logical block 12) has a bad checksum.  Clear? yes
inode 21: i_blocks is 8464, should be 272.  Fix? yes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information
block bitmap of group 0 differs: -(1308--2331).  Fix? yes
group 0: 1598 free blocks recorded, 2622 counted.  Fix? yes
superblock: 1598 free blocks recorded, 2622 counted.  Fix? yes

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4080 files (2.6% non-contiguous), 1448/4070 blocks
