Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
1 blocks are claimed by more than one inode
Pass 1b: Copying blocks claimed by more than one inode
inode 16 shares 1 blocks with other inodes.  Clone them? yes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4080 files (3.2% non-contiguous), 2472/4070 blocks
