Pass 0: Checking the superblock, descriptors and regions
the orphan list is damaged at inode 2039: the list loops.  Clear the list? yes
Pass 1: Checking inodes, blocks, and sizes
inode 2039 is not on the orphan list but links to inode 2041.  Clear it? yes
inode 2041 is not on the orphan list but links to inode 2039.  Clear it? yes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4072 files (2.6% non-contiguous), 2486/16280 blocks
