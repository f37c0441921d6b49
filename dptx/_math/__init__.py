"""numpy's chapter "Mathematical functions" and its neighbours: rounding and complex parts
(``numeric``), differences and integrals (``calculus``), convolution, polynomials,
interpolation, window functions, functional programming, bit packing."""
