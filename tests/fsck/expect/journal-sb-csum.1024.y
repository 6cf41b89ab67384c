the journal superblock is damaged: journal superblock: checksum mismatch (stored 0x0af369e8, computed 0x0af369a8).  Make an empty journal? yes
Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
Pass 2: Checking directory structure
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4072 files (2.6% non-contiguous), 2486/16280 blocks
