"""numpy's chapter "Mathematical functions" and its neighbours: rounding (``rounding``),
complex parts, ``nan_to_num``, ``sinc`` and ``unwrap`` (``misc``), differences and integrals
(``calculus``), convolution, polynomials, interpolation, window functions, functional
programming, bit packing."""
