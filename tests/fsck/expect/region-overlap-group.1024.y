Pass 0: Checking the superblock, descriptors and regions
region blob (blocks 16216 to 16279) has a range outside the region area.  Remove it from the table (its contents stay in place)? yes
Pass 1: Checking inodes, blocks, and sizes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4072 files (2.6% non-contiguous), 2486/16280 blocks
