"""numpy's chapter "Indexing routines": advanced indexing, take and put, index tricks, the
flat iterator."""
