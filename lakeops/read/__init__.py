"""The read path: scan planning with pruning, then merge-on-read per bucket."""
