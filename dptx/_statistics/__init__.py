"""numpy's chapter "Statistics": order statistics, averages and variances, the NaN-ignoring
reductions, correlation, histograms."""
