Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
Pass 2: Checking directory structure
directory 30 block 0 (2363) is damaged: directory 30: name_len 32 at offset 1104 does not fit rec_len 36.  Salvage? yes
directory 30: its index holds 122 records for 121 entries.  Rebuild it? yes
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
inode 61 (a regular file, 20 bytes) is unattached.  Connect to /lost+found? yes
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4080 files (2.6% non-contiguous), 2472/4070 blocks
