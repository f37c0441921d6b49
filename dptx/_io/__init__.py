"""numpy's chapter "Input and output": files (``npyio``) and text (``formatting``)."""
