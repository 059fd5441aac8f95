"""The aten table: importing these modules fills tensor.LOWERINGS (one entry per overload)."""
from . import elementwise, indexing, linalg, random, reductions, shapes, special  # noqa: F401
from . import bessel, polynomials  # noqa: F401
from . import prims  # noqa: F401  (after the aten twins it reuses)
from . import composites, data_dependent, factorizations, histograms, pooling  # noqa: F401
from . import losses, segments, selection  # noqa: F401
from . import antialias, complex, fft, gamma, grouped, matrix_functions  # noqa: F401
from . import edge_pads, factories, upsample  # noqa: F401  (upsample after composites: it reuses them)
from . import ctc, fractional_pool, grid_sampler3d, householder, ldl  # noqa: F401
from . import linear_cross_entropy  # noqa: F401
