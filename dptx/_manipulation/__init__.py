"""numpy's chapter "Array manipulation routines": views (splitting, broadcasting, axes),
joining, rearranging, adding and removing elements, padding."""
