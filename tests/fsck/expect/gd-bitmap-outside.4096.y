Pass 0: Checking the superblock, descriptors and regions
the descriptor of group 0 puts its block bitmap at block 4294967293, the layout at 2.  Fix? yes
Pass 1: Checking inodes, blocks, and sizes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4080 files (2.6% non-contiguous), 2472/4070 blocks
