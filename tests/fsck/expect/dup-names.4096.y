Pass 0: Checking the superblock, descriptors and regions
Pass 1: Checking inodes, blocks, and sizes
Pass 2: Checking directory structure
directory 30 has a second entry 'entry-000-with-a-longer-name' (inode 32).  Clear? yes
directory 30: its index holds 122 records for 121 entries.  Rebuild it? yes
Pass 3: Checking directory connectivity
Pass 4: Checking reference counts
inode 32 (a regular file, 10 bytes) is unattached.  Connect to /lost+found? yes
Pass 5: Checking group summary information

img: ***** FILE SYSTEM WAS MODIFIED *****
img: 153/4080 files (2.6% non-contiguous), 2472/4070 blocks
