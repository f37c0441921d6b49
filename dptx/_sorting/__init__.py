"""numpy's chapters "Sorting, searching, and counting" and "Set routines"."""
