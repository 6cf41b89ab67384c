Pass 0: Checking the superblock, descriptors and regions
the orphan list is damaged at inode 14: the list loops.  Clear the list? yes
Pass 1: Checking inodes, blocks, and sizes
inode 14 is not on the orphan list but links to inode 16.  Clear it? yes
inode 16 is not on the orphan list but links to inode 14.  Clear it? yes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4080 files (2.6% non-contiguous), 2472/4070 blocks
