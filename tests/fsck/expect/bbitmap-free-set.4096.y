Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information
block bitmap of group 0 differs: -4069.  Fix? yes
group 0: 1597 free blocks recorded, 1598 counted.  Fix? yes
superblock: 1597 free blocks recorded, 1598 counted.  Fix? yes

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4080 files (2.6% non-contiguous), 2472/4070 blocks
