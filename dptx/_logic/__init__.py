"""numpy's chapter "Logic functions": the array type queries (``iscomplex``, ``isfortran``...)."""
