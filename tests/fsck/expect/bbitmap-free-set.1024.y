Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information
block bitmap of group 1 differs: -16279.  Fix? yes
group 1: 7445 free blocks recorded, 7446 counted.  Fix? yes
superblock: 13793 free blocks recorded, 13794 counted.  Fix? yes

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4072 files (2.6% non-contiguous), 2486/16280 blocks
