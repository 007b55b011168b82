"""Privacy: the membership-inference audit over w (audit), nearest-neighbour kernels
(neighbours), the density attack (density) and the released table's metrics and epsilon
(release). ``privacy.dp`` holds the differentially private variant."""
