"""numpy's chapter "Statistics": order statistics and averages (``statistics``), variances
(``moments``), the NaN-ignoring reductions (``nanfunctions``), correlation (``covariance``),
histograms (``binning``, ``histogramdd``)."""
