"""LSM structure helpers shared by reads and compaction."""
