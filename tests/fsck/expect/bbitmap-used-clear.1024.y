Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information
block bitmap of group 1 differs: +8708.  Fix? yes
group 1: 7451 free blocks recorded, 7450 counted.  Fix? yes
superblock: 13799 free blocks recorded, 13798 counted.  Fix? yes

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4072 files (2.6% non-contiguous), 2482/16280 blocks
